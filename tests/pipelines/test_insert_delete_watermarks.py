"""Incremental snapshots with ``incremental.snapshot.watermarking.strategy: insert_delete`` on real
PostgreSQL and MariaDB servers (Sail): each chunk's window opens with an inserted row and closes with
that row's delete. A writer changes the very rows being read; every row the writer leaves alone is
read exactly once, silver ends equal to the source, and the signal table holds no watermark row at
the end. The oracle reads the source (psycopg, pymysql), bronze and silver (delta-rs)."""

from __future__ import annotations

from collections import Counter
from typing import Any

import orjson
import psycopg
import pymysql
import pytest

from pipelines.capture import run_capture
from pipelines.config import PipelineConfig
from pipelines.engine import EngineSpec
from pipelines.silver_runner import run_silver
from tests.support import incremental_mysql as my
from tests.support import incremental_pg as pg
from tests.support.engines import SAIL_ONLY
from tests.support.resnapshot_oracle import check_silver, silver_yaml

pytestmark = [pytest.mark.integration, pytest.mark.spark]

ROWS = 600
OPTIONS = {"incremental.snapshot.watermarking.strategy": "insert_delete", "incremental.snapshot.chunk.size": "20"}


def _silver(spark: Any, cfg: PipelineConfig, root: str, source: str) -> None:
    for _ in range(30):
        result = run_silver(root=root, engine=EngineSpec(), tables=cfg.silver, options=cfg.silver_options,
                            sources={source: source}, once=True, spark=spark)
        assert result.ok, [t.error for t in result.errors]
        if all(t.status == "up_to_date" for t in result.tables):
            return
    raise AssertionError("silver did not catch up in 30 passes")


def _events(rows: list[dict[str, Any]]) -> list[tuple[str, str, str | None]]:
    """The signal table's bronze events: ``(op, id, type)`` (a delete's from its before image)."""
    out = []
    for r in rows:
        v = orjson.loads(r["value"]) if r["value"] else None
        if v is None or v["op"] not in ("c", "d"):
            continue
        image = v["after"] if v["op"] == "c" else v["before"]
        out.append((v["op"], image["id"], image.get("type")))
    return out


def _check_snapshot(snap: list[dict[str, Any]], touched: set[int], signal_events: list[tuple[str, str, str | None]],
                    left: list[tuple[Any, ...]], signal_id: str) -> None:
    reads = Counter(r["v"]["after"]["id"] for r in snap)
    untouched = set(range(1, ROWS + 1)) - touched
    assert len(untouched) > 300
    assert {k: reads[k] for k in untouched if reads[k] != 1} == {}, "untouched rows not read exactly once"
    assert {k: n for k, n in reads.items() if n > 1} == {}, "a row read twice"
    opened = [i for op, i, t in signal_events if op == "c" and t == "snapshot-window-open"]
    deleted = [i for op, i, _ in signal_events if op == "d"]
    assert len(opened) >= 20 and sorted(deleted) == sorted(opened), "each open row deleted once"
    assert not [e for e in signal_events if e[2] == "snapshot-window-close"], "insert_delete inserts no close row"
    # the oracle: the signal table itself, read directly
    assert left == [(signal_id, "execute-snapshot")], left


@SAIL_ONLY
@pytest.mark.postgres
def test_postgres_insert_delete_under_a_writer(pg_db: str, tmp_path: Any, spark: Any) -> None:
    root = str(tmp_path / "lake")
    pg.setup_items(pg_db, ROWS)
    silver = "silver:\n" + silver_yaml(pg.TOPIC) + "silver_options: {interval_seconds: 1}\n"
    cfg = pg.pipeline(root, pg_db, silver=silver, **OPTIONS)
    run_capture(cfg, until_idle=True)
    pg.signal(pg_db, "idel-1", "execute-snapshot", {"data-collections": ["public.items"]})
    writer = pg.Writer(pg_db, 11, top=ROWS, ops=400)
    writer.start()
    run_capture(cfg, until_idle=True)
    writer.join()
    assert writer.error is None, writer.error
    run_capture(cfg, until_idle=True)

    snap = pg.incremental_rows(root)
    first, last = snap[0]["seq"], snap[-1]["seq"]
    during = [r for r in pg.bronze(root) if first < r["seq"] < last and r["op"] in ("c", "u", "d")]
    assert during, "no write landed while the snapshot ran: the test proves nothing"
    with psycopg.connect(pg_db) as conn:
        left = [tuple(r) for r in conn.execute("SELECT id, type FROM dbz_signal")]
        want = {tuple(r) for r in conn.execute("SELECT id, name, qty FROM items")}
    _check_snapshot(snap, writer.touched, _events(pg.bronze(root, "pg.public.dbz_signal")), left, "idel-1")
    assert "incremental_snapshot_collections" not in pg.last_offset(root)
    _silver(spark, cfg, root, "pg")
    check_silver(root, want, set(range(1, ROWS + 1)) | writer.touched)


@SAIL_ONLY
@pytest.mark.mariadb
def test_mariadb_insert_delete_under_a_writer(mariadb_db: dict[str, Any], tmp_path: Any, spark: Any) -> None:
    root = str(tmp_path / "lake")
    my.setup_items(mariadb_db, ROWS)
    topic = my.topic(mariadb_db)
    silver = "silver:\n" + silver_yaml(topic) + "silver_options: {interval_seconds: 1}\n"
    cfg = my.pipeline(root, mariadb_db, silver=silver, **OPTIONS)
    run_capture(cfg, until_idle=True)
    my.signal(mariadb_db, "idel-1", "execute-snapshot", {"data-collections": [f"{mariadb_db['database']}.items"]})
    writer = my.Writer(mariadb_db, 11, top=ROWS, ops=400)
    writer.start()
    run_capture(cfg, until_idle=True)
    writer.join()
    assert writer.error is None, writer.error
    run_capture(cfg, until_idle=True)

    snap = my.incremental_rows(root, topic)
    first, last = snap[0]["seq"], snap[-1]["seq"]
    during = [r for r in my.bronze(root, topic) if first < r["seq"] < last and r["op"] in ("c", "u", "d")]
    assert during, "no write landed while the snapshot ran: the test proves nothing"
    conn = pymysql.connect(**mariadb_db)
    try:
        with conn.cursor() as cur:
            cur.execute("SELECT id, type FROM dbz_signal")
            left = [tuple(r) for r in cur.fetchall()]
            cur.execute("SELECT id, name, qty FROM items")
            want = {tuple(r) for r in cur.fetchall()}
    finally:
        conn.close()
    _check_snapshot(snap, writer.touched, _events(my.bronze(root, my.topic(mariadb_db, "dbz_signal"))), left,
                    "idel-1")
    _silver(spark, cfg, root, "my")
    check_silver(root, want, set(range(1, ROWS + 1)) | writer.touched)
