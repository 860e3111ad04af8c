"""``cdc-lakehouse signal`` for a MariaDB source: into its signal table (then a filtered incremental
snapshot), or its signal file."""

from __future__ import annotations

import os
import subprocess
import sys

import orjson
import pymysql
import pytest

from pipelines.capture import run_capture
from pipelines.config import parse_pipeline
from tests.support.incremental_mysql import incremental_rows, pipeline_text, setup_items, topic

pytestmark = [pytest.mark.integration, pytest.mark.mariadb]


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pipelines.cli", *args], capture_output=True, text=True,
                          env=dict(os.environ), timeout=120)


def test_signal_command_starts_a_filtered_incremental_snapshot(mariadb_db, tmp_path):
    root, name = str(tmp_path / "lake"), mariadb_db["database"]
    setup_items(mariadb_db, 120)
    text = pipeline_text(root, mariadb_db, **{"snapshot.mode": "no_data"})
    path = tmp_path / "p.yaml"
    path.write_text(text)
    run_capture(parse_pipeline(text, env={}), until_idle=True)
    done = cli("signal", "-c", str(path), "--source", "my", "execute-snapshot", "--tables", f"{name}.items",
               "--filter", "id > 100", "--id", "cli-1")
    assert done.returncode == 0, done.stderr
    assert f"signal cli-1 (execute-snapshot) written to signal table {name}.dbz_signal" in done.stdout
    conn = pymysql.connect(**mariadb_db)
    try:
        with conn.cursor() as cur:
            cur.execute("SELECT type, data FROM dbz_signal WHERE id = 'cli-1'")
            row = cur.fetchone()
    finally:
        conn.close()
    assert row[0] == "execute-snapshot" and orjson.loads(row[1]) == {
        "data-collections": [f"{name}.items"], "type": "incremental",
        "additional-conditions": [{"data-collection": f"{name}.items", "filter": "id > 100"}]}
    run_capture(parse_pipeline(text, env={}), until_idle=True)
    assert sorted(r["v"]["after"]["id"] for r in incremental_rows(root, topic(mariadb_db))) == list(range(101, 121))


def test_signal_command_writes_the_file_channel_of_a_mariadb_source(tmp_path):
    file = tmp_path / "signals.jsonl"
    text = (f"pipeline: t\nlakehouse: {{root: \"{tmp_path}/lake\"}}\nsources:\n  - name: my\n    connector: mariadb\n"
            "    connection: {host: 127.0.0.1, port: 1, user: u}\n"
            f"    options: {{database.server.id: 5473, signal.enabled.channels: file, signal.file: \"{file}\"}}\n")
    path = tmp_path / "p.yaml"
    path.write_text(text)
    done = cli("signal", "-c", str(path), "--source", "my", "pause-snapshot", "--id", "s")
    assert done.returncode == 0, done.stderr
    assert orjson.loads(file.read_text()) == {"id": "s", "type": "pause-snapshot", "data": None}
    bad = cli("signal", "-c", str(path), "--source", "my", "log")
    assert bad.returncode == 2 and "--message: log needs a message" in bad.stderr and "Traceback" not in bad.stderr
