"""A Spark Connect engine that does not start or cannot be reached fails at once with a clear
error (exit 1, no traceback): which engine, where (``sc://host:port`` only: a token in the URL is
never shown) and what to check. Before, a closed ``connect`` port was retried by pyspark for more
than ten minutes; a Sail server this process could not start ended in a traceback.

The commands run in subprocesses, as a user runs them; the closed port is one this test bound and
released; the Sail server's start fails on a real bad setting (``SAIL_MODE``), read by pysail."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pipelines.engine_start import display_url, endpoint
from tests.support.silver_processes import ROOT, child_env

PIPELINE = """pipeline: shop
lakehouse: {{root: {root}}}
{engine}
sources:
  - {{name: shop_pg, connector: postgres, connection: {{host: 127.0.0.1, database: shop}}}}
silver:
  - {{table: customers, source: shop_pg.public.customers}}
"""
TOKEN = "s3cr3t-T0KEN"


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _run(argv: list[str], env: dict[str, str] | None = None) -> tuple[subprocess.CompletedProcess[str], float]:
    started = time.monotonic()
    done = subprocess.run([sys.executable, *argv], capture_output=True, text=True, cwd=ROOT, timeout=120,
                          env={**child_env(), **(env or {})})
    return done, time.monotonic() - started


def _config(tmp_path: Path, engine: str) -> Path:
    config = tmp_path / "pipeline.yaml"
    config.write_text(PIPELINE.format(root=tmp_path / "lake", engine=engine))
    return config


def _assert_engine_error(done: subprocess.CompletedProcess[str], seconds: float, *said: str) -> None:
    out = done.stdout + done.stderr
    assert done.returncode == 1, out
    assert "Traceback" not in out and TOKEN not in out, out
    for text in said:
        assert text in done.stderr, out
    assert seconds < 60, f"{seconds:.1f}s"  # the process start and imports included; a retried call took >10 min


def test_silver_with_an_unreachable_connect_url_fails_at_once(tmp_path):
    port = _closed_port()
    config = _config(tmp_path, f'engine: {{kind: connect, url: "sc://127.0.0.1:{port}/;token={TOKEN}"}}')
    done, seconds = _run(["-m", "pipelines.cli", "silver", "-c", str(config), "--once"])
    _assert_engine_error(done, seconds, f"error: engine 'connect': cannot connect to the Spark Connect server at "
                                        f"sc://127.0.0.1:{port}: ", "check engine.url")


def test_the_silver_job_with_an_unreachable_connect_url_fails_at_once(tmp_path):
    port = _closed_port()
    config = _config(tmp_path, "engine: {kind: sail}")
    done, seconds = _run(["jobs/silver_job.py", "-c", str(config), "--once", "--engine", "connect",
                          "--url", f"sc://127.0.0.1:{port}/;use_ssl=false;token={TOKEN}"])
    _assert_engine_error(done, seconds, f"error: engine 'connect': cannot connect to the Spark Connect server at "
                                        f"sc://127.0.0.1:{port}: ")


def test_a_sail_server_that_cannot_start_in_this_process_is_an_engine_error(tmp_path):
    config = _config(tmp_path, "engine: {kind: sail, server: embedded}")
    done, seconds = _run(["-m", "pipelines.cli", "silver", "-c", str(config), "--once"], env={"SAIL_MODE": "bogus"})
    _assert_engine_error(done, seconds, "error: engine 'sail': cannot start the Sail Spark Connect server in this "
                                        "process", "SAIL_* environment variables")


@pytest.mark.parametrize(("url", "host", "port", "shown"), [
    ("sc://spark.example.com", "spark.example.com", 15002, "sc://spark.example.com:15002"),
    (f"sc://me:{TOKEN}@10.0.0.5:443/;use_ssl=true;token={TOKEN}", "10.0.0.5", 443, "sc://10.0.0.5:443"),
    ("sc://[::1]:15003/;user_id=alice", "::1", 15003, "sc://[::1]:15003"),
])
def test_the_endpoint_is_shown_without_user_info_or_parameters(url, host, port, shown):
    assert endpoint(url) == (host, port)
    assert display_url(url) == shown
