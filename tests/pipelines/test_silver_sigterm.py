"""SIGTERM stops ``cdc-lakehouse silver`` cleanly, as a first Ctrl-C does: the table (or micro-batch) in
flight ends, the rest of the pass is left for the next run, the engine stops with it, one log line says
so, exit 0; a following ``silver --once``
leaves silver equal to the source (the oracle: ``SELECT`` from PostgreSQL against silver read with
delta-rs).

The signal goes to the driver's Python process alone, as Kubernetes and Airflow send it (not to its
process group): the engine (the Sail server's child process, the classic-Spark JVM) must be stopped
by the driver, not by the signal.
"""

from __future__ import annotations

import os
import re
import signal
import time
from pathlib import Path

import psutil
import psycopg
import pytest

from tests.pipelines.exactly_once_support import create_schema
from tests.support.capture_process import CaptureProcess, wait_until
from tests.support.silver_processes import (
    SILVER_COLUMNS,
    SilverProcess,
    pipeline_with_silver,
    silver_problems,
    silver_rows,
)

pytestmark = [pytest.mark.integration, pytest.mark.postgres]


def _change_source(dsn: str, round_: int) -> None:
    """Updates, deletes and inserts in both silver tables' sources, in one transaction."""
    with psycopg.connect(dsn) as conn:  # commits on leaving the block
        conn.execute("UPDATE accounts SET balance = balance + %s WHERE id %% 3 = %s", (round_, round_ % 3))
        conn.execute("DELETE FROM orders WHERE id %% 7 = %s", (round_ % 7,))
        conn.execute("INSERT INTO orders SELECT g, 1, %s, 'late' FROM generate_series(%s::int, %s::int) g",
                     (round_, 1000 * round_, 1000 * round_ + 20))


def _engine_pids(driver: SilverProcess, marker: str) -> list[int]:
    """The driver's descendants whose command line holds ``marker`` (its engine process)."""
    assert driver.proc is not None
    found = []
    for child in psutil.Process(driver.proc.pid).children(recursive=True):
        try:
            if marker in " ".join(child.cmdline()):
                found.append(child.pid)
        except psutil.NoSuchProcess:
            continue
    return found


def _gone(pids: list[int]) -> bool:
    def ended(pid: int) -> bool:
        try:
            return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
        except psutil.NoSuchProcess:
            return True
    return all(ended(pid) for pid in pids)


def _sigterm(driver: SilverProcess, timeout: float) -> int:
    assert driver.proc is not None
    os.kill(driver.proc.pid, signal.SIGTERM)  # the driver alone, not its group
    return driver.wait(timeout)


def _assert_clean_stop(driver: SilverProcess, status: int, engine: list[int]) -> None:
    err = driver.stderr.read_text(errors="replace")
    assert status == 0, f"exit {status}\n{driver.tail()}"
    said = [line for line in err.splitlines() if "SIGTERM" in line]
    assert len(said) == 1 and "stopping" in said[0], driver.tail()
    assert "Traceback" not in err, driver.tail()
    assert engine and wait_until(lambda: _gone(engine), 10, 0.1), f"engine processes {engine} left running"


def _once(config: Path, logs: Path, timeout: float) -> None:
    with SilverProcess(logs, name="once") as once:
        status = once.start_cli(config, "--once").wait(timeout)
        assert status == 0, once.tail()


