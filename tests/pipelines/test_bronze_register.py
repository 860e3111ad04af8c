"""The silver job registers the bronze tables it reads under their catalog names: a real PostgreSQL
source, captured into bronze, then a silver pass (Sail) or an available-now stream (classic Spark
with Delta's catalog, as the Databricks bundle's job-cluster silver job runs); the registered name
reads what the bronze path holds, also after more changes are captured."""

from __future__ import annotations

import logging

import psycopg
import pyarrow as pa
import pytest
from deltalake import write_deltalake
from pyspark.sql import SparkSession

from bronze.schema import topic_path
from pipelines.bronze_names import bronze_table_names
from pipelines.capture import run_capture
from pipelines.config import PipelineConfig, parse_pipeline
from pipelines.engine import EngineSpec
from pipelines.silver_runner import run_silver
from pipelines.silver_stream import run_streams
from tests.support.engines import SAIL_ONLY

pytestmark = [pytest.mark.integration, pytest.mark.postgres, pytest.mark.spark]
TOPIC = "pg.public.items"


def _pipeline(root: str, dsn: str, bronze_catalog: str) -> PipelineConfig:
    parts = dict(p.split("=", 1) for p in dsn.split())
    text = (f"pipeline: reg\nlakehouse: {{root: \"{root}\"}}\nsources:\n  - name: pg\n    connector: postgres\n"
            f"    connection: {{host: 127.0.0.1, port: {parts['port']}, database: {parts['dbname']}, user: postgres}}\n"
            f"    options: {{slot.name: reg_{parts['dbname'][-20:]}}}\n"
            f"    bronze_catalog: {bronze_catalog}\n"
            f"silver:\n  - {{table: items, source: {TOPIC}}}\n")
    return parse_pipeline(text, env={})


def _rows(df: object) -> list[tuple[object, ...]]:
    return sorted((tuple(r) for r in df.collect()), key=repr)  # type: ignore[attr-defined]


def _capture_some(dsn: str, first: int, count: int, cfg: PipelineConfig) -> None:
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("CREATE TABLE IF NOT EXISTS items (id int PRIMARY KEY, name text)")
        conn.execute("INSERT INTO items SELECT g, 'item ' || g FROM generate_series(%s::int, %s::int) g",
                     (first, first + count - 1))
    run_capture(cfg, until_idle=True)


def _same_as_bronze(spark: SparkSession, root: str, name: str, expected_rows: int) -> None:
    by_path = _rows(spark.read.format("delta").load(topic_path(root, TOPIC)))
    assert len(by_path) == expected_rows
    assert _rows(spark.table(name)) == by_path


@SAIL_ONLY
def test_a_silver_pass_registers_the_bronze_tables_it_reads(pg_db, tmp_path, spark):
    root = str(tmp_path / "lake")
    schema = f"bronze_{pg_db.split('dbname=')[1].split()[0]}"[:60]
    cfg = _pipeline(root, pg_db, schema)
    name = f"{schema}.pg_public_items"

    def silver_pass() -> None:
        result = run_silver(root=root, engine=EngineSpec(kind="sail"), tables=cfg.silver, options=cfg.silver_options,
                            sources=cfg.topic_prefixes(), once=True, spark=spark,
                            bronze_names=bronze_table_names(cfg))
        assert result.ok, [t.error for t in result.errors]

    _capture_some(pg_db, 1, 30, cfg)
    assert not spark.catalog.tableExists(name)
    silver_pass()
    _same_as_bronze(spark, root, name, 30)  # 30 snapshot reads
    _capture_some(pg_db, 31, 5, cfg)
    silver_pass()
    _same_as_bronze(spark, root, name, 35)  # and 5 inserts: the name reads the table as it is now


@SAIL_ONLY
def test_a_name_taken_by_another_table_is_left_alone_with_a_warning(pg_db, tmp_path, spark, caplog):
    root = str(tmp_path / "lake")
    schema = f"bronze_{pg_db.split('dbname=')[1].split()[0]}"[:60]
    cfg = _pipeline(root, pg_db, f"main.{schema}")  # Sail: main.<schema> is one nested schema of its catalog
    name = f"main.{schema}.pg_public_items"
    other = str(tmp_path / "other")
    write_deltalake(other, pa.table({"x": [7]}))
    spark.sql(f"CREATE SCHEMA IF NOT EXISTS main.{schema}")
    spark.sql(f"CREATE TABLE {name} USING DELTA LOCATION '{other}'")
    _capture_some(pg_db, 1, 3, cfg)
    with caplog.at_level(logging.WARNING, logger="pipelines.bronze_register"):
        result = run_silver(root=root, engine=EngineSpec(kind="sail"), tables=cfg.silver, options=cfg.silver_options,
                            sources=cfg.topic_prefixes(), once=True, spark=spark,
                            bronze_names=bronze_table_names(cfg))
    assert result.ok, [t.error for t in result.errors]
    assert [tuple(r) for r in spark.table(name).collect()] == [(7,)]
    (warning,) = [r.getMessage() for r in caplog.records if r.name == "pipelines.bronze_register"]
    assert f"{name} exists already and points at {other}, not at bronze topic pg.public.items's table " \
           f"{topic_path(root, TOPIC)}" in warning


@pytest.mark.parametrize("engine", ["spark"], indirect=True)
def test_the_streaming_silver_job_registers_bronze_in_deltas_catalog(pg_db, tmp_path, spark):
    root = str(tmp_path / "lake")
    schema = f"bronze_{pg_db.split('dbname=')[1].split()[0]}"[:60]
    cfg = _pipeline(root, pg_db, f"spark_catalog.{schema}")
    name = f"spark_catalog.{schema}.pg_public_items"
    # the schema exists (as on Unity Catalog), here with a location out of the working directory
    spark.sql(f"CREATE SCHEMA spark_catalog.{schema} LOCATION '{tmp_path / 'warehouse'}'")
    _capture_some(pg_db, 1, 20, cfg)
    result = run_streams(root=root, engine=EngineSpec(kind="spark"), tables=cfg.silver, options=cfg.silver_options,
                         sources=cfg.topic_prefixes(), trigger="available_now",
                         checkpoint_root=str(tmp_path / "checkpoints"), spark=spark,
                         bronze_names=bronze_table_names(cfg))
    assert result.ok and result.started == ["items"], result.errors
    _same_as_bronze(spark, root, name, 20)
    detail = spark.sql(f"DESCRIBE TABLE EXTENDED {name}").collect()
    info = {r[0]: r[1] for r in detail}
    assert info["Type"] == "EXTERNAL" and info["Provider"].lower() == "delta"
    assert info["Location"].removeprefix("file:") == topic_path(root, TOPIC)
