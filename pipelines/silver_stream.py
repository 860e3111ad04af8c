"""Silver by Structured Streaming: ``cdc-lakehouse silver --stream`` and ``silver_job.py --stream``.

One streaming query per declared silver table (`silver.streaming.start_stream`): the bronze
Delta table as a stream, ``foreachBatch`` applying each micro-batch, a checkpoint per table
(`checkpoint_location`: ``<root>/silver/_checkpoints/<table>`` unless given). With the
``available_now`` trigger every query processes what bronze holds and the run returns; with
``processing_time`` the queries run until stopped (``stop`` event, Ctrl-C) or until one fails.
A table is started once its source's initial snapshot has completed and its bronze table
exists (a processing-time run keeps checking; an available-now run reports it as waiting):
rows of a snapshot attempt that is later discarded never reach a stream (see
`silver.streaming`). A query that stops at a bronze commit removing files is reported with
`silver.streaming.CHANGE_COMMIT_HINT`.

Which configurations can stream is decided before any session starts (`stream_refusal`):
Sail has no Structured Streaming over Delta or ``foreachBatch``, and the streaming driver does
not make transaction-consistent cuts.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from pyspark.sql import SparkSession

from bronze.schema import topic_path
from cdc_sources.spi import ConfigError, ConfigProblem
from pipelines.bronze_names import BronzeTableName
from pipelines.bronze_register import BronzeRegistrar, BronzeRegistrationError
from pipelines.engine import EngineSpec, abort_session, create_session, stop_session
from pipelines.silver_runner import source_of_topic
from pipelines.stream_trigger import TRIGGER_CHOICES
from silver.consistency import committed_cut
from silver.declarations import SilverOptions, SilverTable
from silver.delta_io import read_delta_or_none
from silver.streaming import CHANGE_COMMIT_HINT, StreamSettings, failure_line, start_stream

__all__ = ["TRIGGER_CHOICES", "StreamRunResult", "Trigger", "checkpoint_location", "run_streams", "stream_refusal",
           "stream_trigger"]

log = logging.getLogger(__name__)

Trigger = Literal["available_now", "processing_time"]



def stream_trigger(given: str | None, *, once: bool) -> Trigger:
    """The trigger a ``--stream`` run uses: ``--trigger`` as given, else available-now with ``--once``
    and processing-time without.

    Raises:
        ConfigError: ``--once`` with ``--trigger processing-time`` (a run that never ends).
    """
    chosen = given or ("available-now" if once else "processing-time")
    if once and chosen != "available-now":
        raise ConfigError([ConfigProblem("silver", "--once with --stream means --trigger available-now")])
    return "available_now" if chosen == "available-now" else "processing_time"


@dataclass
class StreamRunResult:
    """What a streaming run did: tables started, tables still waiting for bronze, failures."""

    started: list[str] = field(default_factory=list)
    waiting: list[str] = field(default_factory=list)
    errors: dict[str, str] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        """True if no query failed."""
        return not self.errors


def checkpoint_location(root: str, table: str, checkpoint_root: str | None = None) -> str:
    """A silver table's checkpoint folder: ``<checkpoint_root or <root>/silver/_checkpoints>/<table>``."""
    base = (checkpoint_root or f"{root.rstrip('/')}/silver/_checkpoints").rstrip("/")
    return f"{base}/{table}"


def stream_refusal(engine: EngineSpec, options: SilverOptions) -> str | None:
    """Why this configuration cannot run silver as Structured Streaming, or None if it can."""
    if engine.kind == "sail":
        return ("--stream needs Structured Streaming with a Delta source and foreachBatch, which Sail does not "
                "have; use engine kind 'spark', or drop --stream to use the "
                "incremental runner")
    transactional = sorted(s for s, mode in options.consistency.items() if mode == "transaction")
    if transactional:
        return (f"--stream does not make transaction-consistent cuts (consistency: transaction for "
                f"{', '.join(transactional)}); use the incremental runner, or set consistency: table")
    return None


