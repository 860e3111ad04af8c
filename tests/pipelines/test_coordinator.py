"""The coordinator's work per source transaction: one-row transactions, the common OLTP shape,
end with a checkpoint each, so what the coordinator does per checkpoint is done per row."""

from __future__ import annotations

import time
from collections.abc import Mapping

import psycopg
import pytest

from pipelines import coordinator
from pipelines.capture import run_capture
from pipelines.metrics import CaptureMetrics, SourceMetrics
from tests.support.pipeline_yaml import pipeline

pytestmark = [pytest.mark.integration, pytest.mark.postgres]

TRANSACTIONS = 300


class _CountingMetrics(SourceMetrics):
    """The real metrics, counting how often the capture loop reports to them."""

    reports = 0

    def events(self, ops: Mapping[str, int], topic: str, position: str, *, snapshot: bool) -> None:
        self.reports += 1
        super().events(ops, topic, position, snapshot=snapshot)


class _Metrics(CaptureMetrics):
    def __init__(self) -> None:
        super().__init__()
        self.counting: _CountingMetrics | None = None

    def source(self, name: str, plugin: str) -> SourceMetrics:
        if self.counting is None:
            self.counting = _CountingMetrics(name, plugin)
        return self.counting


def test_one_row_transactions_reach_the_metrics_in_few_reports(pg_db, tmp_path, monkeypatch):
    # a report interval longer than the run: between commits, nothing is reported
    monkeypatch.setattr(coordinator, "METRICS_REPORT_S", 3600.0)
    cfg = pipeline(str(tmp_path / "lake"), pg_db, capture={"commit_interval_ms": 3_600_000})
    with psycopg.connect(pg_db, autocommit=True) as conn:
        conn.execute("CREATE TABLE items (id int PRIMARY KEY, name text)")
    run_capture(cfg, until_idle=True)  # the slot and an offset, before the changes
    with psycopg.connect(pg_db, autocommit=True) as conn:
        for i in range(TRANSACTIONS):  # autocommit: one transaction each
            conn.execute("INSERT INTO items VALUES (%s, 'x')", (i,))
        last_begun_ms = time.time() * 1000
        conn.execute("UPDATE items SET name = 'last' WHERE id = 0")
    metrics = _Metrics()
    before = time.time() * 1000
    run_capture(cfg, until_idle=True, metrics=metrics)
    source = metrics.counting
    assert source is not None
    # every event counted, each op, and the newest transaction's commit time
    assert source.streaming_events == TRANSACTIONS + 1
    assert source.streaming_ops == {"c": TRANSACTIONS, "u": 1}
    assert source.transactions_committed == TRANSACTIONS + 1
    assert source.source_ts_ms is not None and last_begun_ms - 1 <= source.source_ts_ms <= before
    # ... in a few reports (the commits and the idle end), not one per transaction
    assert 1 <= source.reports <= 5
