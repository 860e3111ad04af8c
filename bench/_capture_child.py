"""Child process: one `run_capture(config, until_idle=True)` of our connector, timed and measured.

Run as ``python -m bench._capture_child CONFIG.json RESULT.json``. The config holds the pipeline
YAML text, the bronze root, the topic, how many records of that topic the run must commit and
the connector's session class (``"session": "module:Class"``, e.g.
``cdc_sources.mysql.session:MySqlCaptureSession``). Everything is imported before the clock
starts. As ``cdc-lakehouse capture`` does before it calls ``run_capture``, measured runs first
let pyarrow's implicit look for pandas find none (`skip_pandas_probe`), so that pandas is not
imported inside the measured span when the command would not import it at all. The run is
observed from the outside only (no connector code changes): ``BronzeWriter.commit`` and the
session's ``snapshot``/``stream`` iterators are wrapped to take timestamps of the first record
produced and of the commit that makes the expected number of records of the topic durable in
bronze (records of other topics, such as the schema history, are not counted). ``ru_maxrss``
gives the peak resident set of the process. Warnings logged during the run are counted per
logger (``log_warnings``): e.g. python-mysql-replication logs one each time it silently
reconnects the binlog stream (and the server re-sends the events).

With ``"source_only": true`` the child opens the connector's session itself and only counts the
records it yields (no bronze, no acknowledgement): the connector's own speed, bronze excluded.

With ``"profile": PATH`` the run happens under ``cProfile``, in every thread (the bronze writer
commits tables from a thread pool), and the merged statistics are dumped to PATH. Profiled runs
first import what the capture would otherwise import lazily on its first bronze read and write
(``pyarrow.dataset``, and ``pandas``, which delta-rs imports on its first ``write_deltalake``),
so that the profile shows the work, not the import machinery; measured runs do not.
"""

from __future__ import annotations

import cProfile
import importlib
import json
import logging
import os
import pstats
import resource
import sys
import threading
import time
import traceback
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import psutil
from deltalake import DeltaTable

from bronze.schema import topic_path
from bronze.writer import BronzeCommitResult, BronzeWriter
from cdc_sources.spi import ChangeBlock, ChangeRecord, StreamItem
from pipelines.capture import run_capture, validate_sources
from pipelines.config import PipelineConfig, parse_pipeline
from pipelines.coordinator import CaptureResult


@dataclass
class Probe:
    """Timestamps (``time.monotonic``) and counts taken while the capture runs.

    Only records of ``topic`` count towards ``expected`` (all records when it is None).
    """

    expected: int
    topic: str | None = None
    t_call: float = 0.0
    t_phase_called: dict[str, float] = field(default_factory=dict)
    t_first_record: float | None = None
    t_reached: float | None = None
    t_return: float = 0.0
    cpu_call: float = 0.0
    """``time.process_time()`` (CPU seconds of every thread of the process) when ``t_call`` is taken."""
    cpu_reached: float | None = None
    """``time.process_time()`` when ``t_reached`` is taken."""
    written: int = 0
    commits: list[tuple[float, int, float]] = field(default_factory=list)
    stage_busy_s: float = 0.0
    """Time spent staging records outside commits (writing data files ahead of the commit)."""

    def on_commit(self, result: BronzeCommitResult, started: float) -> None:
        """Record a bronze commit: when it returned (s since the call), its records, its duration."""
        now = time.monotonic()
        written = result.records_written if self.topic is None else result.per_topic.get(self.topic, 0)
        self.written += written
        self.commits.append((now - self.t_call, written, now - started))
        if self.t_reached is None and self.written >= self.expected:
            self.t_reached = now
            self.cpu_reached = time.process_time()

    def on_records(self, n: int) -> None:
        """Count records that are not written anywhere (source-only runs)."""
        self.written += n
        if self.t_reached is None and self.written >= self.expected:
            self.t_reached = time.monotonic()
            self.cpu_reached = time.process_time()


def records_in(item: StreamItem, topic: str | None = None) -> int:
    """How many change records a stream item carries (a record, a run of records, a block),
    counting only those of ``topic`` unless it is None."""
    if isinstance(item, ChangeRecord):
        return int(topic is None or item.topic == topic)
    if isinstance(item, list):
        return len(item) if topic is None else sum(1 for r in item if r.topic == topic)
    if isinstance(item, ChangeBlock):
        return len(item) if topic is None or item.topic == topic else 0
    return 0


