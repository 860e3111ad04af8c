"""spark-submit, really: the real ``spark-submit`` of the pyspark package runs jobs/silver_job.py
(``--engine spark``) with ``--master local[2]``, the Delta jars (``--jars``) and the project
wheel (``--py-files``; a wheel is a zip of pure-Python packages), over a lakehouse filled by
``cdc-lakehouse capture --until-idle`` from PostgreSQL: the incremental runner (``--once``),
then, after more changes, the streaming driver (``--stream --trigger available-now``) taking
over from the runner's progress. Each time silver equals the source table (psycopg).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest

from pipelines.spark_jars import local_jars
from tests.pipelines.exactly_once_support import Workload, create_schema
from tests.support.capture_process import CaptureProcess
from tests.support.silver_processes import ROOT, SPARK_CONF, SilverProcess, pipeline_with_silver, silver_problems
from tests.support.spark_submit import SPARK_SUBMIT, project_wheel, submit_env

pytestmark = [pytest.mark.integration, pytest.mark.postgres, pytest.mark.classic_spark,
              pytest.mark.classic_subprocess]  # Spark only in child processes (scripts/test.sh: see classic_subprocess)

SIZES = {"accounts": 150, "big": 50, "orders": 150}


def _submit(silver: SilverProcess, wheel: Path, config: Path, *args: str) -> str:
    jars = local_jars()
    assert jars, "no Delta jars: run scripts/setup.sh"
    conf = [a for k, v in SPARK_CONF.items() if k != "spark.master" for a in ("--conf", f"{k}={v}")]
    silver.start([str(SPARK_SUBMIT), "--master", "local[2]", "--jars", ",".join(jars), "--py-files", str(wheel),
                  "--conf", f"spark.pyspark.python={sys.executable}", *conf,
                  str(ROOT / "jobs" / "silver_job.py"), "-c", str(config), "--engine", "spark", *args],
                 env=submit_env())
    status = silver.wait(400)
    assert status == 0, silver.tail()
    return silver.output()


def test_spark_submit_batch_and_streaming_jobs_build_silver_equal_to_the_source(pg_db, tmp_path):
    root = str(tmp_path / "lake")
    create_schema(pg_db, **SIZES)
    config = tmp_path / "pipeline.yaml"
    config.write_text(pipeline_with_silver(root, pg_db, slot="submit"))
    capture = CaptureProcess(config, tmp_path)
    capture.run_until_idle()
    wheel = project_wheel(tmp_path / "dist")
    silver = SilverProcess(tmp_path, name="spark-submit")

    out = _submit(silver, wheel, config, "--once")
    assert f"cdc-lakehouse from {wheel}" in out, out  # the wheel's packages, not the checkout's
    assert "silver accounts: 150 events" in out and "silver orders: 150 events" in out, out
    assert silver_problems(root, pg_db) == []

    work = Workload(pg_db, seed=3, sizes=SIZES, pause_s=0.01).start()
    time.sleep(2)
    work.stop()
    capture.run_until_idle()
    out = _submit(silver, wheel, config, "--stream", "--trigger", "available-now")
    assert "silver accounts: micro-batch 0 applied" in out and "silver orders: stream done" in out, out
    assert silver_problems(root, pg_db) == []
    assert (tmp_path / "lake" / "silver" / "_checkpoints" / "orders" / "commits").is_dir()
    assert work.committed > 10
