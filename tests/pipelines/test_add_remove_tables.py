"""Adding a table to the filters of a running pipeline, then removing one (PostgreSQL and MariaDB, Sail).

A pipeline captures ``items`` (snapshotted, then streamed); ``orders`` is added to
``table.include.list`` and capture restarted while a writer changes both tables: only ``orders``
is snapshotted (incrementally: ``items`` gets no new ``r`` event) and silver equals the source
for both. Then ``orders`` is removed: its bronze and silver tables stay as they were, ``items``
keeps going, and ``status`` shows ``orders`` as no longer captured. The oracle reads the source
with the drivers and the tables with delta-rs.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import orjson
import psycopg
import pymysql
import pytest
from deltalake import DeltaTable

from bronze.schema import topic_path
from pipelines.capture import run_capture
from pipelines.config import PipelineConfig
from pipelines.engine import EngineSpec
from pipelines.silver_runner import run_silver
from pipelines.status import pipeline_status, render
from tests.support import incremental_mysql as my
from tests.support import incremental_pg as pg
from tests.support.engines import SAIL_ONLY

pytestmark = [pytest.mark.integration, pytest.mark.spark]

Rows = dict[int, tuple[str, int | None]]


@dataclass
class Side:
    """One connector's view of the test: how to write, read the source and build the pipeline."""

    source: str  # the pipeline's source name
    execute: Callable[[str, tuple[Any, ...] | None], None]
    connect: Callable[[], Any]  # a DB-API connection in autocommit mode (for the writer)
    rows: Callable[[str], Rows]
    config: Callable[[str, tuple[str, ...]], PipelineConfig]  # root, captured tables -> pipeline
    topic: Callable[[str], str]


def _pg_side(dsn: str) -> Side:
    def execute(sql: str, args: tuple[Any, ...] | None) -> None:
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute(sql, args)

    def rows(table: str) -> Rows:
        with psycopg.connect(dsn) as conn:
            return {r[0]: (r[1], r[2]) for r in conn.execute(f"SELECT id, name, qty FROM {table}").fetchall()}

    def config(root: str, tables: tuple[str, ...]) -> PipelineConfig:
        include = ",".join(f"public.{t}" for t in ("dbz_signal", *tables))
        return pg.pipeline(root, dsn, silver=_silver_yaml("pg.public"), **{
            "table.include.list": include, "publication.autocreate.mode": "filtered",
            "incremental.snapshot.chunk.size": "40"})

    return Side("pg", execute, lambda: psycopg.connect(dsn, autocommit=True), rows, config,
                lambda t: f"pg.public.{t}")


def _my_side(db: dict[str, Any]) -> Side:
    name = db["database"]

    def execute(sql: str, args: tuple[Any, ...] | None) -> None:
        my.execute(db, sql, args=args)

    def rows(table: str) -> Rows:
        conn = pymysql.connect(**db)
        try:
            with conn.cursor() as cur:
                cur.execute(f"SELECT id, name, qty FROM {table}")
                return {r[0]: (r[1], r[2]) for r in cur.fetchall()}
        finally:
            conn.close()

    def config(root: str, tables: tuple[str, ...]) -> PipelineConfig:
        include = ",".join(f"{name}.{t}" for t in ("dbz_signal", *tables))
        return my.pipeline(root, db, silver=_silver_yaml(f"my.{name}"), **{
            "table.include.list": include, "incremental.snapshot.chunk.size": "40"})

    return Side("my", execute, lambda: pymysql.connect(**db, autocommit=True), rows, config,
                lambda t: f"my.{name}.{t}")


def _silver_yaml(prefix: str) -> str:
    return (f"silver:\n  - {{table: items, source: {prefix}.items}}\n  - {{table: orders, source: {prefix}.orders}}\n"
            "silver_options: {interval_seconds: 1}\n")


class _Writer(threading.Thread):
    """Inserts, updates and deletes rows of both tables until stopped; at least ``ops`` writes."""

    def __init__(self, side: Side, seed: int, *, ops: int) -> None:
        super().__init__(daemon=True)
        self.side, self.rng, self.ops = side, random.Random(seed), ops
        self.first_id = 1000 * (seed + 1)  # inserted ids: one range per writer
        self.stop = threading.Event()
        self.done = 0
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            conn = self.side.connect()
            try:
                cur = conn.cursor()
                while self.done < self.ops or not self.stop.is_set():
                    table = ("items", "orders")[self.done % 2]
                    k = self.rng.randint(1, 300)
                    match self.done % 3:
                        case 0:
                            cur.execute(f"UPDATE {table} SET qty = qty + 1, name = CONCAT(name, '+') WHERE id = %s",
                                        (k,))
                        case 1:
                            cur.execute(f"DELETE FROM {table} WHERE id = %s", (k,))
                        case _:
                            cur.execute(f"INSERT INTO {table} VALUES (%s, 'new', 3)", (self.first_id + self.done,))
                    self.done += 1
                    time.sleep(0.005)
            finally:
                conn.close()
        except BaseException as exc:  # reported by the test
            self.error = exc


