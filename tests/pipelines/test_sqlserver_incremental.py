"""SQL Server incremental snapshots through the CDC emulator, end to end: ``execute-snapshot``
inserted into the signal table (CDC-enabled, read back through its change table like any
change), chunks of a few hundred rows read while a writer updates, deletes and inserts rows in
and out of the current chunk, capture SIGKILLed mid-snapshot and restarted. Bronze holds each
row's snapshot read at most once per key (exactly once for rows the writer never touched),
bronze folded per key equals the source, and so does silver (Sail). The signal is sent with
``cdc-lakehouse signal``; bad signals before it (an unknown table, bad JSON) are logged and ignored.

The oracles are independent of the connector: the source table and signal rows are written and
read with psycopg, bronze with delta-rs."""

from __future__ import annotations

import os
import random
import signal
import threading
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
from pipelines.silver_runner import run_silver
from tests.support.bronze_rows import read_offsets, read_topic, seq_problems, snapshot_completed
from tests.support.capture_process import wait_until
from tests.support.engines import SAIL_ONLY
from tests.support.sqlserver_emulator import SqlServerEmulator
from tests.support.sqlserver_emulator.capture import main as send_through_cli
from tests.support.sqlserver_emulator.databases import dbname
from tests.support.sqlserver_emulator.pipeline import SOURCE, sqlserver_pipeline_text
from tests.support.sqlserver_emulator.processes import capture_log_tail, start_capture

pytestmark = [pytest.mark.integration]

ROWS = 300
SIGNAL_DDL = "CREATE TABLE dbo.dbz_signal (id varchar(64) PRIMARY KEY, type varchar(32) NOT NULL, data varchar(2048))"


@pytest.fixture
def emulator(pg_db: str) -> Iterator[SqlServerEmulator]:
    emu = SqlServerEmulator.install(pg_db)
    emu.execute("CREATE TABLE dbo.items (id int PRIMARY KEY, name varchar(40) NOT NULL, qty int)")
    emu.execute(f"INSERT INTO dbo.items SELECT g, 'item ' || g, g % 17 FROM generate_series(1, {ROWS}) g")
    emu.execute(SIGNAL_DDL)
    emu.enable_db()
    emu.enable_table("dbo", "items")
    emu.enable_table("dbo", "dbz_signal")
    yield emu


def _signal(dsn: str, sig_id: str, kind: str, data: str | None) -> None:
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("INSERT INTO dbo.dbz_signal VALUES (%s, %s, %s)", (sig_id, kind, data))


class _Writer(threading.Thread):
    """Updates, deletes, re-inserts and inserts random rows of dbo.items until stopped; ``touched``
    holds every id it wrote."""

    def __init__(self, dsn: str, seed: int) -> None:
        super().__init__(daemon=True)
        self.dsn, self.rng = dsn, random.Random(seed)
        self.touched: set[int] = set()
        self.stop = threading.Event()
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            with psycopg.connect(self.dsn, autocommit=True) as conn:
                n = 0
                while not self.stop.is_set():
                    n += 1
                    k = self.rng.randint(1, ROWS) if n % 4 != 3 else ROWS + n
                    self.touched.add(k)
                    if n % 4 == 0:
                        conn.execute("DELETE FROM dbo.items WHERE id = %s", (k,))
                    elif n % 4 == 1:
                        with conn.transaction():
                            conn.execute("DELETE FROM dbo.items WHERE id = %s", (k,))
                            conn.execute("INSERT INTO dbo.items VALUES (%s, 'again', 1)", (k,))
                    elif n % 4 == 2:
                        conn.execute("UPDATE dbo.items SET qty = qty + 5, name = name || '+' WHERE id = %s", (k,))
                    else:
                        conn.execute("INSERT INTO dbo.items VALUES (%s, 'during', 2)", (k,))
                    time.sleep(0.01)
        except BaseException as exc:  # reported by the test
            self.error = exc


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


def _snapshot_running(root: str) -> bool:
    offsets = read_offsets(root, SOURCE)
    return bool(offsets) and "incremental_snapshot_collections" in orjson.loads(offsets[-1]["offset"])


