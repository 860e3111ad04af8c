"""Runs a capture session into bronze: plan, snapshot if planned, then stream.

The coordinator alone decides the order and the commit points. Records are buffered; a
buffer holding ``commit_max_bytes`` of text is written to the batch's data files (staged,
bounding memory) and the batch is committed to bronze when it holds ``commit_max_records``,
has waited ``commit_interval_ms``, or a snapshot ends. The source is acknowledged only after a
commit whose offset came from a checkpoint (a transaction boundary), never ahead of bronze.

Checkpoints are transaction ends: the records before the last one in a batch are of complete
source transactions, those after it of the transaction still open. The writer is told which
is which (``transaction_end``) and records, in each batch commit, where the complete
transactions stop in each table, which silver's transaction-consistent cut uses.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from bronze.record_runs import Prepared, prepare
from bronze.view import StoredOffset
from bronze.writer import BronzeCommitResult, BronzeWriter
from cdc_sources.spi import (
    HISTORY_TOPIC,
    CaptureSession,
    ChangeBlock,
    ChangeRecord,
    Checkpoint,
    SchemaVersion,
    SnapshotProgress,
    SourceOffset,
    StreamItem,
    connector_offset,
)
from cdc_sources.spi.snapshot_progress import ReportsSnapshots
from cdc_sources.spi.transaction_folding import FoldsTransactions
from pipelines.metrics import SourceMetrics
from pipelines.positions import offset_time_ms, source_position

log = logging.getLogger(__name__)

ProgressFn = Callable[[str], None]

METRICS_REPORT_S = 0.1
"""Between commits, the metrics hear of the events read and of the newest transaction's source
time at most this often (they take a lock; one-row transactions would otherwise report per row)."""


@dataclass
class CaptureResult:
    """What a capture run did.

    Attributes:
        stopped: the run was asked to stop (``stop`` event) before its end.
        abandoned: records read but not committed because the stop came mid-transaction or
            mid-snapshot (the source sends them again on the next run).
    """

    plan_reason: str = ""
    snapshot_rows: int = 0
    streamed_records: int = 0
    batches: int = 0
    skipped_replays: int = 0
    per_topic: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0
    stopped: bool = False
    abandoned: int = 0


@dataclass
class _Buffer:
    """The batch being built: records still in memory, and what was staged of it already.

    Attributes:
        count / size: records and bytes of text in memory.
        staged: records of the batch already written to data files.
        staged_position: the position of the last staged record.
        since: when the batch got its first record.
    """

    records: list[ChangeRecord | ChangeBlock] = field(default_factory=list)
    count: int = 0
    size: int = 0
    staged: int = 0
    staged_position: str | None = None
    schemas: list[SchemaVersion] = field(default_factory=list)
    checkpoint: SourceOffset | None = None
    """The offset of the last checkpoint in the batch, if any."""
    since: float = 0.0
    transactions: int = 0
    """Source transactions ended in the batch (checkpoints after change events)."""
    boundary: int | None = None
    """Where in ``records`` the last checkpoint since the last hand-over fell (None: none since):
    the records before it end a transaction, those after it belong to one still open."""
    events_since_checkpoint: int = 0
    at_checkpoint: bool = True

    @property
    def empty(self) -> bool:
        return not self.records and not self.staged

    def add_run(self, run: list[ChangeRecord]) -> None:
        if self.empty:
            self.since = time.monotonic()
        self.at_checkpoint = False
        self.records.extend(run)
        self.count += len(run)
        self.size += sum(len(r.value or "") + len(r.position) for r in run)

    def add(self, item: ChangeRecord | ChangeBlock) -> None:
        if self.empty:
            self.since = time.monotonic()
        self.at_checkpoint = False
        self.records.append(item)
        if isinstance(item, ChangeBlock):
            self.count += len(item)
            self.size += item.values.nbytes + item.positions.nbytes + (item.keys.nbytes if item.keys else 0)
        else:
            self.count += 1
            self.size += len(item.value or "") + len(item.position)

    def last_position(self) -> str | None:
        if not self.records:
            return self.staged_position
        last = self.records[-1]
        return str(last.positions[-1]) if isinstance(last, ChangeBlock) else last.position

    def take_records(self, *, snapshot: bool) -> _Handover:
        """Hand the in-memory records over to be staged, split at the last checkpoint among them
        (snapshot records are never split: the snapshot's completion decides for them)."""
        records, self.staged_position = self.records, self.last_position()
        self.staged += self.count
        boundary = len(records) if snapshot else self.boundary
        self.records, self.count, self.size, self.boundary = [], 0, 0, None
        if boundary is None:
            return _Handover(None, prepare(records))
        return _Handover(prepare(records[:boundary]), prepare(records[boundary:]))


class Coordinator:
    """Drives one `CaptureSession` into one `BronzeWriter`. Not thread-safe."""

    def __init__(self, session: CaptureSession, writer: BronzeWriter, stored: StoredOffset | None, *,
                 commit_interval_ms: int, commit_max_records: int, commit_max_bytes: int = 8 << 20,
                 progress: ProgressFn | None = None, stop: threading.Event | None = None,
                 metrics: SourceMetrics | None = None) -> None:
        self.session = session
        self.stop = stop or threading.Event()
        self.writer = writer
        self.stored = stored
        self.interval = commit_interval_ms / 1000
        self.max_records = commit_max_records
        self.max_bytes = commit_max_bytes
        self.progress = progress or (lambda _msg: None)
        self.metrics = metrics or SourceMetrics(writer.source, "unknown")
        if isinstance(session, ReportsSnapshots):
            session.report_snapshots(self.metrics)
        if isinstance(session, FoldsTransactions):
            session.fold_transactions(commit_max_records)
        self.result = CaptureResult()
        self._snapshot_completed = stored.snapshot_completed if stored else False
        self._offset: dict[str, Any] = dict(stored.offset) if stored else {}
        self._pool = ThreadPoolExecutor(1, thread_name_prefix="bronze-commit")
        self._inflight: _InFlight | None = None
        self._ops: dict[str, int] = {}  # change events by op since the last report to the metrics
        self._last_event: ChangeRecord | ChangeBlock | None = None
        self._ended: SourceOffset | None = None  # the newest transaction end not reported to the metrics
        self._report_at = 0.0  # when the metrics are due to hear of the events counted since

    def run(self, *, until_idle: bool) -> CaptureResult:
        started = time.monotonic()
        try:
            self._run(until_idle)
        finally:
            self._pool.shutdown(wait=True)
        self.result.seconds = time.monotonic() - started
        return self.result

    def _run(self, until_idle: bool) -> None:
        plan = self.session.plan()
        self.result.plan_reason = plan.reason
        self.progress(f"plan: {plan.reason}")
        if plan.snapshot_data:
            # a snapshot cut short leaves rows, even before its first offset was committed
            removed = self.writer.discard_incomplete_snapshot()
            if removed:
                self.progress(f"removed {removed} rows of an interrupted snapshot from bronze")
            self._snapshot_completed = False
            self.metrics.snapshot_began()
            if not self._drain(self.session.snapshot(), snapshot=True):
                return
            self._snapshot_completed = True
            self.metrics.snapshot_ended()
        else:
            # no data snapshot is planned (snapshot.mode no_data/never, or it completed before):
            # there is no partial snapshot for silver to wait for
            self._snapshot_completed = True
        if plan.stream and self.stop.is_set():
            self.result.stopped = True  # asked to stop as the snapshot ended
        elif plan.stream:
            self.metrics.streaming_began()
            self._drain(self.session.stream(until_idle=until_idle), snapshot=False)
        self._wait()

    def _drain(self, items: Iterator[StreamItem], *, snapshot: bool) -> bool:
        """Read ``items`` to their end (True) or until the stop event is set (False)."""
        buf = _Buffer(since=time.monotonic())
        rate_start = time.monotonic()
        for item in items:
            if self.stop.is_set():
                self._stop_reading(items, buf, snapshot)
                return False
            if self._inflight is not None and self._inflight.future.done():
                self._wait()  # acknowledge as soon as the commit is durable
            if type(item) is list:
                buf.add_run(item)
                self._seen(buf, item)
            elif isinstance(item, ChangeRecord | ChangeBlock):
                buf.add(item)
                self._seen(buf, (item,))
            elif isinstance(item, Checkpoint):
                self._checkpoint(buf, item, snapshot)
                continue
            elif isinstance(item, SchemaVersion):
                buf.schemas.append(item)
            elif isinstance(item, SnapshotProgress):
                elapsed = max(time.monotonic() - rate_start, 1e-6)
                number = item.tables_done if item.table_done else item.tables_done + 1
                self._report_events(snapshot)
                self.metrics.snapshot_table(item.table, item.rows, item.tables_done, item.tables_total)
                state = "done" if item.table_done else "reading"
                self.progress(f"snapshot table {number}/{item.tables_total} {item.table}: {state}, "
                              f"{item.rows:,} rows ({item.rows / elapsed:,.0f} rows/s)")
                if item.table_done:
                    rate_start = time.monotonic()
                continue
            if buf.count + buf.staged >= self.max_records or (
                not buf.empty and time.monotonic() - buf.since >= self.interval
            ):
                self._commit(buf, snapshot)
            elif buf.size >= self.max_bytes:
                self._stage(buf, snapshot)
        self._report_events(snapshot)
        if not buf.empty or buf.schemas or buf.checkpoint is not None:
            self._commit(buf, snapshot)
        self._wait()
        return True

    def _checkpoint(self, buf: _Buffer, item: Checkpoint, snapshot: bool) -> None:
        """A transaction end (or keepalive): commit the batch if it is due.

        This runs after every source transaction (one-row transactions: once per row), so the
        offset's map is built only when it is compared."""
        buf.boundary = len(buf.records)
        if item.idle and not snapshot and self._unchanged(buf, item.offset.to_dict()):
            self._wait()  # nothing new since the last commit: no empty bronze batch per idle run
            self.session.acknowledge(connector_offset(item.offset))  # durable already: the slot may lag
            self._transaction_end(buf, item.offset, snapshot, report=True, transactions=item.transactions)
            buf.checkpoint = None
            return
        buf.checkpoint = item.offset
        buf.at_checkpoint = True
        self._transaction_end(buf, item.offset, snapshot, report=item.idle, transactions=item.transactions)
        due = time.monotonic() - buf.since >= self.interval
        if item.idle or snapshot or (due and (not buf.empty or item.offset.to_dict() != self._offset)):
            self._commit(buf, snapshot)
        if item.idle:
            self._wait()

    def _unchanged(self, buf: _Buffer, offset: Mapping[str, Any]) -> bool:
        """Whether committing ``buf`` at ``offset`` would add nothing to the last commit (in flight or done)."""
        return (buf.empty and not buf.schemas and offset == self._offset
                and (buf.checkpoint is None or buf.checkpoint.to_dict() == offset))

    def _stop_reading(self, items: Iterator[StreamItem], buf: _Buffer, snapshot: bool) -> None:
        """Stop: commit the buffer only if it ends at a transaction boundary, else abandon it.

        A snapshot is never committed part-way here (the next run discards and redoes an
        interrupted one anyway). The commit in flight finishes and is acknowledged.
        """
        self.result.stopped = True
        self._report_events(snapshot)
        close = getattr(items, "close", None)
        if close is not None:
            close()  # the reader stops (a generator runs its cleanup)
        if not snapshot and buf.at_checkpoint and buf.checkpoint is not None:
            self._commit(buf, snapshot)
        else:
            self.result.abandoned += buf.count + buf.staged
        self._wait()
        self.progress(f"stopped: {self.result.abandoned} records read but not committed are left to the next run")

    def _seen(self, buf: _Buffer, items: Sequence[ChangeRecord | ChangeBlock]) -> None:
        """Count the change events among ``items`` (not transaction, heartbeat or history records)."""
        ops = self._ops
        for i in items:
            if isinstance(i, ChangeBlock):
                ops[i.op] = ops.get(i.op, 0) + len(i)
                buf.events_since_checkpoint += len(i)
                self._last_event = i
            elif i.op is not None:
                ops[i.op] = ops.get(i.op, 0) + 1
                buf.events_since_checkpoint += 1
                self._last_event = i

    def _transaction_end(self, buf: _Buffer, offset: SourceOffset, snapshot: bool, *, report: bool,
                         transactions: int = 1) -> None:
        """A checkpoint (at ``offset``) after change events ends ``transactions`` source transactions
        (streaming only); the metrics hear of it now if ``report``, else within `METRICS_REPORT_S`."""
        if buf.events_since_checkpoint and not snapshot:
            buf.transactions += transactions
            self._ended = offset
        buf.events_since_checkpoint = 0
        if report or time.monotonic() >= self._report_at:
            self._report_events(snapshot)

    def _report_events(self, snapshot: bool) -> None:
        """Hand the events counted since the last report, and the newest transaction end's source
        time, to the metrics (at most every `METRICS_REPORT_S` between commits, not per record or
        per transaction: the metrics take a lock)."""
        self._report_at = time.monotonic() + METRICS_REPORT_S
        if self._ended is not None:
            self.metrics.source_time(offset_time_ms(self._ended.to_dict()))
            self._ended = None
        last = self._last_event
        if not self._ops or last is None:
            return
        position = str(last.positions[-1]) if isinstance(last, ChangeBlock) else last.position
        self.metrics.events(self._ops, last.topic, position, snapshot=snapshot)
        self._ops, self._last_event = {}, None

    def _stage(self, buf: _Buffer, snapshot: bool) -> None:
        """Hand the buffer's records to the commit thread to be written to data files."""
        handover = buf.take_records(snapshot=snapshot)  # here, while the writer thread works on the last one
        self._wait()
        future: Future[BronzeCommitResult | None] = self._pool.submit(self._write_stage, handover)
        self._inflight = _InFlight(future, None, False, 0, None)

    def _commit(self, buf: _Buffer, snapshot: bool) -> None:
        """Hand the buffer to the commit thread; at most one commit is in flight.

        Reading the source goes on while the previous batch is written. The source is
        acknowledged only once the batch's commit has returned.
        """
        self._report_events(snapshot)  # the metrics count the batch's events before its commit
        acknowledge = buf.checkpoint
        position = buf.last_position()
        if acknowledge is not None:
            offset = acknowledge.to_dict()
        elif snapshot and position is not None:  # a snapshot batch cut on size: at its last record
            offset = self.session.offset_of(position).to_dict()
        else:
            offset = self._offset
        # the snapshot reader yields a Checkpoint only once every table has been read
        completed = self._snapshot_completed or (snapshot and buf.checkpoint is not None)
        handover = buf.take_records(snapshot=snapshot)
        self._wait()
        future: Future[BronzeCommitResult | None] = self._pool.submit(
            self._write_commit, handover, buf.schemas, offset, completed)
        self._inflight = _InFlight(future, acknowledge, snapshot, buf.transactions, offset)
        self._offset = dict(offset)
        buf.schemas, buf.checkpoint, buf.staged, buf.staged_position = [], None, 0, None
        buf.transactions = 0
        buf.since = time.monotonic()

    def _write_stage(self, handover: _Handover) -> None:
        """On the commit thread: stage records, telling the writer where the transaction ended."""
        if handover.ended is not None:
            self.writer.stage(handover.ended, transaction_end=True)
        self.writer.stage(handover.rest, transaction_end=False)

    def _write_commit(self, handover: _Handover, schemas: list[SchemaVersion], offset: Mapping[str, Any],
                      completed: bool) -> BronzeCommitResult:
        """On the commit thread: commit a batch (see `_write_stage`)."""
        if handover.ended is not None:
            self.writer.stage(handover.ended, transaction_end=True)
        return self.writer.commit(handover.rest, schemas, offset, snapshot_completed=completed,
                                  transaction_end=False)

    def _wait(self) -> None:
        """Wait for the commit in flight, account for it and acknowledge its offset."""
        if self._inflight is None:
            return
        inflight, self._inflight = self._inflight, None
        future, ack, snapshot = inflight.future, inflight.acknowledge, inflight.snapshot
        result = future.result()
        if result is None:  # records staged, nothing committed yet
            return
        self._account(result, inflight)
        self.result.batches += 1
        self.result.skipped_replays += result.records_skipped
        for topic, n in result.per_topic.items():
            self.result.per_topic[topic] = self.result.per_topic.get(topic, 0) + n
        private = result.per_topic.get(HISTORY_TOPIC, 0)  # the connector's own history is not data
        if snapshot:
            self.result.snapshot_rows += result.records_written + result.records_skipped - private
        else:
            self.result.streamed_records += result.records_written + result.records_skipped - private
        if ack is not None:
            self.session.acknowledge(connector_offset(ack))

    def _account(self, result: BronzeCommitResult, inflight: _InFlight) -> None:
        """Report a durable bronze commit to the metrics and, at -v, the log."""
        records = result.records_written
        self.metrics.committed(records=records, bytes_written=result.bytes_written,
                               transactions=inflight.transactions)
        position = source_position(inflight.offset or {})
        log.info("source %s: bronze batch %d committed: %d records, %d bytes, %d transactions, position %s, "
                 "committed at %s", self.writer.source, result.batch, records, result.bytes_written,
                 inflight.transactions, position.text if position else "-",
                 time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                 extra={"source": self.writer.source, "batch": result.batch, "records": records,
                        "bytes": result.bytes_written, "transactions": inflight.transactions,
                        "position": position.text if position else None})


@dataclass(frozen=True)
class _Handover:
    """Records handed to the commit thread, split at the last checkpoint among them.

    Attributes:
        ended: the records a transaction end follows; None: no checkpoint came since the last
            hand-over (then every record here belongs to a transaction still open).
        rest: the records after it, of a transaction still open.
    """

    ended: list[Prepared] | None
    rest: list[Prepared]


@dataclass(frozen=True)
class _InFlight:
    """The commit (or stage) the commit thread is working on.

    Attributes:
        acknowledge: the offset to acknowledge once it is durable (None: nothing to acknowledge).
        snapshot: whether it holds snapshot records.
        transactions: source transactions it ends.
        offset: the offset it commits (None: a stage).
    """

    future: Future[BronzeCommitResult | None]
    acknowledge: SourceOffset | None
    snapshot: bool
    transactions: int
    offset: dict[str, Any] | None
