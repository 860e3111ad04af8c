"""What every capture benchmark shares: the run context, rates, best-of-N, our connector's runs
inside a scenario, a scenario's result, and measured subprocesses.

The PostgreSQL bench (`bench.capture_bench`) and the MySQL/MariaDB bench (`bench.mysql_bench`)
both run each reader N times and keep the fastest run (start->last), with every run's times and
the largest peak RSS of all runs, in one entry per reader. An entry is a dict holding at least
``start_to_last_s``, and after `rate` also ``records`` and ``events_per_s``.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, TypeVar

from bench.ours import CaptureTarget, run_ours, summarize_ours

Say = Callable[[str], None]
"""Prints one progress line of the bench (with the time since the bench started)."""


@dataclass
class RunContext:
    """The settings every scenario of a run needs.

    Attributes:
        workdir: scratch directory (server data, bronze roots, child logs).
        results_dir: where the JSON results and profile dumps go.
        say: progress output.
        profile: also run our connector under cProfile.
        repeat: how many times every reader runs (the fastest run is reported).
        stamp: the run's time stamp, part of every file name it writes.
    """

    workdir: Path
    results_dir: Path
    say: Say
    profile: bool = False
    repeat: int = 1
    stamp: str = field(default_factory=lambda: time.strftime("%Y%m%d-%H%M%S"))

    def profile_path(self, key: str) -> Path | None:
        """Where the cProfile dump of scenario ``key`` goes, or None without ``--profile``."""
        return self.results_dir / f"profile-{self.stamp}-{key}.prof" if self.profile else None


def timed(fn: Callable[[], Any]) -> tuple[Any, float]:
    """``fn()`` and the seconds it took."""
    started = time.monotonic()
    out = fn()
    return out, time.monotonic() - started


def rate(entry: dict[str, Any], records: int) -> dict[str, Any]:
    """A copy of ``entry`` with ``records`` and the rates: start->last and, if known, first->last."""
    entry = dict(entry)
    entry["records"] = records
    entry["events_per_s"] = records / entry["start_to_last_s"]
    if "first_to_last_s" in entry:
        entry["events_per_s_first_to_last"] = records / max(entry["first_to_last_s"], 1e-9)
    return entry


def best_of(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """The fastest run (start->last), with every run's times and the largest peak RSS of all."""
    best = dict(min(runs, key=lambda r: r["start_to_last_s"]))
    best["runs"] = [{k: r.get(k) for k in ("start_to_last_s", "first_to_last_s", "peak_rss_mb")} for r in runs]
    rss = [r["peak_rss_mb"] for r in runs if r.get("peak_rss_mb") is not None]
    if rss:
        best["peak_rss_mb"] = max(rss)
    return best


def check_bronze(entry: dict[str, Any], rows: int, say: Say) -> None:
    """Say whether bronze holds the expected rows after one of our runs (a warning if not)."""
    if entry["bronze_rows"] != rows:
        say(f"  WARNING: bronze holds {entry['bronze_rows']:,} rows, expected {rows:,}")
    else:
        say(f"  bronze holds {rows:,} rows; {entry['events_per_s']:,.0f} events/s, "
            f"peak RSS {entry['peak_rss_mb']:,.0f} MB")


Db = TypeVar("Db")


@contextmanager
def scenario_database(ctx: RunContext, key: str, title: str, create: Callable[[str], Db],
                      drop: Callable[[Db], object]) -> Iterator[Db]:
    """Announce scenario ``key`` and give it a database of its own, ``create("bench_<key>")``,
    which is dropped when the scenario ends."""
    ctx.say(f"scenario {key}: {title}")
    db = create(f"bench_{key}")
    try:
        yield db
    finally:
        drop(db)


def scenario_result(key: str, title: str, kind: str, records: int, runs: Mapping[str, list[dict[str, Any]]],
                    **facts: Any) -> dict[str, Any]:
    """A scenario's entry in the results: what it ran, its ``facts`` (load time, sizes, ...) and
    the best run (`best_of`) of every reader that ran."""
    return {"key": key, "title": title, "kind": kind, "records": records, **facts,
            "systems": {name: best_of(r) for name, r in runs.items() if r}}


