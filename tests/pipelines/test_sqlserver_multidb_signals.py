"""Signals and incremental snapshots with several databases in ``database.names``, through the CDC
emulator: each of two emulated databases has its own signal table (``signal.data.collection``
lists both). A snapshot is signalled in one database with ``cdc-lakehouse signal`` (the row goes
to that database's signal table only), then one in the other by a row inserted into its own
signal table, so both run at once, each over its own stream; rows are changed meanwhile. Capture
is SIGKILLed while both run, and the restart resumes each from its own database's offset.

Oracles independent of the connector: the tables and signal tables read with psycopg, bronze
with delta-rs; each database's bronze topic folded per key, and its silver table (Sail), equal
its table; each row's incremental read at most once, exactly once for rows never changed."""

from __future__ import annotations

import os
import signal
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import psycopg
import pytest

from pipelines.config import parse_pipeline
from pipelines.engine import EngineSpec
from pipelines.local_postgres import LocalPostgres
from pipelines.silver_runner import run_silver
from tests.support.bronze_rows import read_offsets, read_topic, seq_problems, snapshot_completed
from tests.support.capture_process import wait_until
from tests.support.engines import SAIL_ONLY
from tests.support.sqlserver_emulator import SqlServerEmulator
from tests.support.sqlserver_emulator.capture import main as send_through_cli
from tests.support.sqlserver_emulator.databases import dbname, more_databases
from tests.support.sqlserver_emulator.pipeline import SOURCE, sqlserver_pipeline_text
from tests.support.sqlserver_emulator.processes import capture_log_tail, start_capture

pytestmark = [pytest.mark.integration]

ROWS = 240
SIGNAL_DDL = "CREATE TABLE dbo.dbz_signal (id varchar(64) PRIMARY KEY, type varchar(32) NOT NULL, data varchar(2048))"


@pytest.fixture
def databases(pg_db: str, pg_server: LocalPostgres) -> Iterator[tuple[SqlServerEmulator, SqlServerEmulator]]:
    """Two CDC-enabled emulated databases, each with ``dbo.items`` (other values in each) and a
    CDC-enabled signal table."""
    with more_databases(pg_server, (f"{dbname(pg_db)[:40]}_s",)) as (b,):
        emus = (SqlServerEmulator.install(pg_db), b)
        for emu, tag in zip(emus, "ab", strict=True):
            emu.execute("CREATE TABLE dbo.items (id int PRIMARY KEY, name varchar(40) NOT NULL, qty int)")
            emu.execute(f"INSERT INTO dbo.items SELECT g, '{tag} ' || g, g % 13 FROM generate_series(1, {ROWS}) g")
            emu.execute(SIGNAL_DDL)
            emu.enable_db()
            emu.enable_table("dbo", "items")
            emu.enable_table("dbo", "dbz_signal")
        yield emus


def _incremental_reads(rows: list[dict[str, Any]]) -> list[int]:
    out = []
    for r in rows:
        v = orjson.loads(r["value"]) if r["value"] else None
        if v and v["op"] == "r" and v["source"]["snapshot"] == "incremental":
            out.append(int(v["after"]["id"]))
    return out


def _fold(rows: list[dict[str, Any]]) -> dict[int, tuple[str, int | None]]:
    state: dict[int, tuple[str, int | None]] = {}
    for r in rows:
        if r["value"] is None:
            continue
        v = orjson.loads(r["value"])
        if v["op"] in ("c", "u", "r"):
            state[int(v["after"]["id"])] = (v["after"]["name"], v["after"]["qty"])
        elif v["op"] == "d":
            state.pop(int(v["before"]["id"]), None)
    return state


def _source(dsn: str) -> dict[int, tuple[str, int | None]]:
    with psycopg.connect(dsn) as conn:
        return {r[0]: (r[1], r[2]) for r in conn.execute("SELECT id, name, qty FROM dbo.items")}


def _signal_ids(dsn: str) -> list[str]:
    with psycopg.connect(dsn) as conn:
        return [r[0] for r in conn.execute("SELECT id FROM dbo.dbz_signal WHERE type = 'execute-snapshot'")]


def _running(root: str) -> dict[str, bool]:
    """Per database, whether its stored offset holds a running incremental snapshot."""
    offsets = read_offsets(root, SOURCE)
    if not offsets:
        return {}
    stored = orjson.loads(offsets[-1]["offset"])
    return {e["partition"]["database"]: "incremental_snapshot_collections" in e["offset"]
            for e in stored.get("partitions", [])}


def _change(dsn: str, touched: set[int], tag: str, step: int) -> None:
    """A few updates, deletes and an insert across the table's key range (ids in ``touched``)."""
    updated, deleted, inserted = (3 + step, 77 + step, 150 + step, 231 + step), (40 + step, 199 + step), ROWS + 1 + step
    with psycopg.connect(dsn, autocommit=True) as conn:
        for k in updated:
            conn.execute("UPDATE dbo.items SET qty = qty + 100, name = name || '+' WHERE id = %s", (k,))
        for k in deleted:
            conn.execute("DELETE FROM dbo.items WHERE id = %s", (k,))
        conn.execute("INSERT INTO dbo.items VALUES (%s, %s, 1)", (inserted, f"{tag} new"))
    touched.update({*updated, *deleted, inserted})


