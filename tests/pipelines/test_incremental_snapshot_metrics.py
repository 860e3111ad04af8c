"""Incremental and blocking snapshots' progress on ``/metrics``, scraped over HTTP at every move of
the snapshot during a real PostgreSQL capture; the expected keys and counts come from the tables."""

from __future__ import annotations

import socket
import threading
import time
import urllib.request
from dataclasses import replace

import orjson
import psycopg
import pytest
from prometheus_client.parser import text_string_to_metric_families

from cdc_sources.spi.snapshot_progress import BlockingProgress, IncrementalProgress
from pipelines.capture import run_capture
from pipelines.metrics import CaptureMetrics, SourceMetrics, serving
from tests.support.incremental_pg import pipeline, setup_items, signal

pytestmark = [pytest.mark.integration, pytest.mark.postgres]

ROWS, CHUNK = 300, 20
LABELS = {"context": "snapshot", "plugin": "postgres", "name": "pg"}

Scrape = dict[str, list[tuple[dict[str, str], float]]]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _scrape(port: int) -> Scrape:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
        text = r.read().decode()
    out: Scrape = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            if LABELS.items() <= s.labels.items():
                out.setdefault(s.name, []).append((dict(s.labels), s.value))
    return out


def _one(scrape: Scrape, name: str, **labels: str) -> float:
    found = [v for ls, v in scrape.get(f"debezium_metrics_{name}", []) if labels.items() <= ls.items()]
    assert len(found) == 1, (name, labels, found)
    return found[0]


def _label(scrape: Scrape, name: str, label: str) -> str | None:
    found = [ls[label] for ls, _ in scrape.get(f"debezium_metrics_{name}", [])]
    assert len(found) <= 1, (name, found)
    return found[0] if found else None


class _ScrapedMetrics(CaptureMetrics):
    """Scrapes ``/metrics`` each time the capture reports the snapshot's progress."""

    def __init__(self, port: int) -> None:
        super().__init__()
        self.port = port
        self.scrapes: list[Scrape] = []
        outer = self

        class Scraping(SourceMetrics):
            def incremental_snapshot(self, progress: IncrementalProgress) -> None:
                super().incremental_snapshot(progress)
                outer.scrapes.append(_scrape(outer.port))

            def blocking_snapshot(self, progress: BlockingProgress) -> None:
                super().blocking_snapshot(progress)
                outer.scrapes.append(_scrape(outer.port))

        self._factory = Scraping

    def source(self, name: str, plugin: str) -> SourceMetrics:
        with self._lock:
            found = self._sources.get(name)
            if found is None:
                found = self._sources[name] = self._factory(name, plugin)
            return found


