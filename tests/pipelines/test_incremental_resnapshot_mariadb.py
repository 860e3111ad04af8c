"""An incremental snapshot of a MariaDB table is a re-snapshot: after it, silver equals the source,
with a writer updating, deleting and inserting the very rows being snapshotted (Sail)."""

from __future__ import annotations

from typing import Any

import pymysql
import pytest

from pipelines.capture import run_capture
from pipelines.config import PipelineConfig
from pipelines.engine import EngineSpec
from pipelines.silver_runner import run_silver
from tests.support.engines import SAIL_ONLY
from tests.support.incremental_mysql import Writer, bronze, execute, incremental_rows, pipeline, setup_items, signal
from tests.support.incremental_mysql import topic as topic_of
from tests.support.resnapshot_oracle import check_silver, silver_yaml

pytestmark = [pytest.mark.integration, pytest.mark.mariadb, pytest.mark.spark]


def _cfg(root: str, db: dict[str, Any], skipped: str) -> PipelineConfig:
    silver = "silver:\n" + silver_yaml(topic_of(db)) + "silver_options: {interval_seconds: 1}\n"
    return pipeline(root, db, silver=silver, **{"skipped.operations": skipped, "incremental.snapshot.chunk.size": "20"})


def _silver(spark: Any, cfg: PipelineConfig, root: str) -> None:
    for _ in range(30):
        result = run_silver(root=root, engine=EngineSpec(), tables=cfg.silver, options=cfg.silver_options,
                            sources={"my": "my"}, once=True, spark=spark)
        assert result.ok, [t.error for t in result.errors]
        if all(t.status == "up_to_date" for t in result.tables):
            return
    raise AssertionError("silver did not catch up in 30 passes")


def _source(db: dict[str, Any]) -> set[tuple[Any, ...]]:
    conn = pymysql.connect(**db)
    try:
        with conn.cursor() as cur:
            cur.execute("SELECT id, name, qty FROM items")
            return {tuple(r) for r in cur.fetchall()}
    finally:
        conn.close()


@SAIL_ONLY
def test_incremental_snapshot_under_concurrent_writes_leaves_silver_equal_to_source(mariadb_db, tmp_path, spark):
    root = str(tmp_path / "lake")
    setup_items(mariadb_db, 600)
    ever = set(range(1, 601))
    blind = _cfg(root, mariadb_db, "d,t")  # deletes go unseen: silver keeps rows the source lost
    run_capture(blind, until_idle=True)
    execute(mariadb_db, "DELETE FROM items WHERE id % 7 = 0")
    run_capture(blind, until_idle=True)
    cfg = _cfg(root, mariadb_db, "none")
    _silver(spark, cfg, root)
    # a row inserted inside the first chunk's window, above the table's largest key (the writer's keys
    # stay below it): no chunk reads it, so only the snapshot's start (the binlog position after the
    # first open watermark) keeps it in silver
    execute(mariadb_db, "CREATE TRIGGER in_window BEFORE INSERT ON dbz_signal FOR EACH ROW "
                        "IF NEW.type = 'snapshot-window-close' AND NOT EXISTS (SELECT 1 FROM items WHERE id = 900000) "
                        "THEN INSERT INTO items VALUES (900000, 'in window', 3); END IF")
    ever.add(900000)
    signal(mariadb_db, "resnap-1", "execute-snapshot", {"data-collections": [f"{mariadb_db['database']}.items"]})
    writer = Writer(mariadb_db, 5, top=600, ops=400)
    writer.start()
    run_capture(cfg, until_idle=True)
    writer.join()
    assert writer.error is None, writer.error
    run_capture(cfg, until_idle=True)
    ever |= writer.new
    snap = incremental_rows(root, topic_of(mariadb_db))
    assert snap and snap[-1]["v"]["source"]["snapshot"] == "incremental"
    first, last = snap[0]["seq"], snap[-1]["seq"]
    during = [r for r in bronze(root, topic_of(mariadb_db)) if first < r["seq"] < last and r["op"] in ("c", "u", "d")]
    assert during, "no write landed while the snapshot ran: the test proves nothing"
    _silver(spark, cfg, root)
    check_silver(root, _source(mariadb_db), ever)
