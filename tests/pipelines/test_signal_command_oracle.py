"""``cdc-lakehouse signal`` for an Oracle source: the file channel through the command line, and a
database that cannot be reached (exit 1, the source named, no password, no traceback). The
signal-table insert is proven end to end by the blocking snapshot test
(`tests/pipelines/test_oracle_blocking_snapshot.py`): the row it writes starts the snapshot."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import orjson


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pipelines.cli", *args], capture_output=True, text=True,
                          env=dict(os.environ), timeout=120)


def _pipeline(tmp_path: Path, options: str) -> Path:
    path = tmp_path / "p.yaml"
    path.write_text(f"pipeline: t\nlakehouse: {{root: \"{tmp_path}/lake\"}}\nsources:\n  - name: ora\n"
                    "    connector: oracle\n"
                    "    connection: {host: 127.0.0.1, port: 1, database: ORCLPDB1, user: c##dbz,\n"
                    "                 password: s3cr3t-pw}\n"
                    f"    options: {{{options}}}\n")
    return path


def test_signal_command_writes_an_oracle_blocking_snapshot_to_the_signal_file(tmp_path: Path) -> None:
    file = tmp_path / "signals.jsonl"
    path = _pipeline(tmp_path, f"signal.enabled.channels: file, signal.file: \"{file}\"")
    done = cli("signal", "-c", str(path), "--source", "ora", "execute-snapshot", "--tables",
               "ORCLPDB1.INVENTORY.CUSTOMERS", "--type", "blocking", "--id", "b-1")
    assert done.returncode == 0, done.stderr
    assert f"signal b-1 (execute-snapshot) written to signal file {file}" in done.stdout
    assert orjson.loads(file.read_text()) == {"id": "b-1", "type": "execute-snapshot", "data": {
        "data-collections": ["ORCLPDB1.INVENTORY.CUSTOMERS"], "type": "blocking"}}


def test_signal_command_for_an_oracle_database_out_of_reach(tmp_path: Path) -> None:
    path = _pipeline(tmp_path, "signal.data.collection: ORCLPDB1.INVENTORY.DEBEZIUM_SIGNAL")
    done = cli("signal", "-c", str(path), "--source", "ora", "pause-snapshot")
    assert done.returncode == 1, (done.returncode, done.stderr)
    assert "cannot connect to Oracle" in done.stderr and "Traceback" not in done.stderr
    assert "s3cr3t-pw" not in done.stderr + done.stdout