def session_class(spec: str) -> Any:
    """The class named by ``"module:Class"``."""
    module, _, name = spec.partition(":")
    return getattr(importlib.import_module(module), name)


def install_probe(probe: Probe, session_cls: Any) -> None:
    """Wrap the bronze commit and the session iterators of ``session_cls`` (this process only)."""
    original_commit = BronzeWriter.commit
    original_stage = BronzeWriter.stage
    committing = threading.local()

    def commit(self: BronzeWriter, *args: Any, **kwargs: Any) -> BronzeCommitResult:
        started = time.monotonic()
        committing.active = True
        try:
            result = original_commit(self, *args, **kwargs)
        finally:
            committing.active = False
        probe.on_commit(result, started)
        return result

    def stage(self: BronzeWriter, *args: Any, **kwargs: Any) -> None:
        started = time.monotonic()
        original_stage(self, *args, **kwargs)
        if not getattr(committing, "active", False):  # a commit's own staging counts in the commit
            probe.stage_busy_s += time.monotonic() - started

    BronzeWriter.commit = commit  # type: ignore[method-assign]
    BronzeWriter.stage = stage  # type: ignore[method-assign]
    session_cls.snapshot = _observed(session_cls.snapshot, "snapshot", probe)
    session_cls.stream = _observed(session_cls.stream, "stream", probe)


def _observed(method: Callable[..., Iterator[StreamItem]], phase: str,
              probe: Probe) -> Callable[..., Iterator[StreamItem]]:
    def wrapper(self: Any, *args: Any, **kwargs: Any) -> Iterator[StreamItem]:
        probe.t_phase_called[phase] = time.monotonic()
        for item in method(self, *args, **kwargs):
            if probe.t_first_record is None and records_in(item, probe.topic):
                probe.t_first_record = time.monotonic()
            yield item

    return wrapper


