"""SQL Server with several databases in ``database.names``, through the CDC emulator: one source
captures two databases holding a table of the same name (each emulated database with its own
``cdc`` schema, capture agent and LSNs), written to while ``cdc-lakehouse capture`` runs as a
child process that is SIGKILLed and restarted.

Oracles independent of the connector: each database's table and change rows read with psycopg;
the expected events follow SQL Server's operation codes (2 -> c, 1 -> d, 3+4 -> u)."""

from __future__ import annotations

import multiprocessing
import os
import signal
import subprocess
import sys
import threading
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import psycopg
import pytest

from pipelines.capture import run_capture
from pipelines.config import parse_pipeline
from pipelines.engine import EngineSpec
from pipelines.local_postgres import LocalPostgres
from pipelines.silver_runner import run_silver
from tests.support.bronze_rows import duplicates, event_diff, read_offsets, read_topic, seq_problems, snapshot_completed
from tests.support.capture_process import TracePlan, wait_until
from tests.support.engines import SAIL_ONLY
from tests.support.sqlserver_emulator import SqlServerEmulator
from tests.support.sqlserver_emulator.capture import emulated, traced_emulated_capture
from tests.support.sqlserver_emulator.databases import dbname as _dbname
from tests.support.sqlserver_emulator.databases import more_databases
from tests.support.sqlserver_emulator.pipeline import SOURCE, sqlserver_pipeline_text
from tests.support.sqlserver_emulator.processes import capture_log_tail, customer_rows, start_capture

pytestmark = [pytest.mark.integration]

COLUMNS = ("id", "name", "score")


@pytest.fixture
def databases(pg_db: str, pg_server: LocalPostgres) -> Iterator[tuple[SqlServerEmulator, SqlServerEmulator, str]]:
    """Two CDC-enabled emulated databases with a ``dbo.customers`` each, and a third where the
    emulator is installed but CDC was never enabled (its name is yielded)."""
    first = _dbname(pg_db)
    with more_databases(pg_server, (f"{first[:40]}_b", f"{first[:40]}_c")) as (b, plain):
        emus = [SqlServerEmulator.install(pg_db), b]
        for emu in emus:
            emu.execute("CREATE TABLE dbo.customers (id int PRIMARY KEY, name varchar(40) NOT NULL, score int)")
            emu.enable_db()
            emu.enable_table("dbo", "customers")
        yield emus[0], emus[1], _dbname(plain.dsn)


def _write(dsn: str, start: int, transactions: int, tag: str) -> None:
    """Inserts ids ``start..``, and in the same transactions updates and deletes earlier ones."""
    with psycopg.connect(dsn) as conn:
        for n in range(transactions):
            row_id = start + n
            conn.execute("INSERT INTO dbo.customers VALUES (%s, %s, %s)", (row_id, f"{tag}{row_id}", n))
            if n % 3 == 1:
                conn.execute("UPDATE dbo.customers SET score = score + 100, name = %s WHERE id = %s",
                             (f"{tag}u{row_id}", row_id - 1))
            if n % 5 == 4:
                conn.execute("DELETE FROM dbo.customers WHERE id = %s", (row_id - 3,))
            conn.commit()


def _expected_stream(dsn: str, after_lsn: str) -> list[tuple[str, int]]:
    after = bytes.fromhex(after_lsn.replace(":", ""))
    with psycopg.connect(dsn) as conn:
        rows = conn.execute('SELECT "__$operation", id FROM cdc."dbo_customers_CT" WHERE "__$start_lsn" > %s '
                            'ORDER BY "__$start_lsn", "__$seqval", "__$operation"', (after,)).fetchall()
    names = {1: "d", 2: "c", 4: "u"}
    return [(names[op], row_id) for op, row_id in rows if op != 3]