# -- our connector inside a scenario -------------------------------------------------------------

STREAM_STEPS = ("our connector, run_capture(until_idle=True) into bronze",
                "our connector's session alone (records counted, no bronze)")
"""What a streaming round of ours announces: into bronze, then the session alone."""

SNAPSHOT_STEPS = ("our connector, snapshot.mode=initial, run_capture(until_idle=True) into bronze",
                  "our connector's snapshot alone (records counted, no bronze)")
"""What a snapshot round of ours announces: into bronze, then the snapshot alone."""


def prime_ours(ctx: RunContext, targets: Sequence[CaptureTarget], stores: str) -> None:
    """Every pipeline captures the still-empty table once, storing what it ``stores``, so that
    its later run streams exactly the changes made after this."""
    ctx.say(f"  setup: our connector snapshots the empty table ({stores}) x{len(targets)}")
    for target in targets:
        run_ours(target, expected=0)


def run_ours_round(ctx: RunContext, round_: str, runs: dict[str, list[dict[str, Any]]], ours: CaptureTarget,
                   source: CaptureTarget | None, rows: int, *, steps: tuple[str, str] = STREAM_STEPS,
                   note: Callable[[dict[str, Any]], None] | None = None) -> None:
    """One round of ours: into bronze (checked with `check_bronze`, then ``note``d), then the
    session alone if there is a ``source`` pipeline; appended to ``runs["ours"]`` and
    ``runs["ours_source"]``. ``round_`` prefixes the steps (``run 1/3:``)."""
    ctx.say(f"  {round_} {steps[0]}")
    runs["ours"].append(summarize_ours(run_ours(ours, expected=rows), rows))
    check_bronze(runs["ours"][-1], rows, ctx.say)
    if note is not None:
        note(runs["ours"][-1])
    if source is not None:
        ctx.say(f"  {round_} {steps[1]}")
        runs["ours_source"].append(summarize_ours(run_ours(source, expected=rows, source_only=True), rows))


def profile_ours(ctx: RunContext, target: CaptureTarget, rows: int, path: Path) -> str:
    """Run ours once more under cProfile, the dump going to ``path``; returns the path as text."""
    ctx.say(f"  profiling our connector (cProfile) -> {path}")
    run_ours(target, expected=rows, profile=path)
    return str(path)


class CommandFailedError(RuntimeError):
    """A measured command exited with an error."""


GNU_TIME = Path("/usr/bin/time")
"""GNU time, which reports a command's own peak RSS (``%M``)."""


def run_measured(cmd: Sequence[str], *, stdout: IO[bytes] | None = None,
                 env: dict[str, str] | None = None) -> dict[str, Any]:
    """Run ``cmd`` to completion; its wall time and, with GNU time installed, its own peak RSS.

    ``stdout`` defaults to /dev/null; stderr is kept for the error message. Returns
    ``start_to_last_s`` (process start to exit) and ``peak_rss_mb`` (None without
    ``/usr/bin/time``). The RSS comes from GNU time and not from ``wait4`` on our own child:
    a child spawned by Python (vfork) inherits the parent's peak RSS across ``exec``, so
    ``wait4`` would report the bench's own size for any tool smaller than it.

    Raises:
        CommandFailedError: the command exited with a non-zero status.
    """
    with tempfile.TemporaryDirectory(prefix="cdc-bench-cmd-") as tmp, open(os.devnull, "wb") as devnull:
        rss_file = Path(tmp) / "rss"
        wrapped = [str(GNU_TIME), "-f", "%M", "-o", str(rss_file), *cmd] if GNU_TIME.exists() else list(cmd)
        started = time.monotonic()
        proc = subprocess.run(wrapped, stdout=stdout or devnull, stderr=subprocess.PIPE, env=env)
        ended = time.monotonic()
        if proc.returncode != 0:
            raise CommandFailedError(f"{Path(cmd[0]).name} exited with {proc.returncode}: "
                                     f"{proc.stderr.decode(errors='replace').strip()[-2000:]}")
        rss_kb = rss_file.read_text().split() if rss_file.exists() else []
    return {"start_to_last_s": ended - started, "peak_rss_mb": int(rss_kb[-1]) / 1024 if rss_kb else None}
