"""Capture metrics: what each source's capture is doing, under Debezium's metric names.

The coordinator reports to a `SourceMetrics` (one per source); nothing here orders work.
`MetricsServer` serves every source's numbers in the Prometheus text format at ``/metrics``
and a health check at ``/health``; `pipelines.capture_status` writes the same numbers to a
status file beside bronze's offsets for ``cdc-lakehouse status``.

Metric names follow Debezium's JMX attributes as the Prometheus JMX exporter shows them
(``debezium_metrics_<Attribute>``), labelled ``context`` (``snapshot`` or ``streaming``),
``plugin`` (``postgres``, ``mysql``, ``mariadb``) and ``name`` (the source); ``RowsScanned``
also by ``table``. ``LastEvent`` and ``SourceEventPosition`` are text in Debezium: here they
are info-style gauges (value 1) whose labels carry the text. Numbers Debezium does not have
(bronze commits, bytes, commit time) are ``cdc_lakehouse_*``.
"""

from __future__ import annotations

import enum
import json
import logging
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from cdc_sources.spi import SourceError

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
            self.snapshot_started, self.rows_scanned = time.monotonic(), {}

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
            snapshot_seconds = self.snapshot_seconds
            if self.snapshot_running and self.snapshot_started is not None:
                snapshot_seconds = time.monotonic() - self.snapshot_started
            return MetricsView(
                self.source, self.plugin, self.state, self.connected, self.total_table_count,
                self.remaining_table_count, dict(self.rows_scanned), self.snapshot_running, self.snapshot_completed,
                snapshot_seconds, self.snapshot_events, self.streaming_events, dict(self.streaming_ops),
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
    snapshot_seconds: float
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


SNAPSHOT_METRICS = ("TotalTableCount", "RemainingTableCount", "RowsScanned", "SnapshotRunning", "SnapshotCompleted",
                    "SnapshotDurationInSeconds", "TotalNumberOfEventsSeen")
STREAMING_METRICS = ("MilliSecondsBehindSource", "TotalNumberOfEventsSeen", "TotalNumberOfCreateEventsSeen",
                     "TotalNumberOfUpdateEventsSeen", "TotalNumberOfDeleteEventsSeen", "LastEvent",
                     "SourceEventPosition", "NumberOfCommittedTransactions", "Connected", "MilliSecondsSinceLastEvent")
OWN_METRICS = ("up", "bronze_commits", "bronze_records_committed", "bronze_bytes_committed",
               "last_commit_timestamp_seconds")


def exported_names() -> frozenset[str]:
    """Every metric family name `/metrics` can show."""
    return frozenset({PREFIX + n for n in SNAPSHOT_METRICS + STREAMING_METRICS} | {OWN_PREFIX + n for n in OWN_METRICS})


class _Collector(Collector):
    def __init__(self, metrics: CaptureMetrics) -> None:
        self.metrics = metrics

    def collect(self) -> Iterator[GaugeMetricFamily]:
        views = self.metrics.views()
        labels = ["context", "plugin", "name"]
        families: dict[str, GaugeMetricFamily] = {}

        def gauge(name: str, context: str, v: MetricsView, value: float, help_: str,
                  extra: Mapping[str, str] | None = None) -> None:
            full = (OWN_PREFIX + name) if context == "" else (PREFIX + name)
            key = f"{full}:{','.join(extra or {})}"
            family = families.get(key)
            if family is None:
                family = families[key] = GaugeMetricFamily(
                    full, help_, labels=(labels if context else ["plugin", "name"]) + list(extra or {}))
            base = [context, v.plugin, v.source] if context else [v.plugin, v.source]
            family.add_metric(base + list((extra or {}).values()), value)

        now = time.time()
        for v in views:
            s = "snapshot"
            gauge("TotalTableCount", s, v, v.total_table_count, "Tables the snapshot reads")
            gauge("RemainingTableCount", s, v, v.remaining_table_count, "Tables the snapshot has not finished")
            for table, rows in sorted(v.rows_scanned.items()):
                gauge("RowsScanned", s, v, rows, "Rows read from each table by the snapshot", {"table": table})
            gauge("SnapshotRunning", s, v, float(v.snapshot_running), "1 while the snapshot runs")
            gauge("SnapshotCompleted", s, v, float(v.snapshot_completed), "1 once the snapshot has completed")
            gauge("SnapshotDurationInSeconds", s, v, v.snapshot_seconds, "Seconds the snapshot has taken so far")
            gauge("TotalNumberOfEventsSeen", s, v, v.snapshot_events, "Change events read")
            t = "streaming"
            gauge("TotalNumberOfEventsSeen", t, v, v.streaming_events, "Change events read")
            for op, metric in (("c", "Create"), ("u", "Update"), ("d", "Delete")):
                gauge(f"TotalNumberOf{metric}EventsSeen", t, v, v.streaming_ops.get(op, 0), f"{metric} events read")
            gauge("MilliSecondsBehindSource", t, v, v.behind_ms,
                  "Milliseconds between the last event's source commit and its reading (-1: none yet)")
            since = -1 if v.last_event_at is None else max(0, int((now - v.last_event_at) * 1000))
            gauge("MilliSecondsSinceLastEvent", t, v, since, "Milliseconds since the last event (-1: none yet)")
            gauge("NumberOfCommittedTransactions", t, v, v.transactions_committed,
                  "Source transactions committed to bronze")
            gauge("Connected", t, v, float(v.connected and v.state is CaptureState.STREAMING),
                  "1 while streaming from the source")
            if v.last_event_topic:
                gauge("LastEvent", t, v, 1.0, "The last event read (in the labels)", {"topic": v.last_event_topic})
                gauge("SourceEventPosition", t, v, 1.0, "The last event's source offset (in the labels)",
                      {"position": v.last_event_position})
            gauge("up", "", v, float(v.healthy), "1 while the capture runs and is connected")
            gauge("bronze_commits", "", v, v.commits, "Bronze commits")
            gauge("bronze_records_committed", "", v, v.records_committed, "Records committed to bronze")
            gauge("bronze_bytes_committed", "", v, v.bytes_committed, "Data-file bytes committed to bronze")
            if v.last_commit_at is not None:
                gauge("last_commit_timestamp_seconds", "", v, v.last_commit_at, "Unix time of the last bronze commit")
        yield from families.values()


def health(metrics: CaptureMetrics) -> tuple[bool, dict[str, Any]]:
    """Whether every source's capture runs and is connected, with each source's state."""
    views = metrics.views()
    body = {v.source: {"state": str(v.state), "connected": v.connected, "last_error": v.last_error} for v in views}
    return bool(views) and all(v.healthy for v in views), body


class MetricsServer:
    """``/metrics`` (Prometheus text format) and ``/health`` (200 or 503, JSON) on a port."""

    def __init__(self, metrics: CaptureMetrics, port: int, host: str = "") -> None:
        registry = CollectorRegistry(auto_describe=False)
        registry.register(_Collector(metrics))
        self.registry = registry

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                path = self.path.split("?", 1)[0]
                if path == "/metrics":
                    self._send(200, CONTENT_TYPE_LATEST, generate_latest(registry))
                elif path == "/health":
                    ok, body = health(metrics)
                    self._send(200 if ok else 503, "application/json",
                               json.dumps({"status": "up" if ok else "down", "sources": body}).encode())
                else:
                    self._send(404, "text/plain", b"not found: try /metrics or /health\n")

            def _send(self, code: int, content_type: str, body: bytes) -> None:
                self.send_response(code)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                log.debug("metrics: " + format, *args)

        self._server = ThreadingHTTPServer((host, port), Handler)
        self._server.daemon_threads = True
        self.port = int(self._server.server_address[1])
        self._thread = threading.Thread(target=self._server.serve_forever, name="metrics-http", daemon=True)

    def start(self) -> MetricsServer:
        self._thread.start()
        log.info("metrics on http://localhost:%d/metrics, health on /health", self.port)
        return self

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


@contextmanager
def serving(metrics: CaptureMetrics, port: int, say: Callable[[str], None]) -> Iterator[MetricsServer | None]:
    """Serve ``metrics`` on ``port`` while the block runs (0: not at all).

    Raises:
        CdcError: the port cannot be bound.
    """
    if port == 0:
        yield None
        return
    try:
        server = MetricsServer(metrics, port)
    except OSError as exc:
        raise SourceError(f"cannot serve metrics on port {port}: {exc.strerror or exc}") from None
    server.start()
    say(f"metrics: http://localhost:{server.port}/metrics, health: http://localhost:{server.port}/health")
    try:
        yield server
    finally:
        server.close()
