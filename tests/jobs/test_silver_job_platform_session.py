"""``silver_job --engine connect`` without ``--url``: the job runs on the Spark Connect session
the platform gives it (as on Databricks serverless compute), here the one ``SPARK_REMOTE``
points to: a Sail Spark Connect server this test starts. The pipeline file's own engine is an
unreachable Connect URL, so a job that ignored the platform's session would fail; the silver
table is read back with delta-rs (independent of the job's Spark)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from deltalake import DeltaTable

from tests.silver.bronze_builder import BronzeBuilder, int32, string
from tests.support.silver_processes import ROOT

PIPELINE = """pipeline: shop
lakehouse: {{root: {root}}}
engine: {{kind: connect, url: "sc://127.0.0.1:9"}}
sources:
  - {{name: shop_pg, connector: postgres, connection: {{host: 127.0.0.1, database: shop}}}}
silver:
  - {{table: customers, source: shop_pg.public.customers}}
"""


@pytest.fixture(scope="module")
def sail_url() -> Iterator[str]:
    from pysail.spark import SparkConnectServer

    server = SparkConnectServer("127.0.0.1", 0)
    server.start(background=True)
    host, port = server.listening_address
    yield f"sc://{host}:{port}"
    server.stop()


def silver_job(config: Path, *args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """The job in a fresh process (no Spark session, no SPARK_REMOTE unless ``env`` sets it)."""
    base = {k: v for k, v in os.environ.items() if k not in ("SPARK_REMOTE", "SPARK_CONNECT_MODE_ENABLED")}
    return subprocess.run([sys.executable, "-m", "jobs.silver_job", "-c", str(config), *args], cwd=ROOT,
                          env={**base, "PYTHONPATH": str(ROOT), **env}, capture_output=True, text=True, timeout=300)


def test_runs_on_the_platforms_spark_connect_session(tmp_path, sail_url):
    root = tmp_path / "lake"
    b = BronzeBuilder(str(root), table="customers", source="shop_pg")
    b.register([int32("id", optional=False), string("v")], ["id"])
    b.insert({"id": 1, "v": "a"}).insert({"id": 2, "v": "b"}).commit()
    b.update({"id": 1, "v": "A"}).delete({"id": 2}).commit()
    config = tmp_path / "pipeline.yaml"
    config.write_text(PIPELINE.format(root=root))

    proc = silver_job(config, "--engine", "connect", "--once", env={"SPARK_REMOTE": sail_url})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    rows = DeltaTable(str(root / "silver" / "customers")).to_pyarrow_table(columns=["id", "v"]).to_pylist()
    assert rows == [{"id": 1, "v": "A"}]


def test_without_a_platform_session_it_exits_2(tmp_path):
    config = tmp_path / "pipeline.yaml"
    config.write_text(PIPELINE.format(root=tmp_path / "lake"))
    proc = silver_job(config, "--engine", "connect", "--once", env={})
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "there is none; pass --url sc://host:port" in proc.stderr and "Traceback" not in proc.stderr
