"""The Spark Structured Streaming driver (Spark and Databricks): bronze stream -> foreachBatch.

One streaming query per silver table reads the bronze Delta table as a stream
(``readStream.format("delta")``) and hands every micro-batch to the same apply function the
incremental runner uses (`silver.increment.apply_increment`), through ``foreachBatch``. The
checkpoint location records which bronze versions were processed; the table's progress record
is also updated after each batch, so the two drivers can be swapped. The schema history is
read once per query, and again only when a micro-batch points at a schema version it has not
seen (`silver.schema_cache`); the progress record is read at the query's first micro-batch, then
the query keeps the record it wrote (one writer per table: run one driver at a time on a table;
should both run, rows the other applied are applied again, which is harmless). Re-running a micro-batch
(Spark does after a failure) is harmless: every apply is idempotent.

A micro-batch that fails a ``fail`` expectation stops the query, and Spark re-runs it with the
same bronze range when the query restarts; a fix that reached bronze since would never be part
of it. So the handler then checks the increment again with bronze up to now
(`silver.stream_catchup`), as the incremental runner would: the fix, the key's latest change,
passes, and the micro-batches that follow skip the rows it applied. `failure_line` picks the
silver error out of the text Spark wraps it in.

Triggers: ``available_now`` (process everything available, then stop: the streaming form of
``--once``) or ``processing_time`` (a micro-batch every ``interval_seconds``).

Bronze commits that remove files: a bronze table only grows, except when the capture discards
the rows of an interrupted snapshot (`bronze.writer.BronzeWriter.discard_incomplete_snapshot`,
a commit of remove actions only) before snapshotting again, and the new attempt's rows reuse
the discarded rows' ``seq`` values. ``skipChangeCommits`` would let the stream go on past such
a commit, but silently wrong: it would have applied the discarded rows and would then skip the
new rows whose ``seq`` is not above the progress. So the stream is read without it and stops at
such a commit with Delta's error (`CHANGE_COMMIT_HINT` says what to do: rebuild). The usual
case, a capture killed during the *initial* snapshot, never reaches a stream: streams are
started once the initial snapshot has completed (`pipelines.silver_stream`), and a new query
starts from the table as it is then, without the discarded files.

Sail has no Structured Streaming with a Delta source or ``foreachBatch``; there, use the
incremental runner (``cdc-lakehouse silver``), which drives increments itself.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as sf
from pyspark.sql.streaming.query import StreamingQuery

from bronze.schema import COL_SEQ, topic_path
from silver.context import ApplyContext, ApplyResult
from silver.declarations import SilverOptions, SilverTable
from silver.engine_traits import EngineTraits
from silver.errors import EngineCapabilityError, SilverTableError
from silver.increment import apply_increment
from silver.progress import Progress, ProgressStore
from silver.quality import QualityGateError
from silver.resnapshot import BronzeRef
from silver.schema_cache import SchemaCache
from silver.schema_history import load_topic_schemas
from silver.stream_catchup import bronze_since
from silver.target import SilverTarget

__all__ = ["CHANGE_COMMIT_HINT", "ApplyFn", "BatchReport", "ProgressRecorder", "StreamSettings", "failure_line",
           "start_stream"]

ApplyFn = Callable[..., ApplyResult]
"""``apply_increment``'s signature: (ctx, decl, target, bronze_batch, *, expected_keys)."""

BatchReport = Callable[[str], None]
"""Receives one line when a micro-batch starts applying and one when it is applied."""

CHANGE_COMMIT_HINT = (
    "bronze removed rows (a snapshot was discarded and taken again): rebuild the silver table (delete it, its "
    "progress record and its checkpoint, then stream again)")
"""What to do when a bronze stream stops at a commit that removed files (see module doc)."""


_SILVER_ERROR_LINE = re.compile(r"^\s*silver\.[\w.]+Error: (.+)$", re.MULTILINE)


def failure_line(text: str) -> str:
    """The line to report for a failed streaming query's exception text: the message of the silver
    error the micro-batch raised (Spark wraps it, with its Python traceback, in its own error),
    else the text's first line."""
    ours = _SILVER_ERROR_LINE.findall(text)
    if ours:
        return str(ours[-1]).strip()
    return (text.strip().splitlines() or ["unknown error"])[0]


@dataclass(frozen=True)
class StreamSettings:
    """How a silver streaming query runs.

    Attributes:
        checkpoint_location: the query's checkpoint folder (one per silver table).
        trigger: ``available_now`` or ``processing_time``.
        interval_seconds: the processing-time trigger interval.
        source_format: the bronze stream format (``delta``; tests use ``parquet``).
        read_options: bronze stream options (``maxFilesPerTrigger``, ``startingVersion`` ...).
    """

    checkpoint_location: str
    trigger: Literal["available_now", "processing_time"] = "available_now"
    interval_seconds: float = 10.0
    source_format: str = "delta"
    read_options: Mapping[str, str] = field(default_factory=dict)


class ProgressRecorder(Protocol):
    """Reads and writes a table's progress (`silver.progress.ProgressStore`)."""

    def read(self, table: str) -> Progress | None: ...

    def write(self, progress: Progress) -> None: ...