def test_incremental_snapshot_progress_on_the_metrics_endpoint(pg_db, tmp_path):
    root = str(tmp_path / "lake")
    setup_items(pg_db, ROWS)
    with psycopg.connect(pg_db, autocommit=True) as conn:  # the oracle: the table's keys, chunk by chunk
        ids = [r[0] for r in conn.execute("SELECT id FROM items ORDER BY id")]
    bounds = [ids[i] for i in range(CHUNK - 1, len(ids), CHUNK)]
    cfg = pipeline(root, pg_db, **{"snapshot.mode": "no_data", "incremental.snapshot.chunk.size": str(CHUNK)})
    run_capture(cfg, until_idle=True)
    signal(pg_db, "ad-hoc-m", "execute-snapshot", {"data-collections": ["public.items"], "type": "incremental"})

    port = _free_port()
    metrics = _ScrapedMetrics(port)
    with serving(metrics, port, lambda _msg: None, host="127.0.0.1"):
        run_capture(cfg, until_idle=True, metrics=metrics)
        final = _scrape(port)

    running = [s for s in metrics.scrapes if _one(s, "SnapshotRunning") == 1]
    assert running, "no scrape saw the snapshot running"
    for s in running:
        assert _one(s, "SnapshotCompleted") == 0 and _one(s, "SnapshotPaused") == 0
        assert _one(s, "TotalTableCount") == 1 and _one(s, "RemainingTableCount") == 1
        assert _label(s, "TableTo", "key") == orjson.dumps([str(ids[-1])]).decode()
        assert _label(s, "TableFrom", "key") == "[]"
    # every chunk was shown, in key order, each from the previous one's last key
    shown = [(_label(s, "ChunkFrom", "key"), _label(s, "ChunkTo", "key")) for s in running]
    chunks = list(dict.fromkeys(c for c in shown if c[1] is not None))
    expected = [(orjson.dumps([] if i == 0 else [str(bounds[i - 1])]).decode(), orjson.dumps([str(b)]).decode())
                for i, b in enumerate(bounds)]
    assert chunks == expected
    assert len({_label(s, "ChunkId", "chunk") for s in running}) == len(bounds)
    scanned = [_one(s, "RowsScanned", table="public.items") for s in running if "debezium_metrics_RowsScanned" in s]
    assert scanned == sorted(scanned) and len(set(scanned)) >= len(bounds) - 1  # the count moves chunk by chunk
    assert all(n % CHUNK == 0 for n in scanned)

    assert _one(final, "SnapshotRunning") == 0 and _one(final, "SnapshotCompleted") == 1
    assert _one(final, "SnapshotAborted") == 0 and _one(final, "RemainingTableCount") == 0
    assert _one(final, "RowsScanned", table="public.items") == len(ids)


def test_blocking_snapshot_progress_on_the_metrics_endpoint(pg_db, tmp_path):
    root = str(tmp_path / "lake")
    setup_items(pg_db, 120)
    with psycopg.connect(pg_db, autocommit=True) as conn:
        conn.execute("CREATE TABLE parts (id int PRIMARY KEY)")
        conn.execute("INSERT INTO parts SELECT generate_series(1, 35)")
    cfg = pipeline(root, pg_db, **{"snapshot.mode": "no_data"})
    run_capture(cfg, until_idle=True)
    signal(pg_db, "b-1", "execute-snapshot", {"data-collections": ["public.items", "public.parts"], "type": "blocking"})
    with psycopg.connect(pg_db, autocommit=True) as conn:
        conn.execute("INSERT INTO items VALUES (1000, 'after', 1)")  # a transaction end after the signal
        counts = {t: conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in ("items", "parts")}

    port = _free_port()
    metrics = _ScrapedMetrics(port)
    with serving(metrics, port, lambda _msg: None, host="127.0.0.1"):
        run_capture(cfg, until_idle=True, metrics=metrics)
        final = _scrape(port)

    seen = [(_one(s, "SnapshotRunning"), _one(s, "SnapshotCompleted"), _one(s, "TotalTableCount"),
             _one(s, "RemainingTableCount"),
             {ls["table"]: v for ls, v in s.get("debezium_metrics_RowsScanned", [])}) for s in metrics.scrapes]
    assert seen == [(1, 0, 2, 2, {}), (1, 0, 2, 1, {"public.items": counts["items"]}),
                    (1, 0, 2, 0, {"public.items": counts["items"], "public.parts": counts["parts"]}),
                    (0, 1, 2, 0, {"public.items": counts["items"], "public.parts": counts["parts"]})]
    assert _one(final, "SnapshotRunning") == 0 and _one(final, "SnapshotCompleted") == 1
    assert "debezium_metrics_ChunkId" not in final


def _wait_scrape(port: int, name: str, value: float, timeout: float = 60) -> Scrape:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        scrape = _scrape(port)
        if _one(scrape, name) == value:
            return scrape
        time.sleep(0.05)
    raise AssertionError(f"{name} was not {value} within {timeout}s: {scrape}")


