"""A local test server as a child process in its own process group (the local S3 and Azure
servers): started with its output in a log file, stopped with its whole group."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

__all__ = ["start_server_process", "stop_server_process"]


def start_server_process(args: Sequence[str], log_path: Path, *, env: Mapping[str, str] | None = None,
                         cwd: Path | None = None) -> subprocess.Popen[bytes]:
    """Start ``args`` in a new session (so `stop_server_process` reaches its children), stdout and
    stderr appended to ``log_path``, no stdin."""
    with log_path.open("ab") as log:
        return subprocess.Popen(list(args), stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                env=None if env is None else dict(env), cwd=cwd, start_new_session=True)


def stop_server_process(proc: subprocess.Popen[bytes] | None) -> None:
    """SIGTERM the process group, a short grace (the server's data is thrown away), then SIGKILL."""
    if proc is None or proc.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=3)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=15)
