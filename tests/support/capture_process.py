"""Capture processes for fault-injection tests: a CLI capture to SIGKILL, and a traced child
capture that SIGKILLs itself at a chosen commit or acknowledgement.

Connector-neutral: the connector-specific parts (which method acknowledges the source, which
one starts streaming, what to write into the database just before streaming) are given by the
caller as ``module:Class.method`` names and a picklable callable.
"""

from __future__ import annotations

import importlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# -- a capture in a subprocess ---------------------------------------------------------------------


@dataclass
class CaptureProcess:
    """``cdc-lakehouse capture`` in a subprocess, with stdout/stderr in numbered files under ``logs``."""

    config: Path
    logs: Path
    runs: int = 0
    proc: subprocess.Popen[bytes] | None = None

    def start(self, *, until_idle: bool = False) -> CaptureProcess:
        self.runs += 1
        args = [sys.executable, "-m", "pipelines.cli", "-v", "capture", "-c", str(self.config)]
        with self.stdout.open("wb") as out, self.stderr.open("wb") as err:
            self.proc = subprocess.Popen([*args, "--until-idle"] if until_idle else args, stdout=out, stderr=err)
        return self

    @property
    def stdout(self) -> Path:
        return self.logs / f"capture-{self.runs}.out"

    @property
    def stderr(self) -> Path:
        return self.logs / f"capture-{self.runs}.err"

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def wait_output(self, text: str, timeout: float) -> bool:
        """Wait until stdout contains ``text``; False on timeout or if the process ended first."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if text in self.stdout.read_text(errors="replace"):
                return True
            if self.proc is None or self.proc.poll() is not None:
                return False
            time.sleep(0.02)
        return False

    def kill(self) -> int:
        """SIGKILL the process; returns its exit status (-9 if the kill ended it)."""
        assert self.proc is not None
        if self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGKILL)
        return self.proc.wait(30)

    def tail(self) -> str:
        return f"stdout: {self.stdout.read_text()[-1500:]}\nstderr: {self.stderr.read_text()[-3000:]}"


def log_commits(table_dir: str) -> int:
    """How many commits a Delta table has, from its log directory listing (cheap to poll)."""
    try:
        names = os.listdir(os.path.join(table_dir, "_delta_log"))
    except FileNotFoundError:
        return 0
    return sum(1 for n in names if len(n) == 25 and n.endswith(".json") and n[:20].isdigit())


def wait_until(predicate: Callable[[], bool], timeout: float, interval: float = 0.05) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(interval)
    return predicate()


# -- deterministic kills inside a child process ----------------------------------------------------


@dataclass(frozen=True)
class TracePlan:
    """Where a traced child capture kills itself, and what it does when streaming starts.

    Attributes:
        trace: a file that gets one line per bronze write (``write <n> <table path>``), per
            source acknowledgement (``ack <n> <argument>``) and ``stream`` when streaming starts.
        ack: the method whose return is an acknowledgement (``module:Class.method``).
        stream: the session's ``stream(until_idle=...)`` generator method (``module:Class.method``).
        after_write: SIGKILL right after the Nth ``write_deltalake`` of ``bronze.writer`` returns.
        after_ack: SIGKILL right after the Nth ``ack`` call returns.
        before_stream: run (in the child) just before streaming starts, e.g. a workload; must be
            picklable (a module-level function or a ``functools.partial`` of one).
    """

    trace: str
    ack: str
    stream: str
    after_write: int = 0
    after_ack: int = 0
    before_stream: Callable[[], None] | None = None


def _resolve(name: str) -> tuple[type, str]:
    module, _, attr = name.partition(":")
    cls_name, _, method = attr.partition(".")
    return getattr(importlib.import_module(module), cls_name), method


def traced_capture(pipeline_text: str, plan: TracePlan) -> None:
    """Child-process entry: ``run_capture(until_idle=True)`` with the kill points of ``plan``.

    Table commits of a batch are made serial (one writer thread) so the Nth write is the same
    table in every run. Nothing in the package is changed; only this process is patched.
    """
    from concurrent.futures import ThreadPoolExecutor

    import bronze.writer as writer_mod
    from pipelines.capture import run_capture
    from pipelines.config import parse_pipeline

    fd = os.open(plan.trace, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    counts = {"write": 0, "ack": 0}

    def note(kind: str, text: str = "", kill_at: int = 0) -> None:
        counts[kind] = counts.get(kind, 0) + 1
        os.write(fd, f"{kind} {counts[kind]} {text}\n".encode())
        if counts[kind] == kill_at:
            os.kill(os.getpid(), signal.SIGKILL)

    ack_cls, ack_name = _resolve(plan.ack)
    stream_cls, stream_name = _resolve(plan.stream)
    real_write = writer_mod.write_deltalake  # type: ignore[attr-defined]
    real_ack, real_stream = getattr(ack_cls, ack_name), getattr(stream_cls, stream_name)

    def write(target: Any, *args: Any, **kwargs: Any) -> None:
        real_write(target, *args, **kwargs)
        path = target if isinstance(target, str) else str(target.table_uri)
        note("write", path.rstrip("/").rsplit("/bronze/", maxsplit=1)[-1], plan.after_write)

    def ack(self: Any, *args: Any, **kwargs: Any) -> Any:
        out = real_ack(self, *args, **kwargs)
        note("ack", " ".join(str(a).replace("\n", " ") for a in args), plan.after_ack)
        return out

    def stream(self: Any, *, until_idle: bool) -> Iterator[Any]:
        if plan.before_stream is not None:
            plan.before_stream()
        note("stream")
        yield from real_stream(self, until_idle=until_idle)

    writer_mod.ThreadPoolExecutor = lambda _n=1: ThreadPoolExecutor(1)  # type: ignore[attr-defined,assignment]
    writer_mod.write_deltalake = write  # type: ignore[attr-defined,assignment]
    setattr(ack_cls, ack_name, ack)
    setattr(stream_cls, stream_name, stream)
    run_capture(parse_pipeline(pipeline_text, env={}), until_idle=True)


def read_trace(path: str) -> list[tuple[str, int, str]]:
    """The ``(kind, n, detail)`` lines a child wrote; see `TracePlan`."""
    out = []
    for line in Path(path).read_text().splitlines():
        kind, n, *rest = line.split(" ", 2)
        out.append((kind, int(n), rest[0] if rest else ""))
    return out


@dataclass
class KillPoint:
    """One place to kill at: the Nth bronze write or source acknowledgement, and what it is."""

    kind: str  # "write" or "ack"
    n: int
    phase: str  # "snapshot" or "stream"
    what: str


def kill_points(trace: list[tuple[str, int, str]], *,
                acknowledged: str = "slot acknowledged, before the next batch") -> list[KillPoint]:
    """Name every write and acknowledgement of an uninterrupted run by its protocol position.

    ``acknowledged`` describes an ``ack`` point (what acknowledging means for the connector).
    """
    points, phase = [], "snapshot"
    for i, (kind, n, detail) in enumerate(trace):
        if kind == "stream":
            phase = "stream"
        elif kind == "ack":
            points.append(KillPoint("ack", n, phase, acknowledged))
        else:
            following = next((d for k, _, d in trace[i + 1:] if k == "write"), "")
            if detail.endswith("/offsets"):
                what = "offsets committed, before the source acknowledgement (if any) and the next batch"
            elif detail.endswith("/schemas"):
                what = "schema history committed, before the data"
            elif following.endswith("/offsets"):
                what = f"all data committed ({detail}), before the offsets"
            else:
                what = f"{detail} committed, before the batch's next table {following}"
            points.append(KillPoint("write", n, phase, what))
    return points