def test_paused_duration_of_a_real_pause_and_resume_on_the_metrics_endpoint(pg_db, tmp_path):
    """``SnapshotPausedDurationInSeconds`` over a real ``pause-snapshot`` then ``resume-snapshot`` in one
    running capture; the oracle is the test's own clock around the signals it sends and sees take effect."""
    root = str(tmp_path / "lake")
    setup_items(pg_db, 100)
    cfg = pipeline(root, pg_db, **{"snapshot.mode": "no_data", "incremental.snapshot.chunk.size": "20"})
    run_capture(cfg, until_idle=True)
    port, metrics, stop, failed = _free_port(), CaptureMetrics(), threading.Event(), []

    def capture() -> None:
        try:
            run_capture(cfg, until_idle=False, stop=stop, metrics=metrics)
        except BaseException as exc:  # reported below
            failed.append(exc)

    with serving(metrics, port, lambda _msg: None, host="127.0.0.1"):
        thread = threading.Thread(target=capture, daemon=True)
        thread.start()
        try:
            signal(pg_db, "pd-1", "execute-snapshot", {"data-collections": ["public.items"], "type": "incremental"})
            paused_sent = time.monotonic()
            signal(pg_db, "pd-2", "pause-snapshot", None)
            _wait_scrape(port, "SnapshotPaused", 1)
            paused_seen = time.monotonic()
            time.sleep(1.2)
            during = _scrape(port)  # a pause in progress counts
            assert 1.2 <= _one(during, "SnapshotPausedDurationInSeconds") <= time.monotonic() - paused_sent
            resume_sent = time.monotonic()
            signal(pg_db, "pd-3", "resume-snapshot", None)
            final = _wait_scrape(port, "SnapshotCompleted", 1)
            done_seen = time.monotonic()
            time.sleep(0.3)
            later = _scrape(port)  # no longer paused: it no longer grows
        finally:
            stop.set()
            thread.join(60)
    assert not failed, failed
    paused = _one(final, "SnapshotPausedDurationInSeconds")
    assert resume_sent - paused_seen <= paused <= done_seen - paused_sent
    assert _one(later, "SnapshotPausedDurationInSeconds") == paused
    assert _one(final, "SnapshotDurationInSeconds") >= paused
    assert _one(final, "RowsScanned", table="public.items") == 100


def _progress(**changes: object) -> IncrementalProgress:
    base = IncrementalProgress("c1", running=True, paused=False, completed=False, aborted=False, table="public.t",
                               chunk_id="w1", chunk_from="[]", chunk_to='["20"]', table_from="[]", table_to='["50"]',
                               total_tables=2, remaining_tables=2, rows_scanned=(("public.t", 20),))
    return replace(base, **changes)  # type: ignore[arg-type]


def test_a_paused_then_stopped_incremental_snapshot_on_the_endpoint():
    metrics = CaptureMetrics()
    source = metrics.source("pg", "postgres")
    port = _free_port()
    with serving(metrics, port, lambda _msg: None, host="127.0.0.1"):
        source.incremental_snapshot(_progress(paused=True))
        paused = _scrape(port)
        source.incremental_snapshot(_progress(running=False, aborted=True, remaining_tables=0,
                                              rows_scanned=(("public.t", 40),)))
        stopped = _scrape(port)
        source.snapshot_began()  # a full snapshot afterwards: the incremental one's numbers go
        full = _scrape(port)
    assert (_one(paused, "SnapshotRunning"), _one(paused, "SnapshotPaused"), _one(paused, "TotalTableCount")) == (
        1, 1, 2)
    assert _label(paused, "ChunkId", "chunk") == "w1" and _label(paused, "ChunkTo", "table") == "public.t"
    assert (_one(stopped, "SnapshotRunning"), _one(stopped, "SnapshotPaused"), _one(stopped, "SnapshotAborted"),
            _one(stopped, "SnapshotCompleted"), _one(stopped, "RowsScanned", table="public.t")) == (0, 0, 1, 0, 40)
    assert _one(full, "SnapshotAborted") == 0 and "debezium_metrics_ChunkId" not in full
    assert "debezium_metrics_RowsScanned" not in full