class WarningCounter(logging.Handler):
    """Counts the WARNING (and worse) log records of the run, per logger name."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.counts: dict[str, int] = {}

    def emit(self, record: logging.LogRecord) -> None:
        self.counts[record.name] = self.counts.get(record.name, 0) + 1


class ThreadedProfile:
    """``cProfile`` in the calling thread and in every thread started while it is enabled."""

    def __init__(self) -> None:
        self.main = cProfile.Profile()
        self.others: list[cProfile.Profile] = []

    def _hook(self, frame: Any, event: str, arg: Any) -> None:
        sys.setprofile(None)
        profile = cProfile.Profile()
        self.others.append(profile)
        profile.enable()

    def __enter__(self) -> ThreadedProfile:
        threading.setprofile(self._hook)
        self.main.enable()
        return self

    def __exit__(self, *exc: object) -> None:
        self.main.disable()
        threading.setprofile(None)

    def dump(self, path: str) -> None:
        stats = pstats.Stats(self.main)
        for profile in self.others:
            profile.disable()
            stats.add(profile)
        stats.dump_stats(path)


class RssSampler:
    """Samples the process's RSS every ``interval_s`` in a daemon thread: (seconds since start, MB)."""

    def __init__(self, interval_s: float = 0.25) -> None:
        self.interval_s = interval_s
        self.samples: list[tuple[float, float]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="rss-sampler", daemon=True)

    def _run(self) -> None:
        proc = psutil.Process()
        started = time.monotonic()
        while not self._stop.wait(self.interval_s):
            self.samples.append((round(time.monotonic() - started, 2), round(proc.memory_info().rss / 2**20, 1)))

    def __enter__(self) -> RssSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def timeline(self, points: int = 120) -> list[tuple[float, float]]:
        """At most ``points`` samples, evenly spaced, keeping the peak."""
        step = max(1, len(self.samples) // points)
        kept = self.samples[::step]
        if self.samples:
            kept.append(max(self.samples, key=lambda s: s[1]))
        return sorted(set(kept))


def bronze_rows(root: str, topic: str) -> int:
    """How many rows the topic's bronze table holds (0 if it does not exist)."""
    try:
        table = DeltaTable(topic_path(root, topic))
    except Exception:  # the table is created by the first commit that has rows for it
        return 0
    return int(table.to_pyarrow_dataset().count_rows())


def skip_pandas_probe() -> bool:
    """What ``cdc-lakehouse capture`` does before it calls `run_capture`: let pyarrow's implicit
    look for pandas find none (`pipelines.arrow_pandas`), so the measured run does not import
    pandas, as the command does not. False when the code under test has no such step (an older
    tree): the run then imports pandas on its first conversion, inside the measured span."""
    try:
        from pipelines.arrow_pandas import skip_pandas_probe as skip
    except ImportError:
        return False
    skip()
    return "pandas" not in sys.modules


def warm_imports() -> None:
    """Import the modules the capture imports lazily (seconds of import machinery otherwise)."""
    import pandas  # type: ignore[import-untyped]  # noqa: F401
    import pyarrow.dataset  # noqa: F401


def source_only(pipeline: PipelineConfig, root: str, probe: Probe) -> dict[str, Any]:
    """Read the source like `run_capture` does, but count the records instead of writing them.

    The connector is opened at the offset stored in bronze, with the schema history stored
    there (as `run_capture` would); the run stops at the expected record. Nothing is
    acknowledged and nothing is written.
    """
    (spec,) = pipeline.sources
    connector = validate_sources(pipeline)[spec.name]
    writer = BronzeWriter(root, spec.name)
    try:
        stored = writer.recover()
        history = writer.read_history()
    finally:
        writer.close()
    session = connector.open(stored.offset if stored else None, history)
    try:
        plan = session.plan()
        items = session.snapshot() if plan.snapshot_data else session.stream(until_idle=True)
        for item in items:
            n = records_in(item, probe.topic)
            if n:
                probe.on_records(n)
                if probe.t_reached is not None:
                    break
    finally:
        session.close()
    return {"plan_reason": plan.reason, "records": probe.written}


def run(config: dict[str, Any]) -> dict[str, Any]:
    """Run the capture described by ``config``; return the measurements."""
    pipeline = parse_pipeline(config["pipeline"], file="<bench>", env={})
    probe = Probe(expected=int(config["expected"]), topic=config.get("topic"))
    install_probe(probe, session_class(str(config["session"])))
    profile = ThreadedProfile() if config.get("profile") else None
    if profile is not None or config.get("source_only"):
        warm_imports()
    pandas_probe_skipped = False if profile is not None or config.get("source_only") else skip_pandas_probe()
    rss_before = psutil.Process().memory_info().rss
    sampler = RssSampler()
    warnings = WarningCounter()
    logging.getLogger().addHandler(warnings)
    probe.t_call = time.monotonic()
    probe.cpu_call = time.process_time()
    with sampler:
        if config.get("source_only"):
            capture = source_only(pipeline, str(config["root"]), probe)
        elif profile is not None:
            with profile:
                capture = _summary(run_capture(pipeline, until_idle=True))
        else:
            capture = _summary(run_capture(pipeline, until_idle=True))
    probe.t_return = time.monotonic()
    if profile is not None:
        profile.dump(str(config["profile"]))
    return {
        "probe": asdict(probe),
        "capture": capture,
        "bronze_rows": None if config.get("source_only") else bronze_rows(str(config["root"]), str(config["topic"])),
        "rss_before_run_bytes": rss_before,
        "peak_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
        "rss_timeline_mb": sampler.timeline(),
        "log_warnings": warnings.counts,
        "pid": os.getpid(),
        "pandas_probe_skipped": pandas_probe_skipped,
    }


def _summary(results: dict[str, CaptureResult]) -> dict[str, Any]:
    (result,) = results.values()
    return {"plan_reason": result.plan_reason, "snapshot_rows": result.snapshot_rows,
            "streamed_records": result.streamed_records, "batches": result.batches, "seconds": result.seconds}


def main(argv: list[str]) -> int:
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    config = json.loads(Path(argv[1]).read_text())
    try:
        out = run(config)
    except Exception:
        out = {"error": traceback.format_exc()}
    Path(argv[2]).write_text(json.dumps(out))
    return 1 if "error" in out else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
