"""``/metrics`` and ``/health`` over HTTP for `pipelines.metrics` (``--metrics-port``).

Kept apart from `pipelines.metrics` so that a capture without ``--metrics-port`` does not import
prometheus_client and the HTTP server (a noticeable part of a short run's start-up).
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from pipelines.metrics import OWN_PREFIX, PREFIX, CaptureMetrics, CaptureState, MetricsView, health

log = logging.getLogger(__name__)


Gauge = Callable[..., None]
"""Adds one gauge sample: ``(name, context, view, value, help, extra labels)``."""


def _chunk_gauges(gauge: Gauge, v: MetricsView) -> None:
    """The incremental snapshot's current chunk and table key ranges (info-style, in the labels)."""
    i, s = v.incremental, "snapshot"
    if i is None or not i.chunk_id:
        return
    gauge("ChunkId", s, v, 1.0, "The incremental snapshot's current chunk (in the labels)",
          {"table": i.table, "chunk": i.chunk_id})
    gauge("ChunkFrom", s, v, 1.0, "The current chunk's lower key bound, exclusive (in the labels)",
          {"table": i.table, "key": i.chunk_from})
    gauge("ChunkTo", s, v, 1.0, "The current chunk's upper key bound (in the labels)",
          {"table": i.table, "key": i.chunk_to})
    gauge("TableFrom", s, v, 1.0, "The current table's lower key bound, exclusive (in the labels)",
          {"table": i.table, "key": i.table_from})
    gauge("TableTo", s, v, 1.0, "The current table's largest key at its start (in the labels)",
          {"table": i.table, "key": i.table_to})


class _Collector(Collector):
    def __init__(self, metrics: CaptureMetrics) -> None:
        self.metrics = metrics

    def collect(self) -> Iterator[Metric]:
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
            gauge("SnapshotPaused", s, v, float(v.snapshot_paused), "1 while an incremental snapshot is paused")
            gauge("SnapshotCompleted", s, v, float(v.snapshot_completed), "1 once the snapshot has completed")
            gauge("SnapshotAborted", s, v, float(v.snapshot_aborted), "1 once an incremental snapshot was stopped")
            _chunk_gauges(gauge, v)
            gauge("SnapshotDurationInSeconds", s, v, v.snapshot_seconds, "Seconds the snapshot has taken so far")
            gauge("SnapshotPausedDurationInSeconds", s, v, v.snapshot_paused_seconds,
                  "Seconds the incremental snapshot has been paused (pause-snapshot), over all its pauses")
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
        restarts, start_failures = self.metrics.sail_server.counts()
        yield CounterMetricFamily(OWN_PREFIX + "sail_server_restarts",
                                  "Restarts of the Sail server process over its memory budget", value=restarts)
        yield CounterMetricFamily(OWN_PREFIX + "sail_server_start_failures",
                                  "Starts of a new Sail server process that failed (each retried or fatal)",
                                  value=start_failures)



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
