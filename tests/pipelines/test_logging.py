"""Log output of a real capture: a line per bronze commit at -v, JSON lines with --log-format json,
and the source's password in no line, text or JSON, whether the capture works or fails."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import psycopg
import pytest

from tests.support.pipeline_yaml import dsn_parts, pipeline_text

pytestmark = [pytest.mark.integration, pytest.mark.postgres]

PASSWORD = "Pa55-w0rd-not-to-log"


def _config(tmp_path: Path, dsn: str, *, port: str | None = None) -> Path:
    text = pipeline_text(str(tmp_path / "lake"), dsn, password="${PG_TEST_PASSWORD}",
                         **{"errors.max.retries": "0"})
    if port is not None:
        text = text.replace(f"port: {dsn_parts(dsn)['port']}", f"port: {port}")
    config = tmp_path / "pipeline.yaml"
    config.write_text(text)
    return config


def _capture(config: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PG_TEST_PASSWORD": PASSWORD}
    return subprocess.run([sys.executable, "-m", "pipelines.cli", *args, "capture", "-c", str(config),
                           "--until-idle"], capture_output=True, text=True, env=env, timeout=300)


def _populate(dsn: str) -> None:
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("CREATE TABLE t (id int PRIMARY KEY, name text)")
        conn.execute("INSERT INTO t SELECT g, 'n' || g FROM generate_series(1, 25) g")


def test_a_commit_line_per_bronze_commit_in_text(pg_db, tmp_path):
    _populate(pg_db)
    done = _capture(_config(tmp_path, pg_db), "-vv")  # debug: everything that is logged
    assert done.returncode == 0, done.stderr
    lines = [ln for ln in done.stderr.splitlines() if "bronze batch" in ln]
    assert lines, done.stderr
    snapshot = [ln for ln in lines if " 25 records" in ln]
    assert len(snapshot) == 1
    assert re.search(r"committed: 25 records, [1-9]\d* bytes, 0 transactions, position \d+/[0-9A-F]+, "
                     r"committed at \d{4}-\d\d-\d\dT", snapshot[0]), snapshot[0]
    assert PASSWORD not in done.stderr + done.stdout


def test_json_lines_carry_the_commit_fields(pg_db, tmp_path):
    _populate(pg_db)
    done = _capture(_config(tmp_path, pg_db), "-vv", "--log-format", "json")
    assert done.returncode == 0, done.stderr
    records = [json.loads(ln) for ln in done.stderr.splitlines() if ln.strip()]
    assert records and all({"time", "level", "logger", "message"} <= set(r) for r in records)
    commits = [r for r in records if r.get("batch") is not None and "records" in r]
    assert sum(r["records"] for r in commits) == 25
    assert all(r["source"] == "pg" and "/" in r["position"] and (r["bytes"] > 0) == (r["records"] > 0)
               for r in commits)
    assert PASSWORD not in done.stderr + done.stdout


@pytest.mark.parametrize("log_format", ["text", "json"])
def test_a_failing_capture_logs_no_password(pg_db, tmp_path, log_format):
    done = _capture(_config(tmp_path, pg_db, port="1"), "-vv", "--log-format", log_format)
    assert done.returncode == 1
    assert "127.0.0.1:1" in done.stderr
    assert PASSWORD not in done.stderr + done.stdout
