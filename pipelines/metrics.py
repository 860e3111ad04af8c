"""Capture metrics: what each source's capture is doing, under Debezium's metric names.

The coordinator reports to a `SourceMetrics` (one per source); nothing here orders work.
`MetricsServer` serves every source's numbers in the Prometheus text format at ``/metrics``
and a health check at ``/health``; `pipelines.capture_status` writes the same numbers to a
status file beside bronze's offsets for ``cdc-lakehouse status``.

Metric names follow Debezium's JMX attributes as the Prometheus JMX exporter shows them
(``debezium_metrics_<Attribute>``), labelled ``context`` (``snapshot`` or ``streaming``),
``plugin`` (``postgres``, ``mysql``, ``mariadb``) and ``name`` (the source); ``RowsScanned``
also by ``table``. ``LastEvent`` and ``SourceEventPosition`` are text in Debezium: here they
are info-style gauges (value 1) whose labels carry the text, as are an incremental snapshot's
``ChunkId``, ``ChunkFrom``, ``ChunkTo``, ``TableFrom`` and ``TableTo``. As in Debezium, an
incremental snapshot (`cdc_sources.spi.snapshot_progress`) reports under ``context="snapshot"``
too: ``SnapshotRunning``, ``SnapshotPaused``, ``SnapshotPausedDurationInSeconds``,
``SnapshotCompleted``, ``SnapshotAborted``,
``RowsScanned`` and the table counts then follow it, while streaming goes on; so do they for a
blocking snapshot. Numbers Debezium does not have
(bronze commits, bytes, commit time) are ``cdc_lakehouse_*``, as are the counters of the Sail
server's restarts in a looping ``run`` (`pipelines.sail_restart`; not per source).
"""

from __future__ import annotations

import enum
import logging
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from cdc_sources.spi import SourceError
from cdc_sources.spi.snapshot_progress import BlockingProgress, IncrementalProgress
from pipelines.sail_restart import SailServerStats

if TYPE_CHECKING:
    from pipelines.metrics_http import MetricsServer

log = logging.getLogger(__name__)

PREFIX = "debezium_metrics_"
OWN_PREFIX = "cdc_lakehouse_"


class CaptureState(enum.StrEnum):
    """What a source's capture is doing."""

    STARTING = "starting"
    SNAPSHOTTING = "snapshotting"
    STREAMING = "streaming"
    STOPPED = "stopped"
    FAILED = "failed"