@SAIL_ONLY
def test_snapshots_signalled_per_database_survive_a_sigkill_and_silver_equals_each_database(
        databases: tuple[SqlServerEmulator, SqlServerEmulator], tmp_path: Path, spark: Any,
        capsys: pytest.CaptureFixture[str]) -> None:
    a, b = databases
    names = (dbname(a.dsn), dbname(b.dsn))
    topics = tuple(f"{SOURCE}.{db}.dbo.items" for db in names)
    root = str(tmp_path / "lake")
    text = sqlserver_pipeline_text(root, a.dsn, capture={"commit_interval_ms": 100},
                                   silver=[{"table": "items_a", "source": topics[0]},
                                           {"table": "items_b", "source": topics[1]}],
                                   **{"database.names": ",".join(names),
                                      "signal.data.collection": ",".join(f"{db}.dbo.dbz_signal" for db in names),
                                      "incremental.snapshot.chunk.size": "8"})
    config_path = tmp_path / "pipeline.yaml"
    config_path.write_text(text)
    logs = tmp_path / "logs"
    logs.mkdir()
    agents = (a.agent(), b.agent())
    for agent in agents:
        agent.sync()
    touched: tuple[set[int], set[int]] = (set(), set())

    with agents[0].running(interval=0.05), agents[1].running(interval=0.05):
        capture = start_capture(config_path, logs, 1, until_idle=False)
        try:
            assert wait_until(lambda: snapshot_completed(root, SOURCE) or capture.poll() is not None, 120)
            assert capture.poll() is None, capture_log_tail(logs, 1)
            # database a, through cdc-lakehouse signal: into a's signal table only
            capsys.readouterr()
            sent = send_through_cli(["signal", "-c", str(config_path), "--source", SOURCE, "execute-snapshot",
                                     "--tables", f"{names[0]}.dbo.items", "--id", "snap-a"])
            assert sent == 0
            said = capsys.readouterr()
            assert f"written to signal table {names[0]}.dbo.dbz_signal of source" in said.out + said.err
            assert (_signal_ids(a.dsn), _signal_ids(b.dsn)) == (["snap-a"], [])
            assert wait_until(lambda: len(_incremental_reads(read_topic(root, topics[0]))) >= 24
                              or capture.poll() is not None, 120), capture_log_tail(logs, 1)
            # database b, by a row in its own signal table, while a's snapshot runs
            with psycopg.connect(b.dsn, autocommit=True) as conn:
                conn.execute("INSERT INTO dbo.dbz_signal VALUES ('snap-b', 'execute-snapshot', %s)",
                             (orjson.dumps({"data-collections": [f"{names[1]}.dbo.items"]}).decode(),))
            _change(a.dsn, touched[0], "a", 0)
            _change(b.dsn, touched[1], "b", 0)
            both = wait_until(lambda: (_running(root) == {names[0]: True, names[1]: True}
                              and len(_incremental_reads(read_topic(root, topics[1]))) >= 16)
                              or capture.poll() is not None, 120)
            assert both and capture.poll() is None, capture_log_tail(logs, 1)
            assert _running(root) == {names[0]: True, names[1]: True}, "the kill missed a snapshot: it proves nothing"
            os.kill(capture.pid, signal.SIGKILL)
            assert capture.wait(30) == -9, capture_log_tail(logs, 1)
        finally:
            if capture.poll() is None:
                capture.kill()
        assert not any(_incremental_reads(read_topic(root, t)) == [] for t in topics)

        resumed = start_capture(config_path, logs, 2, until_idle=True)
        time.sleep(0.5)
        _change(b.dsn, touched[1], "b", 1)  # b changes while its snapshot resumes
        assert resumed.wait(300) == 0, capture_log_tail(logs, 2)
        log2 = (logs / "capture-2.err").read_text()
        assert "resuming incremental snapshot snap-a" in log2 and "resuming incremental snapshot snap-b" in log2, \
            log2[-3000:]
        for agent in agents:
            agent.sync()
    done = start_capture(config_path, logs, 3, until_idle=True)
    assert done.wait(300) == 0, capture_log_tail(logs, 3)
    assert _running(root) == {names[0]: False, names[1]: False}, capture_log_tail(logs, 3)

    config = parse_pipeline(text, env={})
    result = run_silver(root=root, engine=EngineSpec(), tables=config.silver, options=config.silver_options,
                        sources={SOURCE: SOURCE}, once=True, spark=spark)
    assert result.ok, [t.error for t in result.errors]
    for emu, db, topic, table, changed in zip((a, b), names, topics, ("items_a", "items_b"), touched, strict=True):
        rows = read_topic(root, topic)
        assert seq_problems(rows) == []
        assert {orjson.loads(r["value"])["source"]["db"] for r in rows if r["value"]} == {db}
        reads = Counter(_incremental_reads(rows))
        assert {k: n for k, n in reads.items() if n > 1} == {}, f"{db}: a row's snapshot read twice"
        untouched = set(range(1, ROWS + 1)) - changed
        assert {k for k in untouched if reads[k] != 1} == set(), f"{db}: rows never read by the snapshot"
        source = _source(emu.dsn)
        got = _fold(rows)
        assert {k: (got.get(k), source.get(k)) for k in got.keys() | source.keys() if got.get(k) != source.get(k)} \
            == {}, db
        silver = {r["id"]: (r["name"], r["qty"]) for r in
                  spark.read.format("delta").load(f"{root}/silver/{table}").select("id", "name", "qty").collect()}
        assert silver == source, db
