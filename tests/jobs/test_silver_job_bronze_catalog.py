"""The silver job as the serverless Databricks bundle runs it (``--engine connect --once`` on the
Spark Connect session the platform gives it, here the Sail server ``SPARK_REMOTE`` points to)
registers the bronze tables it reads under ``bronze_catalog``; a second process then reads the
name in that session (Sail's default catalog is per session) and finds what delta-rs reads at
the bronze path."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from deltalake import DeltaTable

from bronze.schema import topic_path
from tests.silver.bronze_builder import BronzeBuilder, int32, string
from tests.support.silver_processes import ROOT

PIPELINE = """pipeline: shop
lakehouse: {{root: {root}}}
sources:
  - {{name: shop_pg, connector: postgres, connection: {{host: 127.0.0.1, database: shop}},
     bronze_catalog: main.shop_bronze}}
silver:
  - {{table: customers, source: shop_pg.public.customers}}
"""
READ_BACK = """
import json, sys
from pyspark.sql import SparkSession
spark = SparkSession.builder.remote(sys.argv[1]).getOrCreate()
rows = spark.table("main.shop_bronze.shop_pg_public_customers").select("seq", "key", "value").collect()
print(json.dumps(sorted([r.seq, r.key, r.value] for r in rows)))
"""


@pytest.fixture(scope="module")
def sail_url() -> Iterator[str]:
    from pysail.spark import SparkConnectServer

    server = SparkConnectServer("127.0.0.1", 0)
    server.start(background=True)
    host, port = server.listening_address
    yield f"sc://{host}:{port}"
    server.stop()


def _env(**extra: str) -> dict[str, str]:
    base = {k: v for k, v in os.environ.items() if k not in ("SPARK_REMOTE", "SPARK_CONNECT_MODE_ENABLED")}
    return {**base, "PYTHONPATH": str(ROOT), **extra}


def test_the_serverless_silver_job_registers_bronze_by_name(tmp_path: Path, sail_url: str) -> None:
    root = tmp_path / "lake"
    b = BronzeBuilder(str(root), table="customers", source="shop_pg")
    b.register([int32("id", optional=False), string("v")], ["id"])
    b.insert({"id": 1, "v": "a"}).insert({"id": 2, "v": "b"}).commit()
    b.update({"id": 1, "v": "A"}).commit()
    config = tmp_path / "pipeline.yaml"
    config.write_text(PIPELINE.format(root=root))
    # Sail's default catalog lives in one Spark Connect session: the job and the reader share one
    session = f"{sail_url}/;session_id={uuid.uuid4()}"

    job = subprocess.run([sys.executable, "-m", "jobs.silver_job", "-c", str(config), "--engine", "connect",
                          "--once"], cwd=ROOT, env=_env(SPARK_REMOTE=session), capture_output=True, text=True,
                         timeout=300)
    assert job.returncode == 0, job.stdout + job.stderr
    read = subprocess.run([sys.executable, "-c", READ_BACK, session], cwd=ROOT, env=_env(), capture_output=True,
                          text=True, timeout=300)
    assert read.returncode == 0, read.stderr
    by_path = DeltaTable(topic_path(str(root), "shop_pg.public.customers")).to_pyarrow_table(
        columns=["seq", "key", "value"]).to_pylist()
    assert len(by_path) == 3
    assert json.loads(read.stdout) == sorted([r["seq"], r["key"], r["value"]] for r in by_path)