@SAIL_ONLY
def test_two_databases_sigkill_and_restart_silver_equals_each_database(
        databases: tuple[SqlServerEmulator, SqlServerEmulator, str], tmp_path: Path, spark: Any) -> None:
    a, b, _ = databases
    names = (_dbname(a.dsn), _dbname(b.dsn))
    topics = tuple(f"{SOURCE}.{db}.dbo.customers" for db in names)
    root = str(tmp_path / "lake")
    text = sqlserver_pipeline_text(root, a.dsn, capture={"commit_interval_ms": 100},
                                   silver=[{"table": "customers_a", "source": topics[0]},
                                           {"table": "customers_b", "source": topics[1]}],
                                   **{"database.names": ",".join(names), "provide.transaction.metadata": "true"})
    config_path = tmp_path / "pipeline.yaml"
    config_path.write_text(text)
    logs = tmp_path / "logs"
    logs.mkdir()
    for emu, tag in ((a, "a"), (b, "b")):  # snapshot material: the same ids in both, other values
        _write(emu.dsn, 1, 20, tag)
    agents = [a.agent(), b.agent()]
    for agent in agents:
        agent.sync()
    snapshot_sizes = [len(customer_rows(a.dsn, COLUMNS)), len(customer_rows(b.dsn, COLUMNS))]

    with agents[0].running(interval=0.05), agents[1].running(interval=0.05):
        capture = start_capture(config_path, logs, 1, until_idle=False)
        writers = [threading.Thread(target=_write, args=(emu.dsn, 100, 60, tag)) for emu, tag in ((a, "a"), (b, "b"))]
        try:
            assert wait_until(lambda: snapshot_completed(root, SOURCE), 120), capture_log_tail(logs, 1)
            for w in writers:
                w.start()
            streamed = wait_until(lambda: all(any(r["op"] in ("c", "u", "d") for r in read_topic(root, t))
                                              for t in topics), 120)
            assert streamed, capture_log_tail(logs, 1)
            os.kill(capture.pid, signal.SIGKILL)
            assert capture.wait(30) == -9, capture_log_tail(logs, 1)
        finally:
            if capture.poll() is None:
                capture.kill()
            for w in writers:
                if w.is_alive():
                    w.join()
    for agent in agents:
        agent.sync()
    done = start_capture(config_path, logs, 2, until_idle=True)
    assert done.wait(300) == 0, capture_log_tail(logs, 2)

    for emu, db, topic, size in zip((a, b), names, topics, snapshot_sizes, strict=True):
        rows = read_topic(root, topic)
        assert seq_problems(rows) == []
        values = [orjson.loads(r["value"]) for r in rows if r["value"] is not None]
        assert {v["source"]["db"] for v in values} == {db}
        snapshot = [r for r in rows if r["op"] == "r"]
        assert len(snapshot) == size
        assert duplicates("snapshot ids", [orjson.loads(r["key"])["id"] for r in snapshot]) == []
        snapshot_lsn = orjson.loads(snapshot[0]["value"])["source"]["commit_lsn"]
        actual = [(r["op"], orjson.loads(r["key"])["id"]) for r in rows if r["op"] in ("c", "u", "d")]
        assert event_diff(actual, _expected_stream(emu.dsn, snapshot_lsn)) == []
        assert len(actual) > 60

    stored = orjson.loads(read_offsets(root, SOURCE)[-1]["offset"])
    partitions = [entry["partition"] for entry in stored["partitions"]]
    assert partitions == [{"server": SOURCE, "database": db} for db in names]
    for entry, emu in zip(stored["partitions"], (a, b), strict=True):
        with psycopg.connect(emu.dsn) as conn:
            high = conn.execute("SELECT max(start_lsn) FROM cdc.lsn_time_mapping").fetchone()[0]  # type: ignore[index]
        assert entry["offset"]["commit_lsn"] == ":".join((high.hex()[:8], high.hex()[8:16], high.hex()[16:]))

    transactions = read_topic(root, f"{SOURCE}.transaction")
    ends = [orjson.loads(r["value"]) for r in transactions if orjson.loads(r["value"])["status"] == "END"]
    assert {c["data_collection"] for e in ends for c in e["data_collections"]} == {
        f"{db}.dbo.customers" for db in names}

    config = parse_pipeline(text, env={})
    result = run_silver(root=root, engine=EngineSpec(), tables=config.silver, options=config.silver_options,
                        sources={SOURCE: SOURCE}, once=True, spark=spark)
    assert result.ok, [t.error for t in result.errors]
    for table, emu in (("customers_a", a), ("customers_b", b)):
        silver = [tuple(r) for r in spark.read.format("delta").load(f"{root}/silver/{table}")
                  .select(*COLUMNS).orderBy("id").collect()]
        assert silver == customer_rows(emu.dsn, COLUMNS)


