"""``cdc-lakehouse signal``: writes the signal capture acts on, into the signal table or the file."""

from __future__ import annotations

import os
import subprocess
import sys

import orjson
import psycopg
import pytest

from pipelines.capture import run_capture
from pipelines.config import parse_pipeline
from tests.support.incremental_pg import incremental_rows, pipeline_text, setup_items

pytestmark = [pytest.mark.integration, pytest.mark.postgres]


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pipelines.cli", *args], capture_output=True, text=True,
                          env=dict(os.environ), timeout=120)


def test_signal_command_starts_a_filtered_incremental_snapshot(pg_db, tmp_path):
    root = str(tmp_path / "lake")
    setup_items(pg_db, 120)
    text = pipeline_text(root, pg_db, **{"snapshot.mode": "no_data"})
    path = tmp_path / "p.yaml"
    path.write_text(text)
    run_capture(parse_pipeline(text, env={}), until_idle=True)
    done = cli("signal", "-c", str(path), "--source", "pg", "execute-snapshot", "--tables", "public.items",
               "--filter", "id > 100", "--id", "cli-1")
    assert done.returncode == 0, done.stderr
    assert "signal cli-1 (execute-snapshot) written to signal table public.dbz_signal" in done.stdout
    with psycopg.connect(pg_db) as conn:
        row = conn.execute("SELECT type, data FROM dbz_signal WHERE id = 'cli-1'").fetchone()
    assert row[0] == "execute-snapshot" and orjson.loads(row[1]) == {
        "data-collections": ["public.items"], "type": "incremental",
        "additional-conditions": [{"data-collection": "public.items", "filter": "id > 100"}]}
    run_capture(parse_pipeline(text, env={}), until_idle=True)
    assert sorted(r["v"]["after"]["id"] for r in incremental_rows(root)) == list(range(101, 121))


def test_signal_command_file_channel_and_usage_errors(tmp_path):
    file = tmp_path / "signals.jsonl"
    text = (f"pipeline: t\nlakehouse: {{root: \"{tmp_path}/lake\"}}\nsources:\n  - name: pg\n    connector: postgres\n"
            "    connection: {host: 127.0.0.1, port: 1, database: d, user: u}\n"
            f"    options: {{signal.enabled.channels: file, signal.file: \"{file}\"}}\n")
    path = tmp_path / "p.yaml"
    path.write_text(text)
    done = cli("signal", "-c", str(path), "--source", "pg", "stop-snapshot", "--tables", 'public."a.b"', "--id", "s")
    assert done.returncode == 0, done.stderr
    assert orjson.loads(file.read_text()) == {"id": "s", "type": "stop-snapshot",
                                              "data": {"type": "incremental", "data-collections": ['public."a.b"']}}
    bad = cli("signal", "-c", str(path), "--source", "pg", "execute-snapshot")
    assert bad.returncode == 2 and "--tables: execute-snapshot needs at least one table" in bad.stderr
    assert "Traceback" not in bad.stderr
    other = cli("signal", "-c", str(path), "--source", "nope", "pause-snapshot")
    assert other.returncode == 2 and "no source named 'nope'" in other.stderr
