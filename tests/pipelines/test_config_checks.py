"""Issue 14: pipeline files that used to hang, pass validation wrongly or demand unused secrets."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

SOURCE = """  - name: a
    connector: postgres
    connection: {host: h, database: d, user: u}
"""


def write(tmp_path: Path, text: str) -> str:
    path = tmp_path / "pipeline.yaml"
    path.write_text(text)
    return str(path)


def run_cli(*args: str, env: dict[str, str] | None = None, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pipelines.cli", *args], capture_output=True, text=True,
                          env={**os.environ, **(env or {})}, timeout=timeout)


# --- the hang --------------------------------------------------------------------------------

@pytest.mark.parametrize("text, key", [
    ("pipeline: x\nlakehous: {root: ./lake}\nsources:\n" + SOURCE, "lakehouse"),
    ("pipeline: x\nlakehouse: {root: ./lake}\n", "sources"),
    ("lakehouse: {root: ./lake}\nsources:\n" + SOURCE, "pipeline"),
], ids=["lakehous", "no-sources", "no-pipeline"])
@pytest.mark.parametrize("command", [["validate"], ["capture", "--until-idle"], ["silver", "--once"], ["status"],
                                     ["run"]], ids=lambda c: c[0])
def test_missing_top_level_key_exits_2_instead_of_hanging(tmp_path, text, key, command):
    path = write(tmp_path, text)
    proc = run_cli(command[0], "-c", path, *command[1:], timeout=60)
    assert proc.returncode == 2, proc.stderr
    assert f"{key}: required key is missing" in proc.stderr