@SAIL_ONLY
def test_incremental_snapshot_with_a_writer_sigkill_and_restart_reads_each_row_once(
        emulator: SqlServerEmulator, tmp_path: Path, spark: Any) -> None:
    root = str(tmp_path / "lake")
    database = dbname(emulator.dsn)
    topic = f"{SOURCE}.{database}.dbo.items"
    text = sqlserver_pipeline_text(root, emulator.dsn, capture={"commit_interval_ms": 100},
                                   silver=[{"table": "items", "source": topic}],
                                   **{"signal.data.collection": f"{database}.dbo.dbz_signal",
                                      "incremental.snapshot.chunk.size": "20"})
    config_path = tmp_path / "pipeline.yaml"
    config_path.write_text(text)
    logs = tmp_path / "logs"
    logs.mkdir()
    agent = emulator.agent()
    agent.sync()
    writer = _Writer(emulator.dsn, 5)
    with agent.running(interval=0.05):
        capture = start_capture(config_path, logs, 1, until_idle=False)
        try:
            assert wait_until(lambda: snapshot_completed(root, SOURCE) or capture.poll() is not None, 120)
            assert capture.poll() is None, capture_log_tail(logs, 1)
            _signal(emulator.dsn, "bad-1", "execute-snapshot", orjson.dumps(
                {"data-collections": [f"{database}.dbo.no_such_table"], "type": "incremental"}).decode())
            _signal(emulator.dsn, "bad-2", "execute-snapshot", "{not json")
            sent = send_through_cli(["-q", "signal", "-c", str(config_path), "--source", SOURCE, "execute-snapshot",
                                     "--tables", f"{database}.dbo.items", "--id", "ad-hoc-1"])
            assert sent == 0
            writer.start()
            read_some = wait_until(lambda: len(_incremental_reads(read_topic(root, topic))) >= 100
                                   or capture.poll() is not None, 120)
            assert read_some, capture_log_tail(logs, 1)
            assert _snapshot_running(root), "the kill missed the snapshot: the test proves nothing"
            os.kill(capture.pid, signal.SIGKILL)
            assert capture.wait(30) == -9, capture_log_tail(logs, 1)
        finally:
            if capture.poll() is None:
                capture.kill()
        log1 = (logs / "capture-1.err").read_text()
        assert "no captured table matches" in log1 and "no_such_table" in log1, log1[-3000:]
        assert "'bad-2'" in log1 and "data is not JSON" in log1, log1[-3000:]

        resumed = start_capture(config_path, logs, 2, until_idle=True)  # the writer goes on meanwhile
        time.sleep(1.0)
        writer.stop.set()
        writer.join()
        assert writer.error is None, writer.error
        assert resumed.wait(300) == 0, capture_log_tail(logs, 2)
        log2 = (logs / "capture-2.err").read_text()
        assert "resuming incremental snapshot ad-hoc-1" in log2, log2[-3000:]
        agent.sync()
    done = start_capture(config_path, logs, 3, until_idle=True)
    assert done.wait(300) == 0, capture_log_tail(logs, 3)

    assert not _snapshot_running(root), capture_log_tail(logs, 3)
    rows = read_topic(root, topic)
    assert seq_problems(rows) == []
    reads = Counter(_incremental_reads(rows))
    assert {k: n for k, n in reads.items() if n > 1} == {}, "a row's snapshot read twice"
    untouched = set(range(1, ROWS + 1)) - writer.touched
    assert len(untouched) > 50
    assert {k for k in untouched if reads[k] != 1} == set(), "rows never read by the snapshot"
    source = _source(emulator.dsn)
    got = _fold(rows)
    assert {k: (got.get(k), source.get(k)) for k in got.keys() | source.keys() if got.get(k) != source.get(k)} == {}

    config = parse_pipeline(text, env={})
    result = run_silver(root=root, engine=EngineSpec(), tables=config.silver, options=config.silver_options,
                        sources={SOURCE: SOURCE}, once=True, spark=spark)
    assert result.ok, [t.error for t in result.errors]
    silver = {r["id"]: (r["name"], r["qty"]) for r in
              spark.read.format("delta").load(f"{root}/silver/items").select("id", "name", "qty").collect()}
    assert silver == source