@dataclass
class SourceMetrics:
    """The live numbers of one source's capture; updated by the capture thread, read by others.

    Counters count since the process started (as Debezium's do), except
    ``transactions_committed``, which `pipelines.capture_status` carries across runs.
    """

    source: str
    plugin: str
    state: CaptureState = CaptureState.STARTING
    connected: bool = False
    total_table_count: int = 0
    remaining_table_count: int = 0
    rows_scanned: dict[str, int] = field(default_factory=dict)
    snapshot_running: bool = False
    snapshot_completed: bool = False
    snapshot_paused: bool = False
    snapshot_aborted: bool = False
    incremental: IncrementalProgress | None = None
    snapshot_started: float | None = None
    snapshot_seconds: float = 0.0
    snapshot_events: int = 0
    streaming_events: int = 0
    streaming_ops: dict[str, int] = field(default_factory=dict)
    transactions_committed: int = 0
    last_event_topic: str = ""
    last_event_position: str = ""
    last_event_at: float | None = None
    source_ts_ms: int | None = None
    behind_ms: int = -1
    commits: int = 0
    records_committed: int = 0
    bytes_committed: int = 0
    last_commit_at: float | None = None
    last_error: str | None = None
    last_error_at: float | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    # --- reported by the coordinator -------------------------------------------------
    def snapshot_began(self) -> None:
        with self._lock:
            self.state, self.connected = CaptureState.SNAPSHOTTING, True
            self.snapshot_running, self.snapshot_completed = True, False
            self.snapshot_paused = self.snapshot_aborted = False
            self.snapshot_started, self.rows_scanned, self.incremental = time.monotonic(), {}, None

    def snapshot_table(self, table: str, rows: int, tables_done: int, tables_total: int) -> None:
        with self._lock:
            self.rows_scanned[table] = rows
            self.total_table_count = tables_total
            self.remaining_table_count = tables_total - tables_done

    def snapshot_ended(self) -> None:
        with self._lock:
            self.snapshot_running, self.snapshot_completed = False, True
            self.remaining_table_count = 0
            if self.snapshot_started is not None:
                self.snapshot_seconds = time.monotonic() - self.snapshot_started

    def incremental_snapshot(self, progress: IncrementalProgress) -> None:
        """An incremental snapshot moved (`cdc_sources.spi.snapshot_progress.SnapshotListener`)."""
        with self._lock:
            before = self.incremental
            if progress.running and (before is None or before.correlation_id != progress.correlation_id
                                     or not before.running):
                self.snapshot_started, self.rows_scanned = time.monotonic(), {}
            self.incremental = progress
            self.snapshot_running, self.snapshot_paused = progress.running, progress.paused
            self.snapshot_completed, self.snapshot_aborted = progress.completed, progress.aborted
            self.rows_scanned.update(progress.rows_scanned)
            self.total_table_count, self.remaining_table_count = progress.total_tables, progress.remaining_tables
            if not progress.running and self.snapshot_started is not None:
                self.snapshot_seconds = time.monotonic() - self.snapshot_started

    def blocking_snapshot(self, progress: BlockingProgress) -> None:
        """A blocking snapshot moved (`cdc_sources.spi.snapshot_progress.SnapshotListener`)."""
        with self._lock:
            if progress.running and not self.snapshot_running:
                self.snapshot_started, self.rows_scanned = time.monotonic(), {}
                self.snapshot_paused = self.snapshot_aborted = False
            self.snapshot_running, self.snapshot_completed = progress.running, progress.completed
            self.rows_scanned.update(progress.rows_scanned)
            self.total_table_count = progress.tables_total
            self.remaining_table_count = progress.tables_total - progress.tables_done
            if progress.completed and self.snapshot_started is not None:
                self.snapshot_seconds = time.monotonic() - self.snapshot_started

    def streaming_began(self) -> None:
        with self._lock:
            self.state, self.connected = CaptureState.STREAMING, True

    def events(self, ops: Mapping[str, int], topic: str, position: str, *, snapshot: bool) -> None:
        """Change events were read, counted by ``op``; ``topic`` and ``position``: the last one's."""
        count = sum(ops.values())
        with self._lock:
            if snapshot:
                self.snapshot_events += count
            else:
                self.streaming_events += count
                for op, n in ops.items():
                    self.streaming_ops[op] = self.streaming_ops.get(op, 0) + n
            self.last_event_topic, self.last_event_position = topic, position
            self.last_event_at = time.time()

    def source_time(self, ts_ms: int | None) -> None:
        """The source's commit time of the newest event read (from a checkpoint's offset)."""
        if ts_ms is None:
            return
        with self._lock:
            self.source_ts_ms = ts_ms
            self.behind_ms = max(0, int(time.time() * 1000) - ts_ms)

    def committed(self, *, records: int, bytes_written: int, transactions: int) -> None:
        """A bronze commit became durable."""
        with self._lock:
            self.commits += 1
            self.records_committed += records
            self.bytes_committed += bytes_written
            self.transactions_committed += transactions
            self.last_commit_at = time.time()

    # --- reported by the capture loop ------------------------------------------------
    def failed(self, error: BaseException | str) -> None:
        with self._lock:
            self.state, self.connected, self.snapshot_running = CaptureState.FAILED, False, False
            self.last_error, self.last_error_at = str(error), time.time()

    def restarting(self) -> None:
        with self._lock:
            self.state = CaptureState.STARTING

    def stopped(self) -> None:
        with self._lock:
            if self.state is not CaptureState.FAILED:
                self.state = CaptureState.STOPPED
            self.connected, self.snapshot_running = False, False

    def view(self) -> MetricsView:
        """A consistent copy of the numbers."""
        with self._lock:
            now = time.monotonic()
            snapshot_seconds = self.snapshot_seconds
            if self.snapshot_running and self.snapshot_started is not None:
                snapshot_seconds = now - self.snapshot_started
            paused_seconds = self.incremental.paused_duration(now) if self.incremental is not None else 0.0
            return MetricsView(
                self.source, self.plugin, self.state, self.connected, self.total_table_count,
                self.remaining_table_count, dict(self.rows_scanned), self.snapshot_running, self.snapshot_completed,
                self.snapshot_paused, self.snapshot_aborted, self.incremental, snapshot_seconds, paused_seconds,
                self.snapshot_events,
                self.streaming_events, dict(self.streaming_ops),
                self.transactions_committed,
                self.last_event_topic, self.last_event_position, self.last_event_at, self.behind_ms, self.commits,
                self.records_committed, self.bytes_committed, self.last_commit_at, self.last_error,
                self.last_error_at)


