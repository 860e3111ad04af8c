"""Capture processes for fault-injection tests: a CLI capture to SIGKILL, and a traced child
capture that SIGKILLs itself at a chosen commit or acknowledgement.

Connector-neutral: the connector-specific parts (which method acknowledges the source, which
one starts streaming, what to write into the database just before streaming) are given by the
caller as ``module:Class.method`` names and a picklable callable. The steps the exactly-once
tests of every connector take are here too: killing a CLI capture mid-snapshot or after a
while (`kill_mid_snapshot`, `kill_after`), running a traced child and recovering
(`run_killed_child`), and naming and killing at every protocol point (`clean_run_points`,
`kill_at_each`).
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
from multiprocessing.context import ForkServerContext
from pathlib import Path
from typing import Any

from tests.support.bronze_rows import read_offsets, topic_committed_since

# -- a capture in a subprocess ---------------------------------------------------------------------


@dataclass
class CaptureProcess:
    """``cdc-lakehouse capture`` in a subprocess, with stdout/stderr in numbered files under ``logs``."""

    config: Path
    logs: Path
    runs: int = 0
    proc: subprocess.Popen[bytes] | None = None
    own_group: bool = False
    """Start it in a process group of its own (`terminate` may then signal the whole group, as a
    terminal's Ctrl-C does)."""

    def start(self, *, until_idle: bool = False) -> CaptureProcess:
        self.runs += 1
        args = [sys.executable, "-m", "pipelines.cli", "-v", "capture", "-c", str(self.config)]
        with self.stdout.open("wb") as out, self.stderr.open("wb") as err:
            self.proc = subprocess.Popen([*args, "--until-idle"] if until_idle else args, stdout=out, stderr=err,
                                         process_group=0 if self.own_group else None)
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

    def start_planned(self) -> CaptureProcess:
        """Start the capture and wait until it printed its plan (it is then past its start-up)."""
        self.start()
        assert self.wait_output("plan:", 60), f"capture did not start:\n{self.tail()}"
        return self

    def kill(self) -> int:
        """SIGKILL the process; returns its exit status (-9 if the kill ended it)."""
        assert self.proc is not None
        if self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGKILL)
        return self.proc.wait(30)

    def terminate(self, sig: int = signal.SIGTERM, timeout: float = 60, *, group: bool = False) -> int:
        """Send ``sig`` (SIGTERM) to the running process (``group``: to its process group, children
        included; needs ``own_group``) and wait for it to end; returns its exit status."""
        assert self.proc is not None and self.proc.poll() is None, f"capture is not running:\n{self.tail()}"
        if group:
            assert self.own_group, "the capture shares the test's process group"
            os.killpg(self.proc.pid, sig)
        else:
            os.kill(self.proc.pid, sig)
        return self.proc.wait(timeout)

    def kill_running(self, during: str = "") -> None:
        """SIGKILL the process, which must still be running (``during``: where, for the message)."""
        status = self.kill()
        assert status == -9, f"capture ended by itself{during} ({status}):\n{self.tail()}"

    def run_until_idle(self, timeout: float = 300) -> CaptureProcess:
        """One more run with ``--until-idle``, which must exit 0 within ``timeout`` seconds."""
        self.start(until_idle=True)
        assert self.proc is not None and self.proc.wait(timeout) == 0, self.tail()
        return self

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


def kill_mid_snapshot(capture: CaptureProcess, root: str, delay: float | None, *, source: str, big_topic: str,
                      timeout: float, interval: float) -> None:
    """Start capture and SIGKILL it ``delay`` seconds after it planned, or (None) once this
    attempt has committed rows of ``big_topic`` (its offsets row included; waiting at most
    ``timeout`` seconds, polling every ``interval``)."""
    last = read_offsets(root, source)
    batch = last[-1]["batch"] if last else 0
    capture.start_planned()
    if delay is None:
        assert wait_until(lambda: topic_committed_since(root, source, big_topic, batch), timeout, interval), \
            capture.tail()
    else:
        time.sleep(delay)
    capture.kill_running(" during the snapshot")


def kill_after(capture: CaptureProcess, delay: float) -> None:
    """Start the capture unless it is running, let it run ``delay`` seconds, then SIGKILL it."""
    if not capture.running:
        capture.start_planned()
    time.sleep(delay)
    capture.kill_running()


# -- deterministic kills inside a child process ----------------------------------------------------


Trace = list[tuple[str, int, str]]
"""The ``(kind, n, detail)`` lines a traced child wrote (see `TracePlan`)."""