def test_pause_resume_through_the_file_channel_and_stop(emulator: SqlServerEmulator, tmp_path: Path) -> None:
    """``pause-snapshot`` right behind ``execute-snapshot`` in the signal table: the chunk already
    opened is finished, then nothing more until ``resume-snapshot`` comes through the file channel;
    ``stop-snapshot`` ends a second snapshot of the table. Engine-free, in-process, until idle."""
    from pipelines.capture import run_capture
    from tests.support.sqlserver_emulator.capture import emulated

    root = str(tmp_path / "lake")
    database = dbname(emulator.dsn)
    topic = f"{SOURCE}.{database}.dbo.items"
    signal_file = tmp_path / "signals.txt"
    config = parse_pipeline(sqlserver_pipeline_text(
        root, emulator.dsn, **{"signal.data.collection": f"{database}.dbo.dbz_signal",
                               "signal.enabled.channels": "source,file", "signal.file": str(signal_file),
                               "signal.poll.interval.ms": "100", "incremental.snapshot.chunk.size": "40",
                               "snapshot.mode": "no_data"}), env={})
    agent = emulator.agent()
    agent.sync()

    def run() -> list[int]:
        agent.sync()  # the signals are in the change table before capture looks for its end (a loaded machine)
        with emulated(), agent.running(interval=0.05):
            run_capture(config, until_idle=True)
        return _incremental_reads(read_topic(root, topic))

    assert run() == []  # no data snapshot: streaming only
    _signal(emulator.dsn, "s-1", "execute-snapshot", orjson.dumps({"data-collections": [f"{database}.dbo.items"]})
            .decode())
    _signal(emulator.dsn, "p-1", "pause-snapshot", None)
    reads = run()
    assert len(reads) == 40 and len(set(reads)) == 40, "one chunk, then paused"
    offset = orjson.loads(read_offsets(root, SOURCE)[-1]["offset"])
    assert offset["incremental_snapshot_paused"] is True
    assert run() == reads, "a paused snapshot stays paused across restarts"

    signal_file.write_text(orjson.dumps({"id": "r-1", "type": "resume-snapshot", "data": None}).decode() + "\n")
    reads = run()
    assert sorted(reads) == list(range(1, ROWS + 1))
    assert not _snapshot_running(root)

    _signal(emulator.dsn, "s-2", "execute-snapshot", orjson.dumps({"data-collections": [f"{database}.dbo.items"]})
            .decode())
    _signal(emulator.dsn, "x-2", "stop-snapshot", orjson.dumps(
        {"data-collections": [f"{database}.dbo.items"], "type": "incremental"}).decode())
    again = run()[ROWS:]
    assert len(again) <= 40, "stopped after the chunk already open"
    assert not _snapshot_running(root)


def _blocking_reads(rows: list[dict[str, Any]]) -> list[tuple[int, str]]:
    out = []
    for r in rows:
        v = orjson.loads(r["value"]) if r["value"] else None
        if v and v["op"] == "r" and v["source"]["snapshot"] != "incremental":
            out.append((int(v["after"]["id"]), v["source"]["snapshot"]))
    return out


