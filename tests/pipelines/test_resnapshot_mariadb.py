"""Re-snapshots are authoritative in silver (MariaDB): rows deleted while capture could not see them
leave silver when the table is snapshotted again (``snapshot.mode: always``; a purged binlog with
``when_needed``). The oracle reads silver with delta-rs and the source with pymysql."""

from __future__ import annotations

import random
import time
from typing import Any

import pymysql
import pytest

from pipelines.capture import run_capture
from pipelines.config import PipelineConfig, parse_pipeline
from pipelines.engine import EngineSpec
from pipelines.silver_runner import run_silver
from tests.support.engines import SAIL_ONLY
from tests.support.mariadb_pipeline import SOURCE, mariadb_pipeline_text
from tests.support.resnapshot_oracle import check_silver, silver_yaml

pytestmark = [pytest.mark.integration, pytest.mark.mariadb, pytest.mark.spark]


def _config(root: str, db: dict[str, Any], server_id: int, **options: str) -> PipelineConfig:
    text = mariadb_pipeline_text(root, db, server_id=server_id, capture={"commit_max_records": 250}, **options)
    text += "silver:\n" + silver_yaml(f"{SOURCE}.{db['database']}.items")
    return parse_pipeline(text, env={})


def _execute(db: dict[str, Any], *statements: str) -> None:
    conn = pymysql.connect(**db, autocommit=True)
    try:
        with conn.cursor() as cur:
            for sql in statements:
                cur.execute(sql)
    finally:
        conn.close()


def _source(db: dict[str, Any]) -> set[tuple[Any, ...]]:
    conn = pymysql.connect(**db)
    try:
        with conn.cursor() as cur:
            cur.execute("SELECT id, name, qty FROM items")
            return {tuple(r) for r in cur.fetchall()}
    finally:
        conn.close()


def _setup(db: dict[str, Any], rows: int = 1000) -> None:
    values = ", ".join(f"({i}, 'item {i}', {i % 17})" for i in range(1, rows + 1))
    _execute(db, "CREATE TABLE items (id INT PRIMARY KEY, name VARCHAR(40) NOT NULL, qty INT)",
             f"INSERT INTO items VALUES {values}")


def _offline_changes(db: dict[str, Any], seed: int) -> set[int]:
    """Delete 200 rows, update 100 others, insert 50; returns the new ids."""
    rng = random.Random(seed)
    ids = sorted(r[0] for r in _source(db))
    gone = rng.sample(ids, 200)
    kept = rng.sample(sorted(set(ids) - set(gone)), 100)
    new = list(range(max(ids) + 1, max(ids) + 51))
    listed = ", ".join(map(str, kept))
    _execute(db, f"DELETE FROM items WHERE id IN ({', '.join(map(str, gone))})",
             f"UPDATE items SET qty = qty + 1000, name = CONCAT(name, ' upd') WHERE id IN ({listed})",
             "INSERT INTO items VALUES " + ", ".join(f"({i}, 'new {i}', 7)" for i in new))
    return set(new)


def _silver(spark: Any, cfg: PipelineConfig, root: str) -> None:
    for _ in range(30):
        result = run_silver(root=root, engine=EngineSpec(), tables=cfg.silver, options=cfg.silver_options,
                            sources={SOURCE: SOURCE}, once=True, spark=spark)
        assert result.ok, [t.error for t in result.errors]
        if all(t.status == "up_to_date" for t in result.tables):
            return
    raise AssertionError("silver did not catch up in 30 passes")


@SAIL_ONLY
def test_snapshot_mode_always_resnapshot_removes_rows_deleted_while_stopped(mariadb_db, tmp_path, spark):
    root = str(tmp_path / "lake")
    _setup(mariadb_db)
    cfg = _config(root, mariadb_db, 5411, **{"snapshot.mode": "always"})
    ever = {r[0] for r in _source(mariadb_db)}
    run_capture(cfg, until_idle=True)
    _silver(spark, cfg, root)
    check_silver(root, _source(mariadb_db), ever)
    ever |= _offline_changes(mariadb_db, 1)
    run_capture(cfg, until_idle=True)  # always: a new snapshot (the deletes are in no binlog event it reads)
    _silver(spark, cfg, root)
    check_silver(root, _source(mariadb_db), ever)


@SAIL_ONLY
def test_purged_binlog_when_needed_resnapshot_removes_rows_deleted_meanwhile(tmp_path, spark):
    from pipelines.local_mariadb import LocalMariaDB

    server = LocalMariaDB(tmp_path / "data").start()
    try:
        _execute(server.connect_args(), "CREATE DATABASE d")
        db = {**server.connect_args(), "database": "d"}
        _setup(db)
        root = str(tmp_path / "lake")
        cfg = _config(root, db, 5412, **{"snapshot.mode": "when_needed"})
        ever = {r[0] for r in _source(db)}
        run_capture(cfg, until_idle=True)
        _execute(db, "DELETE FROM items WHERE id <= 10")  # streamed before the binlog is lost
        run_capture(cfg, until_idle=True)
        _silver(spark, cfg, root)
        ever |= _offline_changes(db, 2)
        _purge_binlogs(server.connect_args())
        run_capture(cfg, until_idle=True)
        _silver(spark, cfg, root)
        check_silver(root, _source(db), ever)
    finally:
        server.stop()


def _purge_binlogs(args: dict[str, Any]) -> None:
    """Rotate the binlog and purge every earlier file: the stored position is gone."""
    conn = pymysql.connect(**args, autocommit=True)
    try:
        with conn.cursor() as cur:
            cur.execute("FLUSH BINARY LOGS")
            cur.execute("SHOW MASTER STATUS")
            current = cur.fetchone()[0]
            for _ in range(100):  # a binlog dump thread that is still ending keeps its file in use
                cur.execute(f"PURGE BINARY LOGS TO '{current}'")
                cur.execute("SHOW BINARY LOGS")
                if [r[0] for r in cur.fetchall()] == [current]:
                    return
                time.sleep(0.1)
        raise AssertionError("the binlog files were not purged")
    finally:
        conn.close()