def _batch_handler(root: str, decl: SilverTable, source: str, options: SilverOptions, state: str,
                   store: ProgressRecorder, apply_fn: ApplyFn, report: BatchReport) -> Callable[[DataFrame, int], None]:
    """The ``foreachBatch`` function: apply one micro-batch, then record progress."""
    quarantine = options.quarantine.location or f"{root.rstrip('/')}/silver/_quarantine"
    target = SilverTarget.for_declaration(root, decl)

    sessions: list[SparkSession] = []  # the micro-batches' session (the query's), set by the first batch
    # one read of the schema history per query, again only for a schema id it has not seen
    schemas = SchemaCache(lambda topic: load_topic_schemas(sessions[0], root, source, topic, options.storage_options))

    # the table's progress: read at the query's first micro-batch, then the record this query wrote
    held: list[Progress | None] = []

    def on_batch(batch: DataFrame, epoch_id: int) -> None:
        session = batch.sparkSession
        sessions[:] = [session]
        ctx = ApplyContext(session, options, f"stream-{decl.table}-{epoch_id}", state, quarantine, schemas,
                           BronzeRef(root, source))
        previous = held[0] if held else store.read(decl.table)
        held[:] = [previous]
        if previous is not None:  # rows already applied (a replayed batch, or the other driver)
            batch = batch.where(sf.col(COL_SEQ) > previous.last_seq)
        report(f"silver {decl.table}: micro-batch {epoch_id} applying")
        # The apply runs several actions over the batch (scan, decode, counts): read bronze once.
        batch = batch.persist()
        expected = previous.keys if previous else None
        try:
            result = apply_fn(ctx, decl, target, batch, expected_keys=expected)
        except QualityGateError:
            # a restart re-runs this micro-batch as it is: check again with bronze up to now
            top = batch.agg(sf.max(COL_SEQ)).collect()[0][0]
            since = None if top is None else bronze_since(
                session, root, decl.source, options, after_seq=previous.last_seq if previous else 0,
                batch_max_seq=int(top))
            if since is None:
                raise
            report(f"silver {decl.table}: micro-batch {epoch_id} failed a gate; checking again with bronze "
                   "up to now")
            since = since.persist()
            try:
                result = apply_fn(ctx, decl, target, since, expected_keys=expected)
            finally:
                since.unpersist()
        finally:
            batch.unpersist()
        if result.max_seq is not None and (previous is None or result.max_seq > previous.last_seq):
            keys = result.keys or (previous.keys if previous else ())
            progress = Progress(decl.table, decl.source, result.max_seq, None, keys, ctx.run_id,
                                dt.datetime.now(dt.UTC))
            store.write(progress)
            held[:] = [progress]
        report(f"silver {decl.table}: micro-batch {epoch_id} applied: {result.events} events -> "
               f"{result.upserts} upserts, {result.deletes} deletes (seq <= {result.max_seq})")

    return on_batch


def start_stream(spark: SparkSession, *, root: str, decl: SilverTable, source: str, options: SilverOptions,
                 settings: StreamSettings, apply_fn: ApplyFn = apply_increment,
                 bronze_schema: Any = None, progress_store: ProgressRecorder | None = None,
                 report: BatchReport | None = None) -> StreamingQuery:
    """Start the streaming query of one silver table (see module doc).

    Args:
        spark: a classic or Spark Connect session with Delta Lake.
        root: the lakehouse root.
        decl: the silver table.
        source: the source (name) that produces ``decl.source``.
        options: silver options.
        settings: trigger, checkpoint and bronze stream options.
        apply_fn: the apply function (tests inject a recorder).
        bronze_schema: the bronze stream schema, for sources that need one (parquet).
        progress_store: where progress is recorded (default: the state location's store).
        report: receives a line as each micro-batch starts and ends applying.

    Raises:
        EngineCapabilityError: the engine has no Structured Streaming for this source.
    """
    state = (options.state_location or f"{root.rstrip('/')}/silver/_cdc").rstrip("/")
    store = progress_store if progress_store is not None else ProgressStore(spark, state, options.storage_options)
    on_batch = _batch_handler(root, decl, source, options, state, store, apply_fn, report or (lambda _line: None))
    try:
        reader = spark.readStream.format(settings.source_format).options(**dict(settings.read_options))
        if bronze_schema is not None:
            reader = reader.schema(bronze_schema)
        writer = (reader.load(topic_path(root, decl.source)).writeStream.foreachBatch(on_batch)
                  .option("checkpointLocation", settings.checkpoint_location).queryName(f"silver_{decl.table}"))
        if settings.trigger == "available_now":
            writer = writer.trigger(availableNow=True)
        else:
            writer = writer.trigger(processingTime=f"{settings.interval_seconds} seconds")
        return writer.start()
    except Exception as exc:  # nothing ran yet
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        problem = f"silver table {decl.table!r}: cannot start the Structured Streaming query on {decl.source} ({first})"
        if EngineTraits.of(spark).streams:  # this engine streams: the cause is elsewhere
            raise SilverTableError(problem, table=decl.table) from exc
        raise EngineCapabilityError(
            f"{problem}. Sail has no Structured Streaming with Delta or foreachBatch: use the incremental "
            "runner ('cdc-lakehouse silver') there", table=decl.table) from exc