@dataclass(frozen=True)
class TracePlan:
    """Where a traced child capture kills itself, and what it does when streaming starts.

    Attributes:
        trace: a file that gets one line per bronze write (``write <n> <table path>``: a Delta
            commit), per row group staged ahead of its commit (``stage <n> <table path>``), per
            source acknowledgement (``ack <n> <argument>``) and ``stream`` when streaming starts.
        ack: the method whose return is an acknowledgement (``module:Class.method``).
        stream: the session's ``stream(until_idle=...)`` generator method (``module:Class.method``).
        after_write: SIGKILL right after the Nth Delta commit of ``bronze.writer`` returns.
        after_stage: SIGKILL right after the Nth staged row group is written.
        after_ack: SIGKILL right after the Nth ``ack`` call returns.
        before_offsets: SIGKILL right before the Nth commit to the offsets table (every data
            commit of that batch made, its offset not; this point writes no trace line).
        before_stream: run (in the child) just before streaming starts, e.g. a workload; must be
            picklable (a module-level function or a ``functools.partial`` of one).
    """

    trace: str
    ack: str
    stream: str
    after_write: int = 0
    after_stage: int = 0
    after_ack: int = 0
    before_offsets: int = 0
    before_stream: Callable[[], None] | None = None


def trace_plan(trace: str, kind: str = "", n: int = 0, *, ack: str, stream: str,
               before_stream: Callable[[], None] | None = None) -> TracePlan:
    """A plan that kills the child right after the ``n``-th ``kind`` (``write``, ``stage`` or
    ``ack``) point; ``kind`` empty: an uninterrupted run."""
    return TracePlan(trace, ack=ack, stream=stream, after_write=n if kind == "write" else 0,
                     after_stage=n if kind == "stage" else 0, after_ack=n if kind == "ack" else 0,
                     before_stream=before_stream)


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

    from deltalake import DeltaTable

    import bronze.writer as writer_mod
    from bronze.data_files import OpenDataFile
    from pipelines.capture import run_capture
    from pipelines.config import parse_pipeline

    fd = os.open(plan.trace, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    counts = {"write": 0, "stage": 0, "ack": 0}
    offsets_commits = 0

    def note(kind: str, text: str = "", kill_at: int = 0) -> None:
        counts[kind] = counts.get(kind, 0) + 1
        os.write(fd, f"{kind} {counts[kind]} {text}\n".encode())
        if counts[kind] == kill_at:
            os.kill(os.getpid(), signal.SIGKILL)

    ack_cls, ack_name = _resolve(plan.ack)
    stream_cls, stream_name = _resolve(plan.stream)
    real_write = writer_mod.write_deltalake  # type: ignore[attr-defined]
    real_create = writer_mod.create_table_with_add_actions  # type: ignore[attr-defined]
    real_transaction = DeltaTable.create_write_transaction
    real_append = OpenDataFile.append
    real_ack, real_stream = getattr(ack_cls, ack_name), getattr(stream_cls, stream_name)

    def table_name(target: Any) -> str:
        path = target if isinstance(target, str) else str(target.table_uri)
        return path.rstrip("/").rsplit("/bronze/", maxsplit=1)[-1]

    def write(target: Any, *args: Any, **kwargs: Any) -> None:
        nonlocal offsets_commits
        if plan.before_offsets and table_name(target).endswith("/offsets"):
            offsets_commits += 1
            if offsets_commits == plan.before_offsets:
                os.kill(os.getpid(), signal.SIGKILL)
        real_write(target, *args, **kwargs)
        note("write", table_name(target), plan.after_write)

    def create(target: str, *args: Any, **kwargs: Any) -> None:
        real_create(target, *args, **kwargs)
        note("write", table_name(target), plan.after_write)

    def transaction(self: DeltaTable, *args: Any, **kwargs: Any) -> None:
        real_transaction(self, *args, **kwargs)
        note("write", table_name(self), plan.after_write)

    def append(self: OpenDataFile, *args: Any, **kwargs: Any) -> None:
        real_append(self, *args, **kwargs)
        note("stage", table_name(self.location.folder), plan.after_stage)

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
    writer_mod.create_table_with_add_actions = create  # type: ignore[attr-defined,assignment]
    DeltaTable.create_write_transaction = transaction  # type: ignore[method-assign,assignment]
    OpenDataFile.append = append  # type: ignore[method-assign]
    setattr(ack_cls, ack_name, ack)
    setattr(stream_cls, stream_name, stream)
    run_capture(parse_pipeline(pipeline_text, env={}), until_idle=True)


def run_killed_child(ctx: ForkServerContext, pipeline_text: str, plan: TracePlan, *, applied: Callable[[], bool],
                     apply: Callable[[], None], timeout: float = 120) -> tuple[int | None, Trace]:
    """Run `traced_capture` with ``plan`` in a child process of ``ctx``, then a normal
    ``run_capture(until_idle=True)`` in this process; if the child died before it applied its
    workload (killed during the snapshot: ``applied()`` is False), ``apply()`` it and capture
    again. Returns the child's exit code and its trace.

    Raises:
        AssertionError: the child did not end within ``timeout`` seconds.
    """
    from pipelines.capture import run_capture
    from pipelines.config import parse_pipeline

    child = ctx.Process(target=traced_capture, args=(pipeline_text, plan))
    child.start()
    child.join(timeout)
    if child.is_alive():
        child.kill()
        child.join()
        raise AssertionError(f"the child capture (killed after write {plan.after_write}, stage "
                             f"{plan.after_stage} or ack {plan.after_ack}) hung: see {plan.trace}")
    run_capture(parse_pipeline(pipeline_text, env={}), until_idle=True)
    if not applied():
        apply()
        run_capture(parse_pipeline(pipeline_text, env={}), until_idle=True)
    return child.exitcode, read_trace(plan.trace)


def read_trace(path: str) -> Trace:
    """The ``(kind, n, detail)`` lines a child wrote; see `TracePlan`."""
    out = []
    for line in Path(path).read_text().splitlines():
        kind, n, *rest = line.split(" ", 2)
        out.append((kind, int(n), rest[0] if rest else ""))
    return out


@dataclass
class KillPoint:
    """One place to kill at: the Nth bronze write or source acknowledgement, and what it is."""

    kind: str  # "write", "stage" or "ack"
    n: int
    phase: str  # "snapshot" or "stream"
    what: str


SLOT_ACKNOWLEDGED = "slot acknowledged, before the next batch"
"""What an ``ack`` point means for PostgreSQL (the replication slot's flush position moves)."""


def kill_points(trace: Trace, *, acknowledged: str = SLOT_ACKNOWLEDGED) -> list[KillPoint]:
    """Name every write and acknowledgement of an uninterrupted run by its protocol position.

    ``acknowledged`` describes an ``ack`` point (what acknowledging means for the connector).
    """
    points, phase = [], "snapshot"
    for i, (kind, n, detail) in enumerate(trace):
        if kind == "stream":
            phase = "stream"
        elif kind == "ack":
            points.append(KillPoint("ack", n, phase, acknowledged))
        elif kind == "stage":
            points.append(KillPoint("stage", n, phase, f"rows of {detail} staged, before their commit"))
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


KillRun = Callable[[str, int], tuple[int | None, Trace, list[str]]]
"""One kill scenario: killed at the ``n``-th ``kind`` point (``""``: not killed), then
restarted; returns the child's exit code, its trace and the exactly-once problems found."""


def clean_run_points(run: KillRun, *, acknowledged: str = SLOT_ACKNOWLEDGED) -> tuple[Trace, list[KillPoint]]:
    """The trace and the kill points of an uninterrupted run, which must itself be exactly once
    and pass every kind of point."""
    code, trace, problems = run("", 0)
    assert code == 0 and problems == [], (code, problems)
    points = kill_points(trace, acknowledged=acknowledged)
    whats = {p.what.split(" (")[0].split(" committed")[0] for p in points}
    assert {"offsets", "all data", "schema history", acknowledged} <= whats, whats
    assert any("before the batch's next table" in p.what for p in points), points
    return trace, points


def kill_at_each(run: KillRun, points: list[KillPoint], phase: str, kind: str) -> None:
    """Kill a run at every ``kind`` point of ``phase`` (at least three); every run must die there
    and leave bronze exactly once."""
    chosen = [p for p in points if p.phase == phase and p.kind == kind]
    assert len(chosen) >= 3, points
    failures = []
    for point in chosen:
        code, _, problems = run(kind, point.n)
        assert code == -9, f"{kind} {point.n}: the child was not killed there (exit code {code})"
        failures += [f"killed after {kind} {point.n} [{point.what}]: {p}" for p in problems]
    assert not failures, f"{len(chosen)} kill points:\n" + "\n".join(failures)