def test_sigterm_in_a_pass_of_the_sail_loop_finishes_it_and_stops_the_server(pg_db, tmp_path):
    root = str(tmp_path / "lake")
    create_schema(pg_db, big=10, accounts=60, orders=120)
    config = tmp_path / "pipeline.yaml"
    config.write_text(pipeline_with_silver(root, pg_db, slot="sigterm_loop", engine="sail", silver_interval_s=0.5))
    capture = CaptureProcess(config, tmp_path)
    capture.run_until_idle()
    with SilverProcess(tmp_path) as silver:
        silver.start_cli(config)
        assert silver.wait_output("silver orders: ", 180), silver.tail()
        server = _engine_pids(silver, "pipelines.sail_process")
        _change_source(pg_db, 1)
        capture.start()
        # the moment a pass has applied the change to accounts, it applies orders: the signal lands in the pass
        applied = re.compile(r"^silver accounts: \d+ events", re.MULTILINE)
        assert wait_until(lambda: len(applied.findall(silver.output())) >= 2, 120, 0.02), silver.tail()
        status = _sigterm(silver, 60)
        assert capture.terminate() == 0, capture.tail()
        out = silver.output()
        _assert_clean_stop(silver, status, server)
        # the table in flight (orders) finished; at most the tables after it are left (none here)
        err = silver.stderr.read_text(errors="replace")
        assert out.count("silver accounts: ") == out.count("silver orders: ") or \
            "1 of 2 tables left for the next run: orders" in err, silver.tail()
        # a second signal aborts the pass in flight (exit 130), as safe as a crash
        _change_source(pg_db, 2)
        capture.run_until_idle()
        silver.start_cli(config)
        assert wait_until(lambda: applied.search(silver.output()) is not None, 120, 0.02), silver.tail()
        assert silver.proc is not None
        server = _engine_pids(silver, "pipelines.sail_process")
        started = time.monotonic()
        os.kill(silver.proc.pid, signal.SIGTERM)
        os.kill(silver.proc.pid, signal.SIGINT)
        status = silver.wait(60)
        assert time.monotonic() - started < 20, silver.tail()  # at once: no wait for the work in flight
        assert server and wait_until(lambda: _gone(server), 10, 0.1), f"Sail server {server} left running"
        err = silver.stderr.read_text(errors="replace")
        assert status == 130 and "again: aborting" in err and "Traceback" not in err, f"exit {status}\n{silver.tail()}"
    _change_source(pg_db, 3)
    capture.run_until_idle()
    _once(config, tmp_path, 180)
    assert silver_problems(root, pg_db) == []


LEFT = re.compile(r"silver: stop requested; (\d+) of 3 tables left for the next run: (.*)$", re.MULTILINE)


def test_sigterm_in_a_pass_over_several_tables_skips_the_tables_not_begun(pg_db, tmp_path):
    """A pass over many tables could outlast a 30 s grace period: the stop request is checked between
    tables. The signal comes once the first table is committed (its progress line is printed after its
    commit); the table in flight then finishes, the rest wait for the next run."""
    root = str(tmp_path / "lake")
    create_schema(pg_db, big=30, accounts=40, orders=50)
    config = tmp_path / "pipeline.yaml"
    tables = ("big", "accounts", "orders")
    config.write_text(pipeline_with_silver(root, pg_db, slot="sigterm_tables", engine="sail", tables=tables))
    CaptureProcess(config, tmp_path).run_until_idle()
    with SilverProcess(tmp_path) as silver:
        silver.start_cli(config)  # looping: a progress line per table as it is applied
        assert silver.wait_output("silver big: ", 180), silver.tail()
        server = _engine_pids(silver, "pipelines.sail_process")
        started = time.monotonic()
        status = _sigterm(silver, 60)
        stopped_in = time.monotonic() - started
        _assert_clean_stop(silver, status, server)
        out, err = silver.output(), silver.stderr.read_text(errors="replace")
        left = LEFT.search(err)
        assert left is not None, silver.tail()
        named = left.group(2).split(", ")
        applied = [t for t in tables if f"silver {t}: " in out]
        # the first table was committed before the signal, the table in flight finished, the rest are left
        assert int(left.group(1)) == len(named) >= 1 and applied + named == list(tables), silver.tail()
        assert all(silver_rows(root, t, ("id",)) is None for t in named), "a table left for the next run was written"
        assert stopped_in < 30, f"{stopped_in:.1f}s from SIGTERM to exit"
    _once(config, tmp_path, 180)
    assert silver_problems(root, pg_db, {"big": ("id", "grp", "name"), **SILVER_COLUMNS}) == []


@pytest.mark.classic_spark
def test_sigterm_during_a_classic_stream_stops_its_queries_and_the_jvm(pg_db, tmp_path):
    """The one classic-Spark test here: ``--stream`` has no Sail form."""
    root = str(tmp_path / "lake")
    create_schema(pg_db, big=10, accounts=60, orders=120)
    config = tmp_path / "pipeline.yaml"
    config.write_text(pipeline_with_silver(root, pg_db, slot="sigterm_stream"))
    capture = CaptureProcess(config, tmp_path)
    capture.run_until_idle()
    with SilverProcess(tmp_path) as silver:
        silver.start_cli(config, "--stream", "--trigger", "processing-time", "--interval", "0.5")
        assert silver.wait_output("silver orders: micro-batch 0 applied", 300), silver.tail()
        jvm = _engine_pids(silver, "java")
        _change_source(pg_db, 1)
        capture.run_until_idle()
        time.sleep(0.5)  # the next micro-batches are planned or applying
        status = _sigterm(silver, 120)
        _assert_clean_stop(silver, status, jvm)
    _change_source(pg_db, 2)
    capture.run_until_idle()
    _once(config, tmp_path, 300)
    assert silver_problems(root, pg_db) == []
