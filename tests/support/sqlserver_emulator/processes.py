"""Capture processes on the CDC emulator, and the emulated tables' rows (for end-to-end tests)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import psycopg


def start_capture(config: Path, logs: Path, run: int, *, until_idle: bool) -> subprocess.Popen[bytes]:
    """``cdc-lakehouse -v capture`` of ``config`` through the emulator's pyodbc shim, as a child
    process; its output goes to ``logs/capture-<run>.out`` / ``.err``."""
    args = [sys.executable, "-m", "tests.support.sqlserver_emulator.capture", "-v", "capture", "-c", str(config)]
    with (logs / f"capture-{run}.out").open("wb") as out, (logs / f"capture-{run}.err").open("wb") as err:
        return subprocess.Popen([*args, "--until-idle"] if until_idle else args, stdout=out, stderr=err)


def capture_log_tail(logs: Path, run: int) -> str:
    """The end of run ``run``'s log (for assertion messages)."""
    return (logs / f"capture-{run}.err").read_text()[-3000:]


def customer_rows(dsn: str, columns: Sequence[str]) -> list[tuple[Any, ...]]:
    """``dbo.customers``'s rows (``columns``) in id order."""
    with psycopg.connect(dsn) as conn:
        return [tuple(r) for r in conn.execute(f"SELECT {', '.join(columns)} FROM dbo.customers ORDER BY id")]
