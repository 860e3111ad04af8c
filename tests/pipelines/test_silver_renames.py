"""A column the source renames keeps its values in silver, from real capture on both connectors:
MariaDB (``RENAME COLUMN``, ``CHANGE old new``: the DDL in the binlog) and PostgreSQL (``RENAME
COLUMN``: the catalog's column numbers), with changes streaming and capture and silver run
between the steps. The oracle is the source table read with pymysql/psycopg, compared with the
silver table's rows and columns."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import psycopg
import pymysql
import pytest

from pipelines.capture import run_capture
from pipelines.config import parse_pipeline
from pipelines.engine import EngineSpec
from pipelines.silver_runner import run_silver
from tests.support.mariadb_pipeline import SOURCE, mariadb_pipeline_text

pytestmark = [pytest.mark.integration, pytest.mark.spark]

BOOKKEEPING = ("_cdc_seq", "_cdc_op", "_cdc_ts")


def _silver(spark: Any, root: str, table: str) -> tuple[list[str], set[tuple[Any, ...]]]:
    df = spark.read.format("delta").load(f"{root}/silver/{table}")
    cols = [c for c in df.columns if c not in BOOKKEEPING]
    return cols, {tuple(r) for r in df.select(*cols).collect()}


def _run_silver(spark: Any, cfg: Any, root: str, source: str) -> list[str]:
    result = run_silver(root=root, engine=EngineSpec(), tables=cfg.silver, options=cfg.silver_options,
                        sources={source: source}, once=True, spark=spark)
    assert result.ok, [t.error for t in result.errors]
    assert all(t.quarantined == 0 for t in result.tables), result.tables
    return [c for t in result.tables for c in t.schema_changes]


def _mariadb_source(db: dict[str, Any]) -> tuple[list[str], set[tuple[Any, ...]]]:
    conn = pymysql.connect(**db)
    try:
        with conn.cursor() as cur:
            cur.execute("SELECT * FROM p")
            return [d[0] for d in cur.description], {tuple(r) for r in cur.fetchall()}
    finally:
        conn.close()


def _mariadb(db: dict[str, Any], *statements: str) -> None:
    conn = pymysql.connect(**db, autocommit=True)
    try:
        with conn.cursor() as cur:
            for sql in statements:
                cur.execute(sql)
    finally:
        conn.close()


@pytest.mark.mariadb
@pytest.mark.parametrize("engine", ["sail"], indirect=True)
def test_mariadb_renamed_columns_keep_their_values_in_silver(mariadb_db, tmp_path, spark):
    root = str(tmp_path / "lake")
    _mariadb(mariadb_db, "CREATE TABLE p (id INT PRIMARY KEY, price DECIMAL(10,2), name VARCHAR(20))",
             "INSERT INTO p VALUES " + ", ".join(f"({i}, {i}.25, 'n{i}')" for i in range(1, 41)))
    text = mariadb_pipeline_text(root, mariadb_db, server_id=5471,
                                 silver=[{"table": "p", "source": f"{SOURCE}.{mariadb_db['database']}.p"}])
    cfg = parse_pipeline(text, env={})
    run_capture(cfg, until_idle=True)
    _run_silver(spark, cfg, root, SOURCE)
    # one increment holding rows from before and after the rename
    _mariadb(mariadb_db, "UPDATE p SET price = 99.5 WHERE id = 1",
             "ALTER TABLE p RENAME COLUMN price TO unit_price",
             "UPDATE p SET name = 'changed' WHERE id = 2", "INSERT INTO p VALUES (41, 41.5, 'new')")
    run_capture(cfg, until_idle=True)
    changes = _run_silver(spark, cfg, root, SOURCE)
    assert "renamed column price to unit_price" in changes
    assert _silver(spark, root, "p") == _mariadb_source(mariadb_db)
    # CHANGE renames too (here with a wider type), streamed alone
    _mariadb(mariadb_db, "ALTER TABLE p CHANGE unit_price cost DECIMAL(12,2)", "UPDATE p SET cost = 7 WHERE id = 3")
    run_capture(cfg, until_idle=True)
    _run_silver(spark, cfg, root, SOURCE)
    cols, rows = _silver(spark, root, "p")
    assert (cols, rows) == _mariadb_source(mariadb_db)
    assert cols == ["id", "cost", "name"]
    assert (40, Decimal("40.25"), "n40") in rows  # never updated since the renames


def _pg_source(dsn: str) -> tuple[list[str], set[tuple[Any, ...]]]:
    with psycopg.connect(dsn) as conn:
        cur = conn.execute("SELECT * FROM p")
        return [d.name for d in cur.description or ()], {tuple(r) for r in cur.fetchall()}


@pytest.mark.postgres
@pytest.mark.parametrize("engine", ["sail"], indirect=True)
def test_postgres_renamed_columns_keep_their_values_in_silver(pg_db, tmp_path, spark):
    root = str(tmp_path / "lake")
    with psycopg.connect(pg_db, autocommit=True) as conn:
        conn.execute("CREATE TABLE p (id int PRIMARY KEY, price numeric(10,2), name text)")
        conn.execute("INSERT INTO p SELECT g, g + 0.25, 'n' || g FROM generate_series(1, 40) g")
    parts = dict(x.split("=", 1) for x in pg_db.split())
    cfg = parse_pipeline(
        f"pipeline: t\nlakehouse: {{root: \"{root}\"}}\nsources:\n  - name: pg\n    connector: postgres\n"
        f"    connection: {{host: 127.0.0.1, port: {parts['port']}, database: {parts['dbname']}, user: postgres}}\n"
        f"    options: {{slot.name: s_{tmp_path.name[-20:]}}}\n"
        "silver:\n  - {table: p, source: pg.public.p}\n", env={})
    run_capture(cfg, until_idle=True)
    _run_silver(spark, cfg, root, "pg")
    with psycopg.connect(pg_db, autocommit=True) as conn:  # one increment from before and after the rename
        conn.execute("UPDATE p SET price = 99.5 WHERE id = 1")
        conn.execute("ALTER TABLE p RENAME COLUMN price TO unit_price")
        conn.execute("UPDATE p SET name = 'changed' WHERE id = 2")
        conn.execute("INSERT INTO p VALUES (41, 41.5, 'new')")
    run_capture(cfg, until_idle=True)
    assert "renamed column price to unit_price" in _run_silver(spark, cfg, root, "pg")
    assert _silver(spark, root, "p") == _pg_source(pg_db)
    with psycopg.connect(pg_db, autocommit=True) as conn:
        conn.execute("ALTER TABLE p RENAME COLUMN unit_price TO cost")
        conn.execute("UPDATE p SET cost = 7 WHERE id = 3")
    run_capture(cfg, until_idle=True)
    _run_silver(spark, cfg, root, "pg")
    cols, rows = _silver(spark, root, "p")
    assert (cols, rows) == _pg_source(pg_db)
    assert cols == ["id", "cost", "name"]
    assert (40, Decimal("40.25"), "n40") in rows  # never updated since the renames
