"""``cdc-lakehouse bundle spark-submit --python-env archive``, end to end: the bundle is built
from a clean checkout (a copy of the repository's files, nothing built or cached in it); its
packed virtualenv ``env.tar.gz`` holds the wheel installed with the ``postgres`` extra and the
checkout's pinned requirements (pyspark and Delta come from the Spark that runs it), and no
credential of the pipeline file; every job of the bundle runs through its own script against
one private PostgreSQL, from that environment alone: ``bin/capture.sh --until-idle`` (plain
Python, the archive unpacked into the bundle), ``bin/silver-batch.sh`` with the real
``spark-submit`` (Delta from ``--packages``, Python from ``--archives env.tar.gz#environment``),
more changes and another capture, then ``bin/silver-stream.sh`` (available-now) and
``bin/maintain.sh``. After each silver job, silver equals the source (psycopg against
delta-rs: independent of the code under test). The ``--py-files`` variant's command lines are
checked without running them in test_spark_submit_layout.py.
"""

from __future__ import annotations

import shlex
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.pipelines.exactly_once_support import Workload, create_schema
from tests.support.silver_processes import ROOT, SilverProcess, pipeline_with_silver, silver_problems
from tests.support.spark_submit import SPARK_HOME, run

pytestmark = [pytest.mark.integration, pytest.mark.postgres, pytest.mark.classic_spark,
              pytest.mark.classic_subprocess]  # Spark only in child processes (scripts/test.sh: see classic_subprocess)

SIZES = {"accounts": 120, "big": 20, "orders": 120}
SECRET = "s3cr3t-not-in-the-archive"
"""The pipeline file's password (the test server trusts local connections, so any will do)."""


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


NOT_A_PYTHON = "/nonexistent/python"
"""What the Python variables of the job scripts' environment say: the bundle must not need them."""


def submit(silver: SilverProcess, script: Path, ivy: Path) -> str:
    """Run one Spark job script of the bundle (spark-submit options after it) and return its output."""
    silver.start([str(script), "--master", "local[2]", "--conf", f"spark.jars.ivy={ivy}",
                  "--exclude-packages", SHIPPED_WITH_SPARK],
                 env={"SPARK_HOME": str(SPARK_HOME), "PYTHONPATH": "", "PYSPARK_PYTHON": NOT_A_PYTHON,
                      "PYSPARK_DRIVER_PYTHON": NOT_A_PYTHON})
    assert silver.wait(300) == 0, silver.tail()
    return silver.output()


def files_with(text: str, folder: Path) -> list[str]:
    """The files under ``folder`` that contain ``text`` (grep: the environment is large)."""
    proc = subprocess.run(["grep", "-rlF", "--", text, str(folder)], capture_output=True, text=True)
    assert proc.returncode in (0, 1), proc.stderr
    return proc.stdout.split()


def test_archive_bundle_from_a_clean_checkout_runs_every_job_from_its_packed_env(pg_db, tmp_path):
    checkout = clean_checkout(tmp_path / "checkout")
    lake = tmp_path / "lake"
    create_schema(pg_db, **SIZES)
    config = tmp_path / "pipeline.yaml"
    config.write_text(pipeline_with_silver(str(lake), pg_db, slot="bundle").replace(
        "user: postgres}", f"user: postgres, password: {SECRET}}}"))
    bundle = tmp_path / "bundle"
    proc = run(sys.executable, "-m", "pipelines.cli", "bundle", "spark-submit", "-c", config, "-o", bundle,
               "--trigger", "available-now", "--python-env", "archive", cwd=checkout,
               env={"PYTHONPATH": str(checkout)})
    assert "spark-submit bundle of eo (env.tar.gz)" in proc.stdout, proc.stdout
    assert not list(checkout.glob("build")) and not list(checkout.glob("*.egg-info"))  # the checkout stays clean
    assert not list(bundle.glob("*.whl"))  # the wheel is in the environment
    assert (bundle / "pipeline.yaml").read_text() == config.read_text()
    for job in ("silver-batch", "silver-stream"):
        (line,) = [ln for ln in (bundle / "bin" / f"{job}.sh").read_text().splitlines() if ln.startswith("exec ")]
        argv = shlex.split(line)
        assert argv[argv.index("--archives") + 1] == "env.tar.gz#environment" and "--py-files" not in argv

    capture = run(bundle / "bin" / "capture.sh", "--until-idle", cwd=tmp_path)
    assert "snapshot rows" in capture.stdout, capture.stdout
    env = bundle / "environment"  # the archive, unpacked by the script
    site = {p.name for p in env.glob("lib/python3*/site-packages/*")}
    assert (env / "bin" / "python").exists() and {"pipelines", "jobs", "psycopg", "deltalake"} <= site
    assert "pyspark" not in site and not list(env.rglob("pipeline.yaml"))
    # no credential and nothing of the pipeline file in the environment
    assert files_with(SECRET, env) == [] and files_with(str(lake), env) == []
    assert files_with(SECRET, bundle) == [str(bundle / "pipeline.yaml")]  # the copy of the file, as given

    silver = SilverProcess(tmp_path, name="bundle")
    ivy = tmp_path / "ivy"
    out = submit(silver, bundle / "bin" / "silver-batch.sh", ivy)
    # the driver's cdc-lakehouse is the one installed in the environment
    assert f"cdc-lakehouse from {bundle / 'environment' / 'lib'}" in out, out
    assert "silver accounts: 120 events" in out and "silver orders: 120 events" in out, out
    assert any(ivy.rglob("delta-spark_*.jar")), "Delta did not come from --packages"
    assert silver_problems(str(lake), pg_db) == []

    work = Workload(pg_db, seed=5, sizes=SIZES, pause_s=0.01).start()
    time.sleep(1.5)
    work.stop()
    run(bundle / "bin" / "capture.sh", "--until-idle", cwd=tmp_path)
    out = submit(silver, bundle / "bin" / "silver-stream.sh", ivy)
    assert "silver orders: stream done" in out, out
    assert silver_problems(str(lake), pg_db) == []
    assert (lake / "silver" / "_checkpoints" / "orders" / "commits").is_dir()
    assert work.committed > 5
    maintain = run(bundle / "bin" / "maintain.sh", cwd=tmp_path)
    assert "bronze pg.public.orders: files " in maintain.stdout, maintain.stdout
