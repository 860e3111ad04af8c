"""Transaction metadata of the SQL Server connector (``provide.transaction.metadata``), captured
through the CDC emulator into bronze. The oracle is the workload itself (which transaction
changed which table how often) and the events' own ``source.commit_lsn``: Debezium's
transaction id for SQL Server is the commit LSN."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from psycopg.conninfo import conninfo_to_dict

from pipelines.capture import run_capture
from pipelines.config import parse_pipeline
from tests.support.bronze_rows import read_topic
from tests.support.sqlserver_emulator import SqlServerEmulator
from tests.support.sqlserver_emulator.capture import emulated
from tests.support.sqlserver_emulator.pipeline import SOURCE, sqlserver_pipeline_text


@pytest.fixture
def emulator(pg_db: str) -> Iterator[SqlServerEmulator]:
    emu = SqlServerEmulator.install(pg_db)
    emu.execute("CREATE TABLE dbo.a (id int PRIMARY KEY, v varchar(20))")
    emu.execute("CREATE TABLE dbo.b (id int PRIMARY KEY, v varchar(20))")
    emu.execute("INSERT INTO dbo.a VALUES (1, 'snap')")
    emu.enable_db()
    emu.enable_table("dbo", "a")
    emu.enable_table("dbo", "b")
    emu.agent().sync()
    yield emu


def _capture(root: str, emu: SqlServerEmulator) -> None:
    config = parse_pipeline(sqlserver_pipeline_text(root, emu.dsn, **{"provide.transaction.metadata": "true"}),
                            env={})
    with emulated():
        run_capture(config, until_idle=True)


def _values(root: str, topic: str) -> list[dict[str, Any]]:
    return [orjson.loads(r["value"]) for r in read_topic(root, topic) if r["value"] is not None]


def test_begin_end_and_blocks_per_transaction(emulator: SqlServerEmulator, tmp_path: Path) -> None:
    root = str(tmp_path / "lake")
    database = str(conninfo_to_dict(emulator.dsn)["dbname"])
    _capture(root, emulator)  # the snapshot: no transaction metadata
    emulator.execute("BEGIN; INSERT INTO dbo.a VALUES (2, 'x'); INSERT INTO dbo.b VALUES (1, 'y'); "
                     "UPDATE dbo.a SET v = 'z' WHERE id = 1; COMMIT")
    emulator.execute("UPDATE dbo.b SET id = 5 WHERE id = 1")  # d + tombstone + c: the tombstone is not counted
    emulator.agent().sync()
    _capture(root, emulator)
    _capture(root, emulator)  # nothing new: nothing more, metadata included

    a = _values(root, f"{SOURCE}.{database}.dbo.a")
    b = _values(root, f"{SOURCE}.{database}.dbo.b")
    assert [e["op"] for e in a] == ["r", "c", "u"] and [e["op"] for e in b] == ["c", "d", "c"]
    assert a[0]["transaction"] is None
    events = sorted(a[1:] + b, key=lambda e: (e["source"]["commit_lsn"], e["source"]["change_lsn"],
                                              e["source"]["event_serial_no"]))
    commits = list(dict.fromkeys(e["source"]["commit_lsn"] for e in events))
    assert len(commits) == 2
    for commit in commits:
        mine = [e for e in events if e["source"]["commit_lsn"] == commit]
        assert [e["transaction"]["id"] for e in mine] == [commit] * len(mine)
        assert [e["transaction"]["total_order"] for e in mine] == list(range(1, len(mine) + 1))
        seen: Counter[str] = Counter()
        for e in mine:
            seen[e["source"]["table"]] += 1
            assert e["transaction"]["data_collection_order"] == seen[e["source"]["table"]]

    meta = read_topic(root, f"{SOURCE}.transaction")
    assert [orjson.loads(r["key"]) for r in meta] == [{"id": c} for c in commits for _ in ("BEGIN", "END")]
    values = [orjson.loads(r["value"]) for r in meta]
    assert [(v["status"], v["id"]) for v in values] == [(s, c) for c in commits for s in ("BEGIN", "END")]
    assert values[0]["event_count"] is None and values[0]["data_collections"] is None
    assert values[0]["ts_ms"] == values[1]["ts_ms"] == events[0]["source"]["ts_ms"]
    assert values[1]["event_count"] == 3
    assert {d["data_collection"]: d["event_count"] for d in values[1]["data_collections"]} == {
        f"{database}.dbo.a": 2, f"{database}.dbo.b": 1}
    assert values[3]["event_count"] == 2
    assert values[3]["data_collections"] == [{"data_collection": f"{database}.dbo.b", "event_count": 2}]
