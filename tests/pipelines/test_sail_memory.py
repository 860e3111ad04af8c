"""The embedded Sail server's allocator settings: mimalloc itself reports what it runs with."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
START_AND_STOP = ("from pipelines.engine import EngineSpec, create_session, stop_session\n"
                  "stop_session(create_session(EngineSpec()))\n")


def _mimalloc_options(**env: str) -> dict[str, str]:
    """The options mimalloc printed (``MIMALLOC_VERBOSE``) in a process that started a Sail session."""
    child = {k: v for k, v in os.environ.items() if not k.startswith("MIMALLOC_")}
    child.update(env, MIMALLOC_VERBOSE="1", PYTHONPATH=str(REPO))
    out = subprocess.run([sys.executable, "-c", START_AND_STOP], env=child, capture_output=True, text=True,
                         timeout=120, cwd=REPO)
    assert out.returncode == 0, out.stderr[-2000:]
    options: dict[str, str] = {}
    for line in (out.stderr + out.stdout).splitlines():
        if "option '" in line:  # mimalloc: "option 'purge_delay': 0"
            name, value = line.split("option '", 1)[1].split("':", 1)
            options.setdefault(name, value.strip())
    return options


@pytest.mark.spark
def test_sail_returns_freed_memory_at_once():
    options = _mimalloc_options()
    assert options.get("purge_delay") == "0" and options.get("allow_thp") == "0", options


@pytest.mark.spark
def test_a_users_allocator_setting_is_kept():
    options = _mimalloc_options(MIMALLOC_PURGE_DELAY="25")
    assert options.get("purge_delay") == "25" and options.get("allow_thp") == "0", options