def test_a_listed_database_without_cdc_is_a_clear_error(
        databases: tuple[SqlServerEmulator, SqlServerEmulator, str], tmp_path: Path) -> None:
    a, _, plain = databases
    root = str(tmp_path / "lake")
    names = f"{_dbname(a.dsn)},{plain}"
    config_path = tmp_path / "pipeline.yaml"
    config_path.write_text(sqlserver_pipeline_text(root, a.dsn, **{"database.names": names}))
    done = subprocess.run([sys.executable, "-m", "tests.support.sqlserver_emulator.capture", "capture", "-c",
                           str(config_path), "--until-idle"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 1, done.stderr
    assert f"database {plain} (in database.names) is not enabled for change data capture" in done.stderr
    assert "Traceback" not in done.stderr
    assert read_topic(root, f"{SOURCE}.{_dbname(a.dsn)}.dbo.customers") == []


def _lsn_text(raw: bytes) -> str:
    h = raw.hex()
    return ":".join((h[:8], h[8:16], h[16:]))


def _expected_transactions(dsn: str, db: str, after_lsn: str) -> Counter[tuple[str, str, tuple[str, ...]]]:
    """Per streamed transaction of the database (commit LSN above ``after_lsn``): its BEGIN and
    END record identities ``(status, id, data collections)``, read from the change tables."""
    after = bytes.fromhex(after_lsn.replace(":", ""))
    out: Counter[tuple[str, str, tuple[str, ...]]] = Counter()
    with psycopg.connect(dsn) as conn:
        rows = conn.execute('SELECT DISTINCT "__$start_lsn" FROM cdc."dbo_customers_CT" WHERE "__$start_lsn" > %s',
                            (after,)).fetchall()
    for (lsn,) in rows:
        out[("BEGIN", _lsn_text(lsn), ())] += 1
        out[("END", _lsn_text(lsn), (f"{db}.dbo.customers",))] += 1
    return out


def _transaction_identity(row: dict[str, Any]) -> tuple[str, str, tuple[str, ...]]:
    value = orjson.loads(row["value"])
    return value["status"], value["id"], tuple(sorted(c["data_collection"] for c in value["data_collections"] or ()))


@SAIL_ONLY
def test_shared_topic_records_are_in_bronze_once_after_a_crash_between_data_and_offset_commits(
        databases: tuple[SqlServerEmulator, SqlServerEmulator, str], tmp_path: Path, spark: Any) -> None:
    """Schema changes, transaction metadata and heartbeats of both databases go to the same topics.
    A capture SIGKILLed after every data commit of its batch and before that batch's offset
    commit replays the batch on restart: bronze keeps each record of those topics once, and
    every table's events once."""
    a, b, _ = databases
    names = (_dbname(a.dsn), _dbname(b.dsn))
    topics = tuple(f"{SOURCE}.{db}.dbo.customers" for db in names)
    root = str(tmp_path / "lake")
    text = sqlserver_pipeline_text(root, a.dsn, capture={"commit_interval_ms": 600000},
                                   silver=[{"table": "customers_a", "source": topics[0]},
                                           {"table": "customers_b", "source": topics[1]}],
                                   **{"database.names": ",".join(names), "provide.transaction.metadata": "true",
                                      "heartbeat.interval.ms": "1"})
    agents = [a.agent(), b.agent()]
    for emu, tag in ((a, "a"), (b, "b")):
        _write(emu.dsn, 1, 5, tag)
    for agent in agents:
        agent.sync()
    with emulated():
        run_capture(parse_pipeline(text, env={}), until_idle=True)  # the snapshot, then idle
    committed = read_offsets(root, SOURCE)
    snapshot_lsns = [orjson.loads(read_topic(root, t)[0]["value"])["source"]["commit_lsn"] for t in topics]

    for emu, tag in ((a, "a"), (b, "b")):  # transactions, and a schema change (a second capture instance)
        _write(emu.dsn, 100, 6, tag)
        emu.execute("ALTER TABLE dbo.customers ADD COLUMN email varchar(60)")
        emu.enable_table("dbo", "customers", "dbo_customers_v2")
        _write(emu.dsn, 200, 4, tag)
    for agent in agents:
        agent.sync()

    plan = TracePlan(str(tmp_path / "trace"), ack="cdc_sources.sqlserver.databases:MultiDatabaseSession.acknowledge",
                     stream="cdc_sources.sqlserver.databases:MultiDatabaseSession.stream", before_offsets=1)
    child = multiprocessing.get_context("forkserver").Process(target=traced_emulated_capture, args=(text, plan))
    child.start()
    child.join(120)
    assert child.exitcode == -9, f"the child capture was not killed before its offset commit: {child.exitcode}"
    assert read_offsets(root, SOURCE) == committed  # its batch's offset was not committed ...
    killed_batch = committed[-1]["batch"] + 1
    shared = (SOURCE, f"{SOURCE}.transaction", f"__debezium-heartbeat.{SOURCE}")
    for topic in (*shared, *topics):  # ... every data commit was
        assert any(r["batch"] == killed_batch for r in read_topic(root, topic)), topic

    with emulated():
        run_capture(parse_pipeline(text, env={}), until_idle=True)

    transactions = read_topic(root, f"{SOURCE}.transaction")
    expected = sum((_expected_transactions(emu.dsn, db, lsn) for emu, db, lsn in zip((a, b), names, snapshot_lsns,
                                                                                      strict=True)), Counter())
    assert Counter(map(_transaction_identity, transactions)) == expected
    pairs = [(_transaction_identity(begin), _transaction_identity(end))
             for begin, end in zip(transactions[::2], transactions[1::2], strict=True)]
    assert [(begin[0], end[0]) for begin, end in pairs] == [("BEGIN", "END")] * len(pairs)
    assert [begin[1] for begin, _ in pairs] == [end[1] for _, end in pairs]  # each BEGIN, then its own END
    schema_changes = [orjson.loads(r["value"]) for r in read_topic(root, SOURCE)]
    identities = [(v["databaseName"], v["tableChanges"][0]["type"], v["source"]["commit_lsn"],
                   v["source"]["change_lsn"]) for v in schema_changes]
    assert duplicates("schema changes", identities) == []
    assert Counter((db, kind) for db, kind, _, _ in identities) == Counter(
        {(db, kind): 1 for db in names for kind in ("CREATE", "ALTER")})
    heartbeats = read_topic(root, f"__debezium-heartbeat.{SOURCE}")
    assert duplicates("heartbeats", [(r["position"], r["value"]) for r in heartbeats]) == []
    for topic in (*shared, *topics):
        assert seq_problems(read_topic(root, topic)) == [], topic

    for emu, topic, lsn in zip((a, b), topics, snapshot_lsns, strict=True):
        rows = read_topic(root, topic)
        actual = [(r["op"], orjson.loads(r["key"])["id"]) for r in rows if r["op"] in ("c", "u", "d")]
        assert event_diff(actual, _expected_stream(emu.dsn, lsn)) == []
    config = parse_pipeline(text, env={})
    result = run_silver(root=root, engine=EngineSpec(), tables=config.silver, options=config.silver_options,
                        sources={SOURCE: SOURCE}, once=True, spark=spark)
    assert result.ok, [t.error for t in result.errors]
    for table, emu in (("customers_a", a), ("customers_b", b)):
        silver = [tuple(r) for r in spark.read.format("delta").load(f"{root}/silver/{table}")
                  .select(*COLUMNS).orderBy("id").collect()]
        assert silver == customer_rows(emu.dsn, COLUMNS)