def run_streams(*, root: str, engine: EngineSpec, tables: Sequence[SilverTable], options: SilverOptions,
                sources: Mapping[str, str], trigger: Trigger, interval_seconds: float = 10.0,
                checkpoint_root: str | None = None, progress: Callable[[str], None] | None = None,
                stop: threading.Event | None = None, spark: SparkSession | None = None,
                bronze_names: Mapping[str, BronzeTableName] | None = None) -> StreamRunResult:
    """Run the silver tables as streaming queries (see module doc).

    Args:
        root: the lakehouse root.
        engine: which Spark (ignored when ``spark`` is given); see `stream_refusal`.
        tables, options, sources: the pipeline's ``silver:``, ``silver_options:`` and source prefixes.
        trigger: ``available_now`` (everything available, then return) or ``processing_time``.
        interval_seconds: the processing-time trigger interval.
        checkpoint_root: where the per-table checkpoints go (see `checkpoint_location`).
        progress: receives a line per micro-batch and table event.
        stop: set it to stop a processing-time run: each query stops once its micro-batch in flight
            has ended (`DRAIN_SECONDS` at most). A KeyboardInterrupt stops the queries at once; with
            ``stop`` (the caller handles the signals, `pipelines.shutdown`: its abort) it propagates
            instead, the session abandoned (`pipelines.engine.abort_session`: the process ends next).
        spark: an existing session to use (not stopped at the end).
        bronze_names: topic -> the catalog name its bronze table is registered under before its
            query starts (`pipelines.bronze_register`).

    Raises:
        ConfigError: a table's topic matches no source.
    """
    owners = {t.table: source_of_topic(t.source, sources) for t in tables}
    say = progress or (lambda _line: None)
    session = spark if spark is not None else create_session(engine)
    result = StreamRunResult()
    queries: dict[str, Any] = {}
    registrar = BronzeRegistrar(session, bronze_names or {}, engine.kind)
    aborted = False
    try:
        pending = list(tables)
        while True:
            pending = _start_ready(session, root, pending, owners, options, trigger, interval_seconds,
                                   checkpoint_root, say, queries, result, registrar)
            if trigger == "available_now":
                for table, query in queries.items():
                    with contextlib.suppress(Exception):  # a failed query raises here; recorded below
                        query.awaitTermination()
                    _record_end(table, query, result, say)
                result.waiting = [t.table for t in pending]
                for table in result.waiting:
                    say(f"silver {table}: waiting (initial snapshot not complete, or no bronze table yet)")
                return result
            if _first_failure(queries, result, say) or (stop is not None and stop.wait(interval_seconds)):
                return result
            if stop is None:
                time.sleep(interval_seconds)
    except KeyboardInterrupt:
        aborted = True
        say("silver: interrupted; stopping the streaming queries")
        if stop is not None:  # the caller handles the signals (`pipelines.shutdown`): this is its abort
            raise
        return result
    finally:
        if aborted and stop is not None:  # the process ends next: its queries and JVM with it
            if spark is None:
                abort_session(session)
        else:  # on a stop request the micro-batches in flight end first; after a failure, at once
            try:
                _stop_queries(list(queries.values()), DRAIN_SECONDS if stop is not None and stop.is_set() else 0.0)
            finally:  # a second signal during the wait still stops the session (and the queries with it)
                if spark is None:
                    stop_session(session)


DRAIN_SECONDS = 60.0
"""How long a stopping run waits for the micro-batches in flight before it stops their queries anyway."""


def _stop_queries(queries: Sequence[Any], grace: float) -> None:
    """Stop the active queries, each once its micro-batch in flight has ended (up to ``grace`` seconds
    in all). A query stopped inside a micro-batch is safe too, only wasteful: its checkpoint does not
    record the batch, so the next start runs it again, and every apply is idempotent
    (`silver.increment`)."""
    deadline = time.monotonic() + grace
    for query in queries:
        while query.isActive and query.status.get("isTriggerActive") and time.monotonic() < deadline:
            time.sleep(0.1)
        if query.isActive:
            query.stop()


def _start_ready(session: SparkSession, root: str, pending: list[SilverTable], owners: Mapping[str, str],
                 options: SilverOptions, trigger: Trigger, interval: float, checkpoint_root: str | None,
                 say: Callable[[str], None], queries: dict[str, Any], result: StreamRunResult,
                 registrar: BronzeRegistrar) -> list[SilverTable]:
    """Start the queries of tables that are ready (see module doc); returns the tables still waiting."""
    waiting = []
    snapshots: dict[str, bool] = {}
    for decl in pending:
        source = owners[decl.table]
        if source not in snapshots:
            cut = committed_cut(session, root, source)
            snapshots[source] = cut is not None and cut.snapshot_completed
        if not snapshots[source] or read_delta_or_none(session, topic_path(root, decl.source)) is None:
            waiting.append(decl)
            continue
        try:
            registrar.ensure(decl.table, decl.source, topic_path(root, decl.source))
        except BronzeRegistrationError as exc:  # the table does not start; the run ends as failed
            result.errors[decl.table] = str(exc)
            say(f"silver {decl.table}: FAILED: {exc}")
            continue
        settings = StreamSettings(checkpoint_location(root, decl.table, checkpoint_root), trigger, interval)
        queries[decl.table] = start_stream(session, root=root, decl=decl, source=owners[decl.table],
                                           options=options, settings=settings, report=say)
        result.started.append(decl.table)
        say(f"silver {decl.table}: streaming from {decl.source} ({trigger.replace('_', '-')}, "
            f"checkpoint {settings.checkpoint_location})")
    return waiting


def _first_failure(queries: Mapping[str, Any], result: StreamRunResult, say: Callable[[str], None]) -> bool:
    """Record queries that ended; True if one failed (the run then stops)."""
    for table, query in queries.items():
        if not query.isActive and table not in result.errors:
            _record_end(table, query, result, say)
    return bool(result.errors)


def _record_end(table: str, query: Any, result: StreamRunResult, say: Callable[[str], None]) -> None:
    exc = query.exception()
    if exc is None:
        say(f"silver {table}: stream done")
        return
    text = str(exc)
    first = failure_line(text) if text.strip() else type(exc).__name__
    if any(m in text for m in ("DELTA_SOURCE_TABLE_IGNORE_CHANGES", "DELTA_SOURCE_IGNORE_DELETE")):
        first = f"{CHANGE_COMMIT_HINT} ({first})"
    result.errors[table] = first
    log.error("silver table %s: streaming query failed: %s", table, text)
    say(f"silver {table}: FAILED: {first}")
