"""delta-rs's allocator settings: the CLI sets them before delta-rs loads, and jemalloc reads them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from bronze.delta_allocator import DELTA_ALLOCATOR_ENV

REPO = Path(__file__).resolve().parents[2]
VAR = "_RJEM_MALLOC_CONF"
# the CLI's entry (a command that fails on a missing file, before or after loading delta-rs), then a
# delta-rs write in the same process: jemalloc starts with whatever the environment then holds
SCRIPT = ("import json, os, sys, tempfile\n"
          "import pyarrow as pa\n"
          "from pipelines.cli import main\n"
          "code = main(['validate', '-c', '/nonexistent/pipeline.yaml'])\n"
          "import deltalake\n"
          "deltalake.write_deltalake(tempfile.mkdtemp(), pa.table({'a': [1]}))\n"
          "print(json.dumps({'code': code, 'conf': os.environ.get('_RJEM_MALLOC_CONF')}))\n")


def _run(**env: str) -> tuple[dict[str, object], str]:
    child = {k: v for k, v in os.environ.items() if k != VAR}
    child.update(env, PYTHONPATH=str(REPO))
    out = subprocess.run([sys.executable, "-c", SCRIPT], env=child, capture_output=True, text=True, timeout=120,
                         cwd=REPO)
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout.strip().splitlines()[-1]), out.stderr


def test_the_cli_gives_delta_rs_its_allocator_settings_and_jemalloc_accepts_them():
    result, stderr = _run()
    assert result["conf"] == DELTA_ALLOCATOR_ENV[VAR] == "dirty_decay_ms:0,muzzy_decay_ms:0"
    assert "<jemalloc>" not in stderr  # jemalloc read them without complaint


def test_a_users_setting_is_kept_and_is_what_jemalloc_reads():
    result, stderr = _run(**{VAR: "dirty_decay_ms:x"})  # a bad value: jemalloc says so when it reads it
    assert result["conf"] == "dirty_decay_ms:x"
    assert "<jemalloc>: Invalid conf value: dirty_decay_ms:x" in stderr
