"""``bundle pipelines --apply feed`` run by open-source Spark's own ``spark-pipelines`` (Spark
4.2 + Delta 4.4, the pinned jars): from bronze written by a real PostgreSQL capture, the
flattening views go into Delta tables; their events are those made on the source (count and
op per key), the latest event per key equals the source row, and the silver runner's table
built from the same bronze (on Sail) holds the same rows, value for value.

The one test of the suite that starts ``spark-pipelines`` (a JVM and a Spark Connect server,
1.5-2 minutes here).
"""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
import sys
from collections import Counter
from decimal import Decimal
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import psycopg
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from deltalake import DeltaTable

from pipelines.capture import run_capture
from pipelines.cli import main
from pipelines.config import parse_pipeline
from pipelines.engine import EngineSpec
from pipelines.silver_runner import run_silver
from pipelines.spark_jars import local_jars
from tests.support.pipeline_yaml import pipeline_text

pytestmark = [pytest.mark.integration, pytest.mark.postgres, pytest.mark.spark, pytest.mark.classic_spark]

COLUMNS = ["id", "name", "amount", "placed", "at", "score", "flag"]
SETUP = """
CREATE TABLE orders (id int PRIMARY KEY, name text, amount numeric(10,2), placed date, at timestamptz,
                     score double precision, flag boolean);
INSERT INTO orders
SELECT i, 'order ' || i || ' é', i * 1.25, DATE '2024-01-01' + i,
       TIMESTAMPTZ '2024-03-01 10:00:00+00' + i * interval '1 minute', i / 3.0, i % 2 = 0
FROM generate_series(1, 40) AS i;
"""
CHANGES = """
INSERT INTO orders VALUES (41, 'late', 9.99, DATE '2025-05-05', now(), 0.1, true),
                          (42, NULL, NULL, NULL, NULL, NULL, NULL);
UPDATE orders SET amount = amount + 1, name = name || ' (changed)' WHERE id IN (2, 4, 6, 41);
UPDATE orders SET flag = NOT flag WHERE id = 2;
DELETE FROM orders WHERE id IN (3, 5, 42);
"""
EXPECTED_OPS = Counter({"r": 40, "c": 2, "u": 5, "d": 3})


def _plain(value: Any) -> Any:
    """A value as both sides compare it: timestamps in UTC without zone, decimals normalized."""
    if hasattr(value, "to_pydatetime"):  # pandas' Timestamp (parquet's nanoseconds)
        value = value.to_pydatetime()
    if isinstance(value, dt.datetime) and value.tzinfo is not None:
        return value.astimezone(dt.UTC).replace(tzinfo=None)
    if isinstance(value, Decimal):
        return value.normalize()
    return value


def _rows(rows: list[dict[str, Any]]) -> dict[int, tuple[Any, ...]]:
    return {r["id"]: tuple(_plain(r[c]) for c in COLUMNS) for r in rows}


def _log(table: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for commit in sorted((table / "_delta_log").glob("*.json"))
            for line in commit.read_text().splitlines()]


def _delta_types(table: Path) -> dict[str, str]:
    """A Delta table's column types, from its log's last schema."""
    schema = json.loads([a["metaData"] for a in _log(table) if "metaData" in a][-1]["schemaString"])
    return {f["name"]: json.dumps(f["type"]) for f in schema["fields"]}


def _delta_rows(table: Path) -> list[dict[str, Any]]:
    """The rows of a Delta table Spark 4.2 wrote (collated strings: delta-rs cannot open it):
    its live files from the log (added, not removed), read as parquet."""
    live: dict[str, bool] = {}
    for action in _log(table):
        for kind in ("add", "remove"):
            if kind in action:
                live[unquote(action[kind]["path"])] = kind == "add"
    files = [str(table / path) for path, alive in live.items() if alive]
    assert files
    return pa.concat_tables([pq.read_table(f) for f in files]).to_pylist()


def _spark_pipelines(project: Path) -> subprocess.CompletedProcess[str]:
    jars = local_jars()
    assert jars, "the Delta jars are missing: run scripts/setup.sh"
    bin_dir = Path(sys.executable).parent
    pyspark_home = Path(__import__("pyspark").__file__).parent
    env = {**os.environ, "SPARK_HOME": str(pyspark_home), "PYSPARK_PYTHON": sys.executable,
           "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}", "DELTA_JARS": ",".join(jars)}
    return subprocess.run([str(project / "spark-pipelines.sh"), "run"],
                          cwd=project, env=env, capture_output=True, text=True, timeout=900)


@pytest.mark.parametrize("engine", ["sail"], indirect=True)
def test_feed_tables_equal_source_and_silver_decode(pg_db: str, tmp_path: Path, spark: Any) -> None:
    root = str(tmp_path / "lake")
    text = pipeline_text(root, pg_db, **{"skipped.operations": "none"}) + (
        "silver:\n  - {table: orders, source: pg.public.orders}\n")
    config_file = tmp_path / "pipeline.yaml"
    config_file.write_text(text)
    cfg = parse_pipeline(text, env={})
    with psycopg.connect(pg_db, autocommit=True) as conn:
        conn.execute(SETUP)
        run_capture(cfg, until_idle=True)
        conn.execute(CHANGES)
        run_capture(cfg, until_idle=True)
        conn.execute("SET TIME ZONE 'UTC'")
        cur = conn.cursor(row_factory=psycopg.rows.dict_row)
        source = _rows(cur.execute(f"SELECT {', '.join(COLUMNS)} FROM orders").fetchall())

    project = tmp_path / "project"
    wheel = tmp_path / "cdc_lakehouse-0.0.0-py3-none-any.whl"  # shipped as is; the venv runs the sources
    wheel.write_bytes(b"")
    assert main(["-q", "bundle", "pipelines", "-c", str(config_file), "-o", str(project), "--apply", "feed",
                 "--wheel", str(wheel)]) == 0
    proc = _spark_pipelines(project)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]

    feed_path = project / "spark-warehouse" / "orders_changes"
    feed = _delta_rows(feed_path)
    assert Counter(r["__cdc_op"] for r in feed) == EXPECTED_OPS
    assert all((r["__cdc_kind"] == "d") == (r["__cdc_op"] == "d") for r in feed)
    assert len({r["__cdc_seq"] for r in feed}) == len(feed)
    latest: dict[int, dict[str, Any]] = {}
    for r in sorted(feed, key=lambda r: r["__cdc_seq"]):
        latest[r["id"]] = r
    applied = _rows([r for r in latest.values() if r["__cdc_kind"] == "u"])
    assert applied == source

    result = run_silver(root=root, engine=EngineSpec(), tables=cfg.silver, options=cfg.silver_options,
                        sources={"pg": "pg"}, once=True, spark=spark)
    assert result.ok, [t.error for t in result.errors]
    assert _rows(DeltaTable(f"{root}/silver/orders").to_pyarrow_table().to_pylist()) == applied
    feed_types, silver_types = _delta_types(feed_path), _delta_types(Path(root) / "silver" / "orders")
    assert {c: feed_types[c] for c in COLUMNS} == {c: silver_types[c] for c in COLUMNS}
