"""SIGTERM/SIGINT stop a capture cleanly: exit 0, nothing half-committed, nothing acknowledged ahead of bronze.

A real PostgreSQL source under a continuous writer; the capture runs as ``cdc-lakehouse
capture`` in a subprocess and is sent SIGTERM (or SIGINT) mid-stream and mid-snapshot. After
each stop the slot's ``confirmed_flush_lsn`` must not be ahead of bronze's stored offset; at
the end a last ``--until-idle`` run must leave every source change in bronze exactly once
(`check_exactly_once`: the events equal an independent ``test_decoding`` slot's, the replayed
bronze equals ``SELECT *``).
"""

from __future__ import annotations

import os
import random
import re
import signal
import subprocess
import sys
import time

import orjson
import psycopg
import pytest
from psycopg.rows import dict_row

from bronze.schema import topic_path
from tests.pipelines.exactly_once_support import (
    PREFIX,
    CaptureProcess,
    Workload,
    check_exactly_once,
    create_oracle_slot,
    create_schema,
    log_commits,
    offsets,
    oracle_commit_lsns,
    pipeline_yaml,
    slot_ahead,
    slot_confirmed,
    topic,
    wait_until,
)
from tests.support.bronze_rows import read_offsets, snapshot_completed

pytestmark = [pytest.mark.integration, pytest.mark.postgres]

SEED = 20_261_127


def _names(pg_db: str) -> tuple[str, str]:
    db = dict(p.split("=", 1) for p in pg_db.split())["dbname"]
    return f"c_{db[-40:]}", f"o_{db[-40:]}"


def test_sigterm_mid_stream_exits_0_and_leaves_bronze_exactly_once(pg_db, tmp_path):
    root = str(tmp_path / "lake")
    slot, oracle = _names(pg_db)
    sizes = {"accounts": 200, "big": 2_000, "orders": 100}
    create_schema(pg_db, **sizes)
    create_oracle_slot(pg_db, oracle)
    config = tmp_path / "pipeline.yaml"
    # large transactions (3,000 inserts and updates) span many batches of 50: a stop may land inside one
    config.write_text(pipeline_yaml(root, pg_db, slot=slot, interval_ms=100, max_records=50))
    capture = CaptureProcess(config, tmp_path)
    rng = random.Random(SEED)
    workload = Workload(pg_db, SEED, sizes, large_rows=3_000).start()
    marks = []
    try:
        with psycopg.connect(pg_db, row_factory=dict_row, autocommit=True) as conn:
            for i in range(6):
                capture.start_planned()
                workload.request_large()
                time.sleep(rng.uniform(0.5, 2.0))
                sig = signal.SIGINT if i == 5 else signal.SIGTERM
                started = time.monotonic()
                status = capture.terminate(sig)
                assert status == 0, f"run {capture.runs} exited {status} after {sig.name}:\n{capture.tail()}"
                assert time.monotonic() - started < 30
                out = capture.stdout.read_text()
                assert "stopped on request" in out, capture.tail()
                marks.append((slot_confirmed(conn, slot), offsets(root)))
    finally:
        workload.stop()
        if capture.running:
            capture.kill()
    assert workload.committed > 50, workload
    capture.run_until_idle()
    problems = check_exactly_once(root, pg_db, slot=slot, oracle_slot=oracle)
    commits = oracle_commit_lsns(pg_db, oracle)
    for confirmed, rows in marks:
        problems += slot_ahead(confirmed, rows, slot, commits)
    assert not problems, "\n".join(problems)


def test_a_second_signal_aborts_with_exit_130_and_bronze_stays_exactly_once(pg_db, tmp_path):
    """SIGTERM then SIGINT (two signals that never merge into one): the first asks for a clean stop,
    the second aborts at once, exit 130 and "interrupted", no traceback; the next run leaves every
    change in bronze exactly once (as after a crash)."""
    root = str(tmp_path / "lake")
    slot, oracle = _names(pg_db)
    sizes = {"accounts": 100, "big": 500, "orders": 100}
    create_schema(pg_db, **sizes)
    create_oracle_slot(pg_db, oracle)
    config = tmp_path / "pipeline.yaml"
    config.write_text(pipeline_yaml(root, pg_db, slot=slot, interval_ms=100, max_records=50))
    capture = CaptureProcess(config, tmp_path)
    workload = Workload(pg_db, SEED, sizes, large_rows=1_000).start()
    try:
        capture.start_planned()
        orders_dir = topic_path(root, topic("orders"))
        commits = log_commits(orders_dir)
        workload.request_large()
        assert wait_until(lambda: log_commits(orders_dir) > commits + 2, 120, 0.01), capture.tail()
        assert capture.proc is not None
        os.kill(capture.proc.pid, signal.SIGTERM)
        os.kill(capture.proc.pid, signal.SIGINT)
        status = capture.proc.wait(60)
    finally:
        workload.stop()
        if capture.running:
            capture.kill()
    err = capture.stderr.read_text()
    assert status == 130, f"exit {status}:\n{capture.tail()}"
    assert "interrupted" in err and "again: aborting" in err and "Traceback" not in err, capture.tail()
    capture.run_until_idle()
    problems = check_exactly_once(root, pg_db, slot=slot, oracle_slot=oracle)
    assert not problems, "\n".join(problems)