def test_blocking_snapshots_read_the_table_whole_or_filtered_between_transactions(
        emulator: SqlServerEmulator, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """``execute-snapshot`` of type blocking: the table read whole at a transaction end, marked as
    Debezium marks a snapshot's rows, once; one filtered by a T-SQL condition; a filter naming no
    column is logged and the table skipped. Engine-free, in-process, until idle."""
    from pipelines.capture import run_capture
    from tests.support.sqlserver_emulator.capture import emulated

    root = str(tmp_path / "lake")
    database = dbname(emulator.dsn)
    topic = f"{SOURCE}.{database}.dbo.items"
    config = parse_pipeline(sqlserver_pipeline_text(
        root, emulator.dsn, **{"signal.data.collection": f"{database}.dbo.dbz_signal", "snapshot.mode": "no_data"}),
        env={})
    agent = emulator.agent()
    agent.sync()

    def run() -> list[tuple[int, str]]:
        agent.sync()  # the signals are in the change table before capture looks for its end (a loaded machine)
        with emulated(), agent.running(interval=0.05):
            run_capture(config, until_idle=True)
        return _blocking_reads(read_topic(root, topic))

    assert run() == []
    emulator.execute("UPDATE dbo.items SET qty = -1 WHERE id = 5")
    _signal(emulator.dsn, "b-1", "execute-snapshot", orjson.dumps(
        {"data-collections": [f"{database}.dbo.items"], "type": "blocking"}).decode())
    emulator.execute("UPDATE dbo.items SET qty = -2 WHERE id = 6")
    whole = run()
    assert sorted(i for i, _ in whole) == list(range(1, ROWS + 1))
    assert [m for _, m in whole] == ["first", *["true"] * (ROWS - 2), "last"]
    assert run() == whole, "a restart reads nothing again"

    _signal(emulator.dsn, "b-2", "execute-snapshot", orjson.dumps(
        {"data-collections": [f"{database}.dbo.items"], "type": "blocking",
         "additional-conditions": [{"data-collection": f"{database}.dbo.items", "filter": "[id] <= 10"}]}).decode())
    _signal(emulator.dsn, "b-3", "execute-snapshot", orjson.dumps(
        {"data-collections": [f"{database}.dbo.items"], "type": "blocking",
         "additional-conditions": [{"data-collection": f"{database}.dbo.items", "filter": "no_such_column = 1"}]})
            .decode())
    with caplog.at_level("ERROR"):
        filtered = run()[ROWS:]
    assert sorted(i for i, _ in filtered) == list(range(1, 11))
    assert "no_such_column" in caplog.text and "skipped" in caplog.text
    rows = read_topic(root, topic)
    assert seq_problems(rows) == []
    assert _fold(rows) == _source(emulator.dsn)


def test_insert_delete_closes_each_chunk_with_the_open_rows_delete(emulator: SqlServerEmulator, tmp_path: Path) -> None:
    """``incremental.snapshot.watermarking.strategy: insert_delete``: each chunk's open row is deleted
    at its close, the delete row of the signal table's change table closes the window, and a writer
    changing rows meanwhile leaves bronze folded equal to the source, each untouched row read once
    and the signal table without a watermark row. Engine-free, in-process."""
    from pipelines.capture import run_capture
    from tests.support.sqlserver_emulator.capture import emulated

    root = str(tmp_path / "lake")
    database = dbname(emulator.dsn)
    topic = f"{SOURCE}.{database}.dbo.items"
    config = parse_pipeline(sqlserver_pipeline_text(
        root, emulator.dsn, **{"signal.data.collection": f"{database}.dbo.dbz_signal",
                               "incremental.snapshot.chunk.size": "20", "snapshot.mode": "no_data",
                               "incremental.snapshot.watermarking.strategy": "insert_delete"}), env={})
    agent = emulator.agent()
    agent.sync()
    with emulated(), agent.running(interval=0.05):
        run_capture(config, until_idle=True)  # no data snapshot: streaming starts here
    _signal(emulator.dsn, "id-1", "execute-snapshot", orjson.dumps({"data-collections": [f"{database}.dbo.items"]})
            .decode())
    writer = _Writer(emulator.dsn, 7)
    stopper = threading.Timer(1.5, writer.stop.set)
    writer.start()
    stopper.start()
    try:
        with emulated(), agent.running(interval=0.05):
            run_capture(config, until_idle=True)
    finally:
        writer.stop.set()
        stopper.cancel()
        writer.join()
    assert writer.error is None, writer.error
    agent.sync()
    with emulated():
        run_capture(config, until_idle=True)

    assert not _snapshot_running(root)
    rows = read_topic(root, topic)
    reads = Counter(_incremental_reads(rows))
    assert {k: n for k, n in reads.items() if n > 1} == {}, "a row's snapshot read twice"
    untouched = set(range(1, ROWS + 1)) - writer.touched
    assert writer.touched and len(untouched) > 50
    assert {k for k in untouched if reads[k] != 1} == set(), "rows never read by the snapshot"
    source, got = _source(emulator.dsn), _fold(rows)
    assert {k: (got.get(k), source.get(k)) for k in got.keys() | source.keys() if got.get(k) != source.get(k)} == {}
    signal_ops = Counter()
    for r in read_topic(root, f"{SOURCE}.{database}.dbo.dbz_signal"):
        v = orjson.loads(r["value"]) if r["value"] else None
        if v is not None and v["op"] in ("c", "d"):
            image = v["after"] if v["op"] == "c" else v["before"]
            signal_ops[v["op"], image["type"]] += 1
    opened = signal_ops["c", "snapshot-window-open"]
    assert opened >= ROWS // 20 - 5 and signal_ops["d", "snapshot-window-open"] == opened, signal_ops
    assert signal_ops["c", "snapshot-window-close"] == 0, signal_ops
    with psycopg.connect(emulator.dsn) as conn:  # the oracle: the signal table itself
        assert [tuple(r) for r in conn.execute("SELECT id, type FROM dbo.dbz_signal")] == [("id-1", "execute-snapshot")]
