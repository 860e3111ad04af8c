"""Capture runner: builds connectors and bronze writers from a pipeline and runs them."""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

from bronze.offset_control import Control, read_control
from bronze.writer import BronzeWriter
from cdc_sources.spi import CdcError, ConfigError, ConfigProblem, Connector, Fatal, Retriable, SourceError
from pipelines import lease as leases
from pipelines.capture_status import StatusRecorder
from pipelines.config import PipelineConfig, SourceSpec
from pipelines.coordinator import CaptureResult, Coordinator, ProgressFn
from pipelines.memory_pool import use_capture_memory_pool
from pipelines.metrics import CaptureMetrics, SourceMetrics
from pipelines.registry import build_connector

log = logging.getLogger(__name__)

UNTIL_IDLE_RETRIES = 3
"""Retries of ``capture --until-idle`` when ``errors.max.retries`` is unlimited (-1, Debezium's
default): a run that must end gives up on a source it cannot reach instead of waiting forever."""


def validate_sources(config: PipelineConfig, *, file: str | None = None) -> dict[str, Connector]:
    """Build every source's connector, raising one ConfigError with all problems."""
    problems: list[ConfigProblem] = []
    connectors: dict[str, Connector] = {}
    for i, spec in enumerate(config.sources):
        connector, found = build_connector(spec, f"sources[{i}]")
        problems.extend(found)
        if connector is not None:
            connectors[spec.name] = connector
    if problems:
        raise ConfigError(problems, file=file)
    return connectors


def run_capture(config: PipelineConfig, *, until_idle: bool, sources: Sequence[str] | None = None,
                progress: ProgressFn | None = None, file: str | None = None,
                stop: threading.Event | None = None, metrics: CaptureMetrics | None = None) -> dict[str, CaptureResult]:
    """Capture every (or the named) source into bronze; returns one result per source.

    Sets the process's default Arrow memory pool (`use_capture_memory_pool`). Each source is
    captured under its writer lease (`pipelines.lease`). Setting ``stop`` ends every source's
    run cleanly (`Coordinator`): the results then say ``stopped``. Each source's numbers go to
    ``metrics`` (`pipelines.metrics`) and its status file (`pipelines.capture_status`).

    Raises:
        ConfigError: a name in ``sources`` is not declared, or a source's options are invalid.
        LeaseHeldError: another process captures one of the sources.
        SourceDecommissionedError: a source was decommissioned (`check_not_decommissioned`).
    """
    _check_source_names(config, sources, file)
    connectors = validate_sources(config, file=file)
    use_capture_memory_pool()
    specs = [s for s in config.sources if sources is None or s.name in sources]
    stop = stop if stop is not None else threading.Event()
    metrics = metrics if metrics is not None else CaptureMetrics()
    recorder = StatusRecorder(metrics, config.lakehouse.root, storage_options=config.lakehouse.storage_options)
    for spec in specs:
        recorder.seed(spec.name, spec.connector)
    recorder.start()
    try:
        if len(specs) == 1:
            spec = specs[0]
            return {spec.name: _leased_source(config, spec, connectors[spec.name], until_idle, progress, stop,
                                              metrics.source(spec.name, spec.connector))}
        with ThreadPoolExecutor(max(1, len(specs))) as pool:
            futures = {s.name: pool.submit(_leased_source, config, s, connectors[s.name], until_idle, progress, stop,
                                           metrics.source(s.name, s.connector)) for s in specs}
            return {name: f.result() for name, f in futures.items()}
    finally:
        for spec in specs:
            metrics.source(spec.name, spec.connector).stopped()
        recorder.close()


class SourceDecommissionedError(CdcError, Fatal):
    """Capture of a decommissioned source was asked for."""


def check_not_decommissioned(config: PipelineConfig, source: str) -> None:
    """Raise `SourceDecommissionedError` if the source's last offsets commit is a decommission."""
    state = read_control(config.lakehouse.root, source, config.lakehouse.storage_options or None)
    if state.control is Control.DECOMMISSION:
        raise SourceDecommissionedError(
            f"source {source} was decommissioned (at {state.at or 'an unknown time'}): its server-side state was "
            f"dropped; to capture it again, run `cdc-lakehouse reset --source {source}` first (the next capture then "
            "starts over per snapshot.mode)")


def _leased_source(config: PipelineConfig, spec: SourceSpec, connector: Connector, until_idle: bool,
                   progress: ProgressFn | None, stop: threading.Event, metrics: SourceMetrics) -> CaptureResult:
    """Run one source while holding its writer lease; a lost lease ends it with an error."""
    # a lost lease stops every source of this process (then this one's result is an error)
    lease = leases.acquire(config.lakehouse.root, spec.name, on_lost=stop.set,
                           storage_options=config.lakehouse.storage_options)
    try:
        check_not_decommissioned(config, spec.name)
        result = _run_source(config, spec, connector, until_idle, progress, stop, metrics)
        lease.check()
        return result
    finally:
        lease.release()