def test_sigterm_inside_a_large_transaction_commits_no_part_of_it_past_the_offset(pg_db, tmp_path):
    """The stop lands while a 200,000-row transaction streams: what is buffered is abandoned, the
    stored offset stays before the transaction, and the next run completes it exactly once."""
    root = str(tmp_path / "lake")
    slot, oracle = _names(pg_db)
    create_schema(pg_db, big=10, accounts=10, orders=10)
    create_oracle_slot(pg_db, oracle)
    config = tmp_path / "pipeline.yaml"
    config.write_text(pipeline_yaml(root, pg_db, slot=slot, interval_ms=60_000, max_records=20_000,
                                    max_bytes=1 << 20))
    capture = CaptureProcess(config, tmp_path)
    try:
        capture.start_planned()
        assert wait_until(lambda: bool(read_offsets(root, PREFIX)) and read_offsets(root, PREFIX)[-1][
            "snapshot_completed"], 120, 0.2), capture.tail()
        orders_dir = topic_path(root, topic("orders"))
        commits = log_commits(orders_dir)
        with psycopg.connect(pg_db, autocommit=True) as conn:
            conn.execute("INSERT INTO orders SELECT g, 1, 1, 'bulk' FROM generate_series(100, 200099) g")
        # some of the transaction is committed to bronze (a batch is full), the rest still streams
        assert wait_until(lambda: log_commits(orders_dir) > commits, 120, 0.005), capture.tail()
        assert capture.terminate() == 0, capture.tail()
        out = capture.stdout.read_text()
        # the stop landed inside the transaction: bronze holds only part of its 200,000 rows (what
        # was read but not committed, possibly nothing at that instant, is abandoned)
        assert "stopped: " in out, out
        orders = int(out.split(f"{topic('orders')}: ")[1].split()[0])
        assert orders < 10 + 200_000, f"the stop came after the transaction\n{out}"
        # the offset may pass WAL of the transaction (keepalives), never its commit
        commit = max(oracle_commit_lsns(pg_db, oracle))
        stored = orjson.loads(read_offsets(root, PREFIX)[-1]["offset"])["lsn"]
        assert stored < commit, f"the stored offset {stored} is past the transaction's commit {commit}"
    finally:
        if capture.running:
            capture.kill()
    capture.run_until_idle()
    problems = check_exactly_once(root, pg_db, slot=slot, oracle_slot=oracle)
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("to_group", [False, True], ids=["sigterm", "sigint-to-process-group"])
def test_sigterm_mid_snapshot_exits_0_and_the_next_run_redoes_the_snapshot(pg_db, tmp_path, to_group):
    """``sigint-to-process-group`` is a terminal's Ctrl-C: the snapshot's COPY worker processes get it too."""
    root = str(tmp_path / "lake")
    slot, oracle = _names(pg_db)
    sizes = {"accounts": 500, "big": 50_000, "orders": 200}
    create_schema(pg_db, **sizes, pad=300)
    create_oracle_slot(pg_db, oracle)
    config = tmp_path / "pipeline.yaml"
    config.write_text(pipeline_yaml(root, pg_db, slot=slot, interval_ms=50, max_records=2_000))
    capture = CaptureProcess(config, tmp_path, own_group=to_group)
    workload = Workload(pg_db, SEED, sizes).start()
    try:
        capture.start_planned()
        assert capture.wait_output("big: reading", 120), capture.tail()
        status = capture.terminate(signal.SIGINT, group=True) if to_group else capture.terminate()
        assert status == 0, capture.tail()
        assert "stopped on request" in capture.stdout.read_text(), capture.tail()
        rows = read_offsets(root, PREFIX)
        assert not (rows and rows[-1]["snapshot_completed"]), "the snapshot completed before the signal: too fast"
        capture.start_planned()
        assert wait_until(lambda: bool(read_offsets(root, PREFIX)) and read_offsets(root, PREFIX)[-1][
            "snapshot_completed"], 300, 0.5), capture.tail()
        time.sleep(1)
        assert capture.terminate() == 0, capture.tail()
    finally:
        workload.stop()
        if capture.running:
            capture.kill()
    capture.run_until_idle()
    problems = check_exactly_once(root, pg_db, slot=slot, oracle_slot=oracle)
    assert not problems, "\n".join(problems)


