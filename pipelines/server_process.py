"""A local test server as a child process in its own process group (the local S3, Azure and GCS
servers): started with its output in a log file, waited for until a probe succeeds, stopped with
its whole group."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

__all__ = ["start_server_process", "stop_server_process", "wait_until_ready"]


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


def wait_until_ready(proc: subprocess.Popen[bytes], probe: Callable[[], None], *, name: str, what: str,
                     log_path: Path, timeout: float, error: type[Exception], interval: float = 0.25) -> None:
    """Call ``probe`` until it returns (any exception: not ready yet) or ``timeout`` seconds pass.

    Raises:
        error: the process ``name`` exited, or the local ``what`` server was not ready in time
            (both name ``log_path``).
    """
    deadline = time.monotonic() + timeout
    last: Exception | None = None
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise error(f"{name} exited with {proc.returncode}; see {log_path}")
        try:
            probe()
            return
        except Exception as exc:  # not listening yet (or the server's own set-up not finished)
            last = exc
            time.sleep(interval)
    raise error(f"the local {what} server did not become ready in {timeout:.0f}s ({type(last).__name__}); "
                f"see {log_path}")