def _check_source_names(config: PipelineConfig, sources: Sequence[str] | None, file: str | None) -> None:
    declared = [s.name for s in config.sources]
    unknown = [n for n in sources or () if n not in declared]
    if unknown:
        listed = ", ".join(repr(n) for n in unknown)
        raise ConfigError([ConfigProblem("sources", f"no source named {listed} (--source); declared: "
                                                    f"{', '.join(declared)}")], file=file)


def _run_source(config: PipelineConfig, spec: SourceSpec, connector: Connector, until_idle: bool,
                progress: ProgressFn | None, stop: threading.Event, metrics: SourceMetrics) -> CaptureResult:
    """Run the source, reopening it after a retriable error as ``connector.retry`` says
    (`cdc_sources.spi.retry.RetryPolicy`: exponential delays; `UNTIL_IDLE_RETRIES` at most with
    ``--until-idle`` when the retries are unlimited)."""
    policy = connector.retry.bounded(UNTIL_IDLE_RETRIES) if until_idle else connector.retry
    retry = 0
    committed = _committed_batch(config, spec)
    while True:
        try:
            return _run_once(config, spec, connector, until_idle, progress, stop, metrics)
        except Exception as exc:  # an interrupt is a stop, not a failure
            if not isinstance(exc, CdcError):
                metrics.failed(f"{type(exc).__name__}: {exc}")
                raise
            if stop.is_set():  # asked to stop: no retry; what was committed is exactly-once
                log.warning("source %s: stopped: %s", spec.name, exc)
                return CaptureResult(plan_reason="stopped", stopped=True)
            metrics.failed(str(exc))
            if not isinstance(exc, Retriable):
                raise
            now = _committed_batch(config, spec)
            if now > committed:  # the failed run made progress: count retries afresh, as Debezium does
                retry, committed = 0, now
            retry += 1
            if not policy.allows(retry):
                if policy.max_retries == 0:
                    raise
                raise SourceError(f"source {spec.name}: gave up after {policy.max_retries} retries: {exc}") from exc
            wait_s = policy.delay_seconds(retry)
            limit = "unlimited" if policy.max_retries < 0 else str(policy.max_retries)
            log.warning("source %s: %s; retrying in %.1fs (retry %d of %s)", spec.name, exc, wait_s, retry, limit)
            if stop.wait(wait_s):
                return CaptureResult(plan_reason="stopped before retrying", stopped=True)
            metrics.restarting()


def _run_once(config: PipelineConfig, spec: SourceSpec, connector: Connector, until_idle: bool,
              progress: ProgressFn | None, stop: threading.Event, metrics: SourceMetrics) -> CaptureResult:
    writer = BronzeWriter(config.lakehouse.root, spec.name, config.lakehouse.storage_options or None)
    try:
        stored = writer.recover()
        session = connector.open(stored.offset if stored else None, writer.read_history())
        try:
            coordinator = Coordinator(
                session, writer, stored, commit_interval_ms=spec.capture.commit_interval_ms,
                commit_max_records=spec.capture.commit_max_records,
                commit_max_bytes=spec.capture.commit_max_bytes,
                progress=(lambda msg: progress(f"[{spec.name}] {msg}")) if progress else None, stop=stop,
                metrics=metrics,
            )
            return coordinator.run(until_idle=until_idle)
        finally:
            session.close()
    finally:
        writer.close()


def _committed_batch(config: PipelineConfig, spec: SourceSpec) -> int:
    """The source's last committed bronze batch number (0: none), from the offsets table's log."""
    return read_control(config.lakehouse.root, spec.name, config.lakehouse.storage_options or None).batch


def summarize(name: str, r: CaptureResult) -> str:
    """One human-readable paragraph about a capture run."""
    lines = [f"source {name}: {r.snapshot_rows} snapshot rows, {r.streamed_records} streamed records, "
             f"{r.batches} bronze commits in {r.seconds:.1f}s ({r.plan_reason})"]
    if r.stopped:
        lines.append(f"  stopped on request; {r.abandoned} records read but not committed are read again next time")
    if r.skipped_replays:
        lines.append(f"  {r.skipped_replays} replayed records were already in bronze and were skipped")
    lines.extend(f"  {topic}: {n}" for topic, n in sorted(r.per_topic.items()))
    return "\n".join(lines)