@pytest.mark.spark
def test_sigterm_stops_run_capture_and_silver_with_exit_0(pg_db, tmp_path):
    root = str(tmp_path / "lake")
    slot, oracle = _names(pg_db)
    sizes = {"accounts": 50, "big": 50, "orders": 50}
    create_schema(pg_db, **sizes)
    create_oracle_slot(pg_db, oracle)
    config = tmp_path / "pipeline.yaml"
    config.write_text(pipeline_yaml(root, pg_db, slot=slot, interval_ms=100, max_records=100)
                      + "silver:\n  - {table: accounts, source: pg.public.accounts}\n"
                      + "silver_options: {interval_seconds: 1}\n")
    logs = tmp_path / "run"
    logs.mkdir()
    out, err = logs / "out", logs / "err"
    workload = Workload(pg_db, SEED, sizes).start()
    try:
        with out.open("wb") as o, err.open("wb") as e:
            proc = subprocess.Popen([sys.executable, "-m", "pipelines.cli", "-v", "run", "-c", str(config)],
                                    stdout=o, stderr=e)
        try:
            assert wait_until(lambda: "silver accounts: " in out.read_text() and "events" in out.read_text(),
                              180, 0.2), f"{out.read_text()}\n{err.read_text()[-3000:]}"
            time.sleep(1)
            os.kill(proc.pid, signal.SIGTERM)
            status = proc.wait(120)
        finally:
            if proc.poll() is None:
                proc.kill()
        assert status == 0, f"{out.read_text()}\n{err.read_text()[-3000:]}"
        assert "stopped: " in out.read_text() and "Traceback" not in err.read_text()
    finally:
        workload.stop()
    CaptureProcess(config, logs).run_until_idle()
    problems = check_exactly_once(root, pg_db, slot=slot, oracle_slot=oracle)
    assert not problems, "\n".join(problems)


@pytest.mark.mariadb
def test_sigterm_mid_stream_on_mariadb_exits_0_and_leaves_bronze_exactly_once(mariadb_db, tmp_path):
    from tests.support.mariadb_checks import check_exactly_once as check_mariadb
    from tests.support.mariadb_pipeline import SOURCE, mariadb_pipeline_text
    from tests.support.mariadb_workload import TABLES
    from tests.support.mariadb_workload import Workload as MariaWorkload
    from tests.support.mariadb_workload import create_schema as create_maria_schema

    root = str(tmp_path / "lake")
    sizes = {"accounts": 100, "big": 500, "orders": 100}
    create_maria_schema(mariadb_db, **sizes)
    config = tmp_path / "pipeline.yaml"
    config.write_text(mariadb_pipeline_text(root, mariadb_db, server_id=5921,
                                            capture={"commit_interval_ms": 100, "commit_max_records": 200}))
    capture = CaptureProcess(config, tmp_path)
    rng = random.Random(SEED)
    workload = MariaWorkload(mariadb_db, SEED, sizes, large_rows=2_000).start()
    try:
        for i in range(4):
            batches = len(read_offsets(root, SOURCE))
            capture.start_planned()
            if i == 0:
                assert wait_until(lambda: snapshot_completed(root, SOURCE), 120, 0.1), capture.tail()
            else:  # streaming has begun (on a loaded machine the first binlog events can take seconds)
                assert wait_until(lambda n=batches: len(read_offsets(root, SOURCE)) > n, 60, 0.1), capture.tail()
            workload.request_large()
            time.sleep(rng.uniform(0.5, 2.0))
            status = capture.terminate(signal.SIGINT if i == 3 else signal.SIGTERM)
            assert status == 0, capture.tail()
            out = capture.stdout.read_text()
            assert "stopped on request" in out and not re.search(r"\b0 streamed records", out), capture.tail()
    finally:
        workload.stop()
        if capture.running:
            capture.kill()
    assert workload.committed > 50 and workload.failed == 0, workload
    capture.run_until_idle()
    problems = check_mariadb(root, mariadb_db, source=SOURCE, tables=TABLES)
    assert not problems, "\n".join(problems)
