"""``cdc-lakehouse bundle spark-submit``, end to end: the bundle is built from a clean checkout
(a copy of the repository's files, nothing built or cached in it), its wheel is installed into
a fresh virtualenv (with the ``postgres`` extra only: pyspark and Delta come from the Spark
that runs it), and every job of the bundle runs through its own script against one private
PostgreSQL: ``bin/capture.sh --until-idle`` (plain Python), ``bin/silver-batch.sh`` with the
real ``spark-submit`` (Delta from ``--packages``), more changes and another capture, then
``bin/silver-stream.sh`` (available-now). After each silver job, silver equals the source
(psycopg against delta-rs: independent of the code under test).
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.pipelines.exactly_once_support import Workload, create_schema
from tests.support.silver_processes import ROOT, SilverProcess, pipeline_with_silver, silver_problems
from tests.support.spark_submit import new_venv, pip_install, run, submit_env

pytestmark = [pytest.mark.integration, pytest.mark.postgres, pytest.mark.classic_spark]

SIZES = {"accounts": 120, "big": 20, "orders": 120}


def clean_checkout(dest: Path) -> Path:
    """The repository's files (tracked, or new and not ignored) as they are in the working tree."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                            capture_output=True, check=True).stdout.decode().split("\0")
    for name in filter(None, listed):
        source = ROOT / name
        if source.is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            (dest / name).write_bytes(source.read_bytes())
    return dest


SHIPPED_WITH_SPARK = "org.slf4j:slf4j-api,org.xerial.snappy:snappy-java"
"""Two of Delta's transitive dependencies whose jars this machine's Maven cache lacks (it has no
access to Maven Central); Spark ships both, so excluding them changes nothing else."""


def submit(silver: SilverProcess, script: Path, venv: Path, ivy: Path) -> str:
    """Run one Spark job script of the bundle (spark-submit options after it) and return its output."""
    silver.start([str(script), "--master", "local[2]", "--conf", f"spark.jars.ivy={ivy}",
                  "--exclude-packages", SHIPPED_WITH_SPARK],
                 env={**submit_env(venv / "bin" / "python"), "PYTHONPATH": ""})
    assert silver.wait(300) == 0, silver.tail()
    return silver.output()


def test_bundle_from_a_clean_checkout_runs_every_job_from_a_fresh_venv(pg_db, tmp_path):
    checkout = clean_checkout(tmp_path / "checkout")
    lake = tmp_path / "lake"
    create_schema(pg_db, **SIZES)
    config = tmp_path / "pipeline.yaml"
    config.write_text(pipeline_with_silver(str(lake), pg_db, slot="bundle"))
    bundle = tmp_path / "bundle"
    proc = run(sys.executable, "-m", "pipelines.cli", "bundle", "spark-submit", "-c", config, "-o", bundle,
               "--trigger", "available-now", cwd=checkout, env={"PYTHONPATH": str(checkout)})
    assert "spark-submit bundle of eo" in proc.stdout, proc.stdout
    assert not list(checkout.glob("build")) and not list(checkout.glob("*.egg-info"))  # the checkout stays clean
    (wheel,) = bundle.glob("cdc_lakehouse-*.whl")
    assert (bundle / "pipeline.yaml").read_text() == config.read_text()

    venv = new_venv(tmp_path / "venv")
    pip_install(venv, f"{wheel}[postgres]")
    capture = run(bundle / "bin" / "capture.sh", "--until-idle", cwd=tmp_path,
                  env={"PYTHON": str(venv / "bin" / "python")})
    assert "snapshot rows" in capture.stdout, capture.stdout

    silver = SilverProcess(tmp_path, name="bundle")
    ivy = tmp_path / "ivy"
    out = submit(silver, bundle / "bin" / "silver-batch.sh", venv, ivy)
    assert f"cdc-lakehouse from {bundle / wheel.name}" in out, out  # the bundle's wheel (--py-files)
    assert "silver accounts: 120 events" in out and "silver orders: 120 events" in out, out
    assert any(ivy.rglob("delta-spark_*.jar")), "Delta did not come from --packages"
    assert silver_problems(str(lake), pg_db) == []

    work = Workload(pg_db, seed=5, sizes=SIZES, pause_s=0.01).start()
    time.sleep(1.5)
    work.stop()
    run(bundle / "bin" / "capture.sh", "--until-idle", cwd=tmp_path, env={"PYTHON": str(venv / "bin" / "python")})
    out = submit(silver, bundle / "bin" / "silver-stream.sh", venv, ivy)
    assert "silver orders: stream done" in out, out
    assert silver_problems(str(lake), pg_db) == []
    assert (lake / "silver" / "_checkpoints" / "orders" / "commits").is_dir()
    assert work.committed > 5
