"""A Sail server process that cannot start is a run-time failure (exit 1), not a configuration
error: the same pipeline file works once the cause passes. The cause here is real: the port of
``engine.server_port`` is held by a socket of the test.

* ``cdc-lakehouse silver`` (looping: the server in a child process) whose server cannot listen:
  exit 1, one error line naming the port, no traceback.
* ``cdc-lakehouse run`` whose restarted server cannot listen (the test takes the port while the
  run restarts its server over ``engine.server_memory_mb``): the retries of
  ``engine.server_restart_*`` run out, the run exits 1 with one error line, capture stops
  cleanly and bronze holds every source change exactly once (`check_exactly_once`).
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time

import pytest

from pipelines.cli import EXIT_FAILURE, main
from tests.pipelines.exactly_once_support import (
    PREFIX,
    check_exactly_once,
    create_oracle_slot,
    create_schema,
    pipeline_yaml,
)
from tests.support.bronze_rows import snapshot_completed
from tests.support.pipeline_yaml import pipeline_text

RESTARTING = "restarting it before the next pass"


def _listening_socket() -> socket.socket:
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen()
    return sock


def _free_port() -> int:
    with contextlib.closing(_listening_socket()) as sock:
        return int(sock.getsockname()[1])


def _take_port(port: int, timeout: float) -> socket.socket:
    """Listen on ``port`` as soon as it is free (the old server stopped), polling every 5 ms."""
    deadline = time.monotonic() + timeout
    while True:
        sock = socket.socket()
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # past TIME_WAIT, never past a listener
        try:
            sock.bind(("127.0.0.1", port))
            sock.listen()
            return sock
        except OSError:
            sock.close()
            assert time.monotonic() < deadline, f"port {port} never became free"
            time.sleep(0.005)


@pytest.mark.spark
def test_silver_whose_server_cannot_listen_exits_1_with_one_error_line(tmp_path, capsys):
    taken = _listening_socket()
    port = taken.getsockname()[1]
    config = tmp_path / "pipeline.yaml"
    config.write_text(pipeline_text(str(tmp_path / "lake"), "host=127.0.0.1 port=1 dbname=d user=u")
                      + "silver:\n  - {table: t, source: pg.public.t}\n"
                      + f"engine: {{kind: sail, server: process, server_port: {port}}}\n")
    try:
        code = main(["silver", "-c", str(config)])
    finally:
        taken.close()
    err = capsys.readouterr().err
    assert code == EXIT_FAILURE, err
    errors = [line for line in err.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, err
    assert "the Sail server process did not start" in errors[0] and f"127.0.0.1:{port}" in errors[0], err
    assert "Address already in use" in errors[0] and "invalid configuration" not in err, err
    assert "Traceback" not in err


@pytest.mark.integration
@pytest.mark.postgres
@pytest.mark.spark
def test_run_exits_1_when_the_restart_retries_run_out_and_capture_stops_cleanly(pg_db, tmp_path):
    root = str(tmp_path / "lake")
    db = dict(p.split("=", 1) for p in pg_db.split())["dbname"]
    slot, oracle = f"c_{db[-40:]}", f"o_{db[-40:]}"
    create_schema(pg_db, big=20, accounts=50, orders=50)
    create_oracle_slot(pg_db, oracle)
    port = _free_port()
    config = tmp_path / "pipeline.yaml"
    config.write_text(pipeline_yaml(root, pg_db, slot=slot, interval_ms=100, max_records=50)
                      + "silver:\n  - {table: accounts, source: pg.public.accounts}\n"
                      + "silver_options: {interval_seconds: 0.2}\n"
                      + f"engine: {{kind: sail, server_memory_mb: 1, server_port: {port}, "
                        "server_restart_retries: 2, server_restart_delay_ms: 50}\n")
    out, err = tmp_path / "run.out", tmp_path / "run.err"
    with out.open("wb") as o, err.open("wb") as e:
        proc = subprocess.Popen([sys.executable, "-m", "pipelines.cli", "run", "-c", str(config)], stdout=o,
                                stderr=e, start_new_session=True)
    taken: socket.socket | None = None
    try:
        deadline = time.monotonic() + 180
        while not snapshot_completed(root, PREFIX):  # a restart after the snapshot: capture is streaming
            assert proc.poll() is None, f"run ended early ({proc.returncode}): {err.read_text()[-2000:]}"
            assert time.monotonic() < deadline, f"no snapshot in 180 s: {out.read_text()[-2000:]}"
            time.sleep(0.1)
        restarts = out.read_text().count(RESTARTING)
        while out.read_text().count(RESTARTING) == restarts:  # the next restart: its old server stops now
            assert proc.poll() is None, f"run ended early ({proc.returncode}): {err.read_text()[-2000:]}"
            assert time.monotonic() < deadline, f"no restart in 180 s: {out.read_text()[-2000:]}"
            time.sleep(0.005)
        taken = _take_port(port, 60)
        code = proc.wait(120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        if taken is not None:
            taken.close()
    stdout, stderr = out.read_text(), err.read_text()
    assert code == EXIT_FAILURE, f"exit {code}\n{stdout[-2000:]}\n{stderr[-3000:]}"
    errors = [line for line in stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, stderr
    assert "did not start again after 3 attempt(s)" in errors[0], errors
    assert f"cannot listen on 127.0.0.1:{port}" in errors[0], errors
    assert "Traceback" not in stderr, stderr[-3000:]
    assert stdout.count("retry ") == 2 and "[pg] stopped:" in stdout, stdout[-2000:]
    assert check_exactly_once(root, pg_db, slot=slot, oracle_slot=oracle) == []
