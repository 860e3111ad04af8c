"""Oracle incremental snapshots paused, resumed and stopped by signals, on the live fake (PostgreSQL
tables, their decoding as LogMiner rows), and their progress as the metrics see it (the coordinator
reports to `pipelines.metrics.SourceMetrics`). The oracle is PostgreSQL: the tables' keys."""

from __future__ import annotations

from pathlib import Path

import psycopg
import pytest
from orjson import loads

from cdc_sources.spi.snapshot_progress import IncrementalProgress
from pipelines.metrics import SourceMetrics
from tests.support.bronze_rows import read_topic
from tests.support.oracle_capture import SOURCE
from tests.support.oracle_live import SIGNAL, capture, create_signal_table, live_database
from tests.support.oracle_workload import OWNER, OracleWorkload

pytestmark = [pytest.mark.integration]

OPTIONS = {"snapshot.mode": "no_data",
           "table.include.list": f"INVENTORY\\.CUSTOMERS,INVENTORY\\.ORDERS,INVENTORY\\.{SIGNAL}",
           "signal.data.collection": f"ORCLPDB1.INVENTORY.{SIGNAL}", "incremental.snapshot.chunk.size": 20,
           "poll.interval.ms": 20}


class _Recording(SourceMetrics):
    def __init__(self) -> None:
        super().__init__(SOURCE, "oracle")
        self.seen: list[IncrementalProgress] = []

    def incremental_snapshot(self, progress: IncrementalProgress) -> None:
        super().incremental_snapshot(progress)
        self.seen.append(progress)


def _signal(dsn: str, sig_id: str, kind: str, data: str | None) -> None:
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f'INSERT INTO "{OWNER}"."{SIGNAL}" VALUES (%s, %s, %s)', (sig_id, kind, data))


def _reads(root: str, table: str) -> list[int]:
    return [loads(r["key"])["ID"] for r in read_topic(root, f"{SOURCE}.{OWNER}.{table}") if r["op"] == "r"]


def _run(root: str, dsn: str) -> _Recording:
    metrics = _Recording()
    capture(root, live_database(OracleWorkload(dsn, create=False)), OPTIONS, until_idle=True, metrics=metrics)
    return metrics


def test_incremental_snapshot_paused_resumed_stopped_and_its_progress(pg_db: str, tmp_path: Path) -> None:
    OracleWorkload(pg_db)
    create_signal_table(pg_db)
    with psycopg.connect(pg_db, autocommit=True) as conn:
        conn.execute(f'INSERT INTO "{OWNER}"."CUSTOMERS" SELECT i, \'c\' || i FROM generate_series(1, 70) i')
        conn.execute(f'INSERT INTO "{OWNER}"."ORDERS" SELECT i, i, 1, \'new\' FROM generate_series(1, 90) i')
    root = str(tmp_path / "lake")
    _run(root, pg_db)  # streaming from now

    # paused before its first chunk was read: that chunk completes, no other starts
    data = '{"data-collections": ["ORCLPDB1.INVENTORY.CUSTOMERS"], "type": "incremental"}'
    _signal(pg_db, "i-1", "execute-snapshot", data)
    _signal(pg_db, "p-1", "pause-snapshot", None)
    paused = _run(root, pg_db)
    assert sorted(_reads(root, "CUSTOMERS")) == list(range(1, 21))
    last = paused.seen[-1]
    assert (last.running, last.paused, last.completed, last.table, last.chunk_to) == (
        True, True, False, "INVENTORY.CUSTOMERS", '["20"]')
    assert (paused.snapshot_running, paused.snapshot_paused, paused.rows_scanned) == (
        True, True, {"INVENTORY.CUSTOMERS": 20})

    # resumed (in a new run: the pause is kept in the offset): the rest, chunk by chunk, in key order
    _signal(pg_db, "r-1", "resume-snapshot", None)
    resumed = _run(root, pg_db)
    assert sorted(_reads(root, "CUSTOMERS")) == list(range(1, 71))
    chunks = list(dict.fromkeys((p.chunk_from, p.chunk_to) for p in resumed.seen if p.chunk_to))
    assert chunks == [('["20"]', '["40"]'), ('["40"]', '["60"]'), ('["60"]', '["70"]')]
    assert (resumed.snapshot_running, resumed.snapshot_completed, resumed.snapshot_aborted) == (False, True, False)
    assert resumed.rows_scanned == {"INVENTORY.CUSTOMERS": 50}  # this run's rows

    # stopped before its second chunk: ORDERS is read no further
    _signal(pg_db, "i-2", "execute-snapshot", data.replace("CUSTOMERS", "ORDERS"))
    _signal(pg_db, "s-1", "stop-snapshot", '{"data-collections": ["ORCLPDB1.INVENTORY.ORDERS"], "type": "incremental"}')
    stopped = _run(root, pg_db)
    assert len(_reads(root, "ORDERS")) <= 20
    assert (stopped.snapshot_running, stopped.snapshot_completed, stopped.snapshot_aborted) == (False, False, True)
    assert stopped.remaining_table_count == 0
