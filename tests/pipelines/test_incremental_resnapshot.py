"""An incremental snapshot is a re-snapshot: after it, silver equals the source, with a writer
updating, deleting and inserting the very rows being snapshotted (PostgreSQL, Sail)."""

from __future__ import annotations

import random
import threading
import time
from typing import Any

import psycopg
import pytest

from pipelines.capture import run_capture
from pipelines.config import PipelineConfig
from pipelines.engine import EngineSpec
from pipelines.silver_runner import run_silver
from tests.support.engines import SAIL_ONLY
from tests.support.incremental_pg import bronze, incremental_rows, pipeline, setup_items, signal
from tests.support.resnapshot_oracle import check_silver, silver_yaml

pytestmark = [pytest.mark.integration, pytest.mark.postgres, pytest.mark.spark]


def _cfg(root: str, dsn: str, skipped: str) -> PipelineConfig:
    silver = "silver:\n" + silver_yaml("pg.public.items") + "silver_options: {interval_seconds: 1}\n"
    return pipeline(root, dsn, silver=silver, **{"skipped.operations": skipped,
                                                 "incremental.snapshot.chunk.size": "20"})


def _silver(spark: Any, cfg: PipelineConfig, root: str) -> None:
    for _ in range(30):
        result = run_silver(root=root, engine=EngineSpec(), tables=cfg.silver, options=cfg.silver_options,
                            sources={"pg": "pg"}, once=True, spark=spark)
        assert result.ok, [t.error for t in result.errors]
        if all(t.status == "up_to_date" for t in result.tables):
            return
    raise AssertionError("silver did not catch up in 30 passes")


def _source(dsn: str) -> set[tuple[Any, ...]]:
    with psycopg.connect(dsn) as conn:
        return {tuple(r) for r in conn.execute("SELECT id, name, qty FROM items").fetchall()}


class _Writer(threading.Thread):
    """Updates, deletes, re-inserts and inserts rows all over the table while the snapshot runs."""

    def __init__(self, dsn: str, seed: int) -> None:
        super().__init__(daemon=True)
        self.dsn, self.rng = dsn, random.Random(seed)
        self.new: set[int] = set()
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            with psycopg.connect(self.dsn, autocommit=True) as conn:
                for i in range(400):
                    k = self.rng.randint(1, 600)
                    action = i % 4
                    if action == 0:
                        conn.execute("DELETE FROM items WHERE id = %s", (k,))
                    elif action == 1:
                        with conn.transaction():
                            conn.execute("DELETE FROM items WHERE id = %s", (k,))
                            conn.execute("INSERT INTO items VALUES (%s, 'again', 1)", (k,))
                    elif action == 2:
                        conn.execute("UPDATE items SET qty = qty + 5, name = name || '+' WHERE id = %s", (k,))
                    else:
                        self.new.add(10_000 + i)
                        conn.execute("INSERT INTO items VALUES (%s, 'during', 2)", (10_000 + i,))
                    time.sleep(0.004)
        except BaseException as exc:  # reported by the test
            self.error = exc


@SAIL_ONLY
def test_incremental_snapshot_under_concurrent_writes_leaves_silver_equal_to_source(pg_db, tmp_path, spark):
    root = str(tmp_path / "lake")
    setup_items(pg_db, 600)
    ever = set(range(1, 601))
    blind = _cfg(root, pg_db, "d,t")  # deletes go unseen: silver keeps rows the source lost
    run_capture(blind, until_idle=True)
    with psycopg.connect(pg_db, autocommit=True) as conn:
        conn.execute("DELETE FROM items WHERE id % 7 = 0")
    run_capture(blind, until_idle=True)
    cfg = _cfg(root, pg_db, "none")
    _silver(spark, cfg, root)
    signal(pg_db, "resnap-1", "execute-snapshot", {"data-collections": ["public.items"]})
    writer = _Writer(pg_db, 5)
    writer.start()
    run_capture(cfg, until_idle=True)
    writer.join()
    assert writer.error is None, writer.error
    run_capture(cfg, until_idle=True)
    ever |= writer.new
    snap = incremental_rows(root)
    first, last = snap[0]["seq"], snap[-1]["seq"]
    assert snap and snap[-1]["v"]["source"]["snapshot"] == "incremental"
    during = [r for r in bronze(root) if first < r["seq"] < last and r["op"] in ("c", "u", "d")]
    assert during, "no write landed while the snapshot ran: the test proves nothing"
    _silver(spark, cfg, root)
    check_silver(root, _source(pg_db), ever)


@SAIL_ONLY
def test_a_filtered_incremental_snapshot_removes_no_row_outside_its_filter(pg_db, tmp_path, spark):
    root = str(tmp_path / "lake")
    setup_items(pg_db, 120)
    cfg = _cfg(root, pg_db, "none")
    run_capture(cfg, until_idle=True)
    _silver(spark, cfg, root)
    signal(pg_db, "part-1", "execute-snapshot", {
        "data-collections": ["public.items"],
        "additional-conditions": [{"data-collection": "public.items", "filter": "id > 100"}]})
    run_capture(cfg, until_idle=True)
    assert sorted(r["v"]["after"]["id"] for r in incremental_rows(root)) == list(range(101, 121))
    _silver(spark, cfg, root)  # the snapshot read part of the table: the other rows stay
    check_silver(root, _source(pg_db), set(range(1, 121)))