def _bronze(root: str, topic: str) -> list[dict[str, Any]]:
    rows = DeltaTable(topic_path(root, topic)).to_pyarrow_table().to_pylist()
    return [{**r, "v": orjson.loads(r["value"]) if r["value"] else None} for r in sorted(rows, key=lambda r: r["seq"])]


def _snapshot_reads(root: str, topic: str) -> list[dict[str, Any]]:
    return [r for r in _bronze(root, topic) if r["v"] and r["v"]["op"] == "r"]


def _silver_rows(root: str, table: str) -> Rows:
    return {r["id"]: (r["name"], r["qty"]) for r in DeltaTable(f"{root}/silver/{table}").to_pyarrow_table().to_pylist()}


def _silver(spark: Any, cfg: PipelineConfig, root: str, source: str) -> None:
    for _ in range(20):
        result = run_silver(root=root, engine=EngineSpec(), tables=cfg.silver, options=cfg.silver_options,
                            sources={source: source}, once=True, spark=spark)
        assert result.ok, [t.error for t in result.errors]
        if all(t.status == "up_to_date" for t in result.tables):
            return
    raise AssertionError("silver did not catch up in 20 passes")


def _add_then_remove(side: Side, root: str, spark: Any) -> None:
    for table in ("items", "orders"):
        side.execute(f"CREATE TABLE {table} (id INT PRIMARY KEY, name VARCHAR(100) NOT NULL, qty INT)", None)
        side.execute(f"INSERT INTO {table} VALUES " + ", ".join(f"({i}, '{table} {i}', {i % 7})"
                                                              for i in range(1, 301)), None)
    items_topic, orders_topic = side.topic("items"), side.topic("orders")
    first = side.config(root, ("items",))
    run_capture(first, until_idle=True)  # initial snapshot of items, then streaming
    side.execute("UPDATE items SET qty = 100 WHERE id = 1", None)
    run_capture(first, until_idle=True)
    items_reads = len(_snapshot_reads(root, items_topic))
    assert items_reads == 300

    added = side.config(root, ("items", "orders"))
    writer = _Writer(side, 7, ops=150)
    writer.start()
    try:
        run_capture(added, until_idle=True)  # orders added: its incremental snapshot runs under the writes
    finally:
        writer.stop.set()
        writer.join()
    assert writer.error is None, writer.error
    run_capture(added, until_idle=True)
    assert len(_snapshot_reads(root, items_topic)) == items_reads, "items was snapshotted again"
    orders_reads = _snapshot_reads(root, orders_topic)
    assert orders_reads and all(r["v"]["source"]["snapshot"] == "incremental" for r in orders_reads)
    first_read, last_read = orders_reads[0]["seq"], orders_reads[-1]["seq"]
    assert any(first_read < r["seq"] < last_read and r["v"] and r["v"]["op"] in "cud"
               for r in _bronze(root, orders_topic)), "no write landed during the snapshot: the test proves nothing"
    _silver(spark, added, root, side.source)
    assert _silver_rows(root, "items") == side.rows("items")
    assert _silver_rows(root, "orders") == side.rows("orders")

    orders_bronze = _bronze(root, orders_topic)
    orders_silver = _silver_rows(root, "orders")
    removed = side.config(root, ("items",))
    writer = _Writer(side, 8, ops=60)
    writer.start()
    try:
        run_capture(removed, until_idle=True)
    finally:
        writer.stop.set()
        writer.join()
    assert writer.error is None, writer.error
    run_capture(removed, until_idle=True)
    assert _bronze(root, orders_topic) == orders_bronze, "a removed table's bronze table changed"
    assert side.rows("orders") != orders_silver, "the writer did not touch orders: the test proves nothing"
    _silver(spark, removed, root, side.source)
    assert _silver_rows(root, "items") == side.rows("items")
    assert _silver_rows(root, "orders") == orders_silver
    status = pipeline_status(removed)
    captured = {t.topic: t.captured for t in status.sources[0].tables}
    assert captured[orders_topic] is False and captured[items_topic] is True
    assert f"{orders_topic} (no longer captured)" in "\n".join(render(status))
    assert status.sources[0].state not in ("failed", "waiting")


@pytest.mark.postgres
@SAIL_ONLY
def test_postgres_table_added_then_removed_on_a_running_pipeline(pg_db, tmp_path, spark):
    side = _pg_side(pg_db)
    side.execute(pg.SIGNAL_DDL, None)
    _add_then_remove(side, str(tmp_path / "lake"), spark)


@pytest.mark.mariadb
@SAIL_ONLY
def test_mariadb_table_added_then_removed_on_a_running_pipeline(mariadb_db, tmp_path, spark):
    side = _my_side(mariadb_db)
    side.execute(my.SIGNAL_DDL, None)
    _add_then_remove(side, str(tmp_path / "lake"), spark)
