"""Several databases in one SQL Server source, through the real coordinator and bronze writer on
the CDC emulator (one emulated database per PostgreSQL database, each with its own ``cdc`` schema,
capture agent and change tables): each database is snapshotted and streamed on its own offset,
the source-wide topics get every database's records, and a database added to ``database.names``
is snapshotted alone. Oracles: the source tables read with psycopg and the workload itself."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import orjson
import pytest

from pipelines.capture import run_capture
from pipelines.config import parse_pipeline
from pipelines.local_postgres import LocalPostgres
from tests.support.bronze_rows import read_offsets, read_topic
from tests.support.sqlserver_emulator import SqlServerEmulator
from tests.support.sqlserver_emulator.capture import emulated
from tests.support.sqlserver_emulator.databases import dbname, more_databases
from tests.support.sqlserver_emulator.pipeline import SOURCE, sqlserver_pipeline_text


def _setup(emu: SqlServerEmulator, tag: str, rows: int) -> None:
    emu.execute("CREATE TABLE dbo.customers (id int PRIMARY KEY, name varchar(40) NOT NULL)")
    emu.execute(f"INSERT INTO dbo.customers SELECT g, '{tag}' || g FROM generate_series(1, {rows}) AS g")
    emu.enable_db()
    emu.enable_table("dbo", "customers")
    emu.agent().sync()


@pytest.fixture
def three(pg_db: str, pg_server: LocalPostgres) -> Iterator[list[SqlServerEmulator]]:
    """Databases x, y, z with a ``dbo.customers`` each (5, 7 and 3 rows), nothing captured yet:
    every database's snapshot is at the same (NULL) maximum LSN."""
    first = dbname(pg_db)
    with more_databases(pg_server, (f"{first[:40]}_y", f"{first[:40]}_z")) as (y, z):
        x = SqlServerEmulator.install(pg_db)
        for emu, tag, rows in ((x, "x", 5), (y, "y", 7), (z, "z", 3)):
            _setup(emu, tag, rows)
        yield [x, y, z]


def _capture(root: str, emus: list[SqlServerEmulator]) -> Any:
    text = sqlserver_pipeline_text(root, emus[0].dsn, **{"database.names": ",".join(dbname(e.dsn) for e in emus),
                                                         "provide.transaction.metadata": "true"})
    with emulated():
        return run_capture(parse_pipeline(text, env={}), until_idle=True)[SOURCE]


def _events(root: str, emu: SqlServerEmulator) -> list[tuple[str, str]]:
    rows = read_topic(root, f"{SOURCE}.{dbname(emu.dsn)}.dbo.customers")
    out = []
    for r in rows:
        if r["value"] is None:
            continue
        value = orjson.loads(r["value"])
        assert value["source"]["db"] == dbname(emu.dsn)
        out.append((value["op"], (value["after"] or value["before"])["name"]))
    return out


def test_each_database_on_its_own_offset_and_an_added_one_snapshotted_alone(
        three: list[SqlServerEmulator], tmp_path: Any) -> None:
    x, y, z = three
    root = str(tmp_path / "lake")
    _capture(root, [y, x])  # both snapshots at one LSN: their records do not order the schema topic
    assert _events(root, x) == [("r", f"x{i}") for i in range(1, 6)]
    assert _events(root, y) == [("r", f"y{i}") for i in range(1, 8)]
    schema = [orjson.loads(r["key"])["databaseName"] for r in read_topic(root, SOURCE)]
    assert schema == [dbname(y.dsn), dbname(x.dsn)]  # one CREATE per table, both kept

    x.execute("INSERT INTO dbo.customers VALUES (6, 'x6')")
    y.execute("UPDATE dbo.customers SET name = 'y1b' WHERE id = 1")
    x.execute("DELETE FROM dbo.customers WHERE id = 2")
    x.agent().sync()
    y.agent().sync()
    _capture(root, [y, x])
    assert _events(root, x)[5:] == [("c", "x6"), ("d", "x2")]
    assert _events(root, y)[7:] == [("u", "y1b")]
    ends = [v for v in (orjson.loads(r["value"]) for r in read_topic(root, f"{SOURCE}.transaction"))
            if v["status"] == "END"]
    assert sorted(c["data_collection"].split(".")[0] for e in ends for c in e["data_collections"]) == sorted(
        [dbname(x.dsn), dbname(x.dsn), dbname(y.dsn)])

    y.execute("INSERT INTO dbo.customers VALUES (8, 'y8')")
    y.agent().sync()
    _capture(root, [y, x, z])  # z added: snapshotted; x and y go on streaming
    assert _events(root, z) == [("r", f"z{i}") for i in range(1, 4)]
    assert _events(root, x)[5:] == [("c", "x6"), ("d", "x2")]
    assert _events(root, y)[7:] == [("u", "y1b"), ("c", "y8")]
    stored = orjson.loads(read_offsets(root, SOURCE)[-1]["offset"])
    assert [p["partition"]["database"] for p in stored["partitions"]] == [dbname(e.dsn) for e in (y, x, z)]
    assert all(not p["offset"].get("snapshot") for p in stored["partitions"])