@dataclass(frozen=True)
class MetricsView:
    """A read-only copy of a `SourceMetrics` (times are Unix seconds)."""

    source: str
    plugin: str
    state: CaptureState
    connected: bool
    total_table_count: int
    remaining_table_count: int
    rows_scanned: Mapping[str, int]
    snapshot_running: bool
    snapshot_completed: bool
    snapshot_paused: bool
    snapshot_aborted: bool
    incremental: IncrementalProgress | None
    """The last incremental snapshot's progress (None: none since the process started)."""
    snapshot_seconds: float
    snapshot_paused_seconds: float
    """Seconds the last incremental snapshot has been paused, over all its pauses (in this process)."""
    snapshot_events: int
    streaming_events: int
    streaming_ops: Mapping[str, int]
    transactions_committed: int
    last_event_topic: str
    last_event_position: str
    last_event_at: float | None
    behind_ms: int
    commits: int
    records_committed: int
    bytes_committed: int
    last_commit_at: float | None
    last_error: str | None
    last_error_at: float | None

    @property
    def healthy(self) -> bool:
        """Capturing and connected."""
        return self.connected and self.state in (CaptureState.SNAPSHOTTING, CaptureState.STREAMING)


class CaptureMetrics:
    """Every source's `SourceMetrics` in one process."""

    def __init__(self) -> None:
        self._sources: dict[str, SourceMetrics] = {}
        self._lock = threading.Lock()
        self.sail_server = SailServerStats()
        """The Sail server's restarts, when a looping run counts them (zero otherwise)."""

    def source(self, name: str, plugin: str) -> SourceMetrics:
        """The source's metrics, created on first use."""
        with self._lock:
            found = self._sources.get(name)
            if found is None:
                found = self._sources[name] = SourceMetrics(name, plugin)
            return found

    def views(self) -> list[MetricsView]:
        with self._lock:
            sources = list(self._sources.values())
        return [s.view() for s in sources]


SNAPSHOT_METRICS = ("TotalTableCount", "RemainingTableCount", "RowsScanned", "SnapshotRunning", "SnapshotPaused",
                    "SnapshotCompleted", "SnapshotAborted", "SnapshotDurationInSeconds",
                    "SnapshotPausedDurationInSeconds", "TotalNumberOfEventsSeen",
                    "ChunkId", "ChunkFrom", "ChunkTo", "TableFrom", "TableTo")
STREAMING_METRICS = ("MilliSecondsBehindSource", "TotalNumberOfEventsSeen", "TotalNumberOfCreateEventsSeen",
                     "TotalNumberOfUpdateEventsSeen", "TotalNumberOfDeleteEventsSeen", "LastEvent",
                     "SourceEventPosition", "NumberOfCommittedTransactions", "Connected", "MilliSecondsSinceLastEvent")
OWN_METRICS = ("up", "bronze_commits", "bronze_records_committed", "bronze_bytes_committed",
               "last_commit_timestamp_seconds")
PROCESS_COUNTERS = ("sail_server_restarts", "sail_server_start_failures")
"""Counters of the whole process, not of a source (``_total`` in the text format)."""


def exported_names() -> frozenset[str]:
    """Every metric family name `/metrics` can show."""
    return frozenset({PREFIX + n for n in SNAPSHOT_METRICS + STREAMING_METRICS}
                     | {OWN_PREFIX + n for n in OWN_METRICS + PROCESS_COUNTERS})


def health(metrics: CaptureMetrics) -> tuple[bool, dict[str, Any]]:
    """Whether every source's capture runs and is connected, with each source's state."""
    views = metrics.views()
    body = {v.source: {"state": str(v.state), "connected": v.connected, "last_error": v.last_error} for v in views}
    return bool(views) and all(v.healthy for v in views), body


@contextmanager
def serving(metrics: CaptureMetrics, port: int, say: Callable[[str], None],
            host: str = "") -> Iterator[MetricsServer | None]:
    """Serve ``metrics`` on ``port`` while the block runs (0: not at all), on ``host``'s address
    ("": every interface, as Prometheus exporters do; ``127.0.0.1``: this machine only).

    Raises:
        CdcError: the port cannot be bound.
    """
    if port == 0:
        yield None
        return
    from pipelines.metrics_http import MetricsServer  # here: every capture would pay prometheus_client's import

    try:
        server = MetricsServer(metrics, port, host)
    except OSError as exc:
        where = f"{host}:{port}" if host else f"port {port}"
        raise SourceError(f"cannot serve metrics on {where}: {exc.strerror or exc}") from None
    server.start()
    shown = host or "localhost"
    say(f"metrics: http://{shown}:{server.port}/metrics, health: http://{shown}:{server.port}/health")
    try:
        yield server
    finally:
        server.close()
