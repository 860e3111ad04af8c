"""Each extra, installed from the built wheel into a fresh venv, runs its commands (issue 9).

The project wheel is built once from a copy of the sources; every test makes a new venv,
installs the wheel with one set of extras (``-c constraints.txt``, as scripts/setup.sh does;
pip's cache makes it quick) and runs ``cdc-lakehouse`` from that venv as a user would:

* ``[postgres]``: capture a private PostgreSQL into bronze; no Spark and no MySQL driver is
  installed, and ``silver`` says which extra it needs (exit 2, no traceback);
* ``[sail]``: ``silver --once`` over that bronze; ``capture`` says it needs ``[postgres]``;
* ``[mysql]``: capture a private MariaDB; no psycopg, no Spark;
* ``[spark]``: no pysail; ``import pyspark, delta`` works; a pyspark the venv already has (a
  cluster's) is neither reinstalled nor replaced, also when it is another in-range version.

A step that cannot run (no pip, no cache and no index, a server that does not start) fails.
"""

from __future__ import annotations

import base64
import hashlib
import os
import subprocess
import sys
import time
import zipfile
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pymysql
import pytest
from deltalake import DeltaTable

from tests.support.mariadb_pipeline import mariadb_pipeline_text
from tests.support.pipeline_yaml import pipeline_text
from tests.support.spark_submit import new_venv, project_wheel

pytestmark = [pytest.mark.slow, pytest.mark.integration]

REPO = Path(__file__).resolve().parents[2]
CONSTRAINTS = REPO / "constraints.txt"
OPTIONAL = ("pyspark", "pysail", "delta", "psycopg", "psycopg2", "pymysql", "pymysqlreplication", "sqlglot")
SILVER = "silver:\n  - {table: customers, source: pg.public.customers, casts: {id: bigint}}\n"
DURATIONS: dict[str, float] = {}


def run(*cmd: str | Path, cwd: Path | None = None, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}
    return subprocess.run([str(c) for c in cmd], capture_output=True, text=True, cwd=cwd, env=env, timeout=timeout)


def ok(proc: subprocess.CompletedProcess[str]) -> subprocess.CompletedProcess[str]:
    assert proc.returncode == 0, f"{proc.args}\nexit {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    return proc


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The project's wheel, built with plain pip from a copy of the sources (no build/ in the tree)."""
    started = time.monotonic()
    built = project_wheel(tmp_path_factory.mktemp("wheel"))
    DURATIONS["wheel"] = time.monotonic() - started
    return built


def pip(venv: Path, *args: str | Path) -> subprocess.CompletedProcess[str]:
    """This pip, installing into ``venv`` (a fresh venv needs no pip of its own)."""
    return ok(run(sys.executable, "-m", "pip", "--python", venv / "bin" / "python", *args,
                  "--disable-pip-version-check"))


def install(venv: Path, wheel: Path, extras: str, *, constraints: Path = CONSTRAINTS) -> None:
    started = time.monotonic()
    pip(venv, "install", "-c", constraints, f"{wheel}[{extras}]")
    DURATIONS[f"install [{extras}] into {venv.name}"] = time.monotonic() - started
    ok(run(sys.executable, "-m", "pip", "--python", venv / "bin" / "python", "check"))


def importable(venv: Path) -> set[str]:
    """Which of `OPTIONAL` the venv's Python finds (without importing them)."""
    code = ("import importlib.util as u, sys; "
            f"print(','.join(m for m in {OPTIONAL!r} if u.find_spec(m)))")
    return {m for m in ok(run(venv / "bin" / "python", "-c", code)).stdout.strip().split(",") if m}


def cli(venv: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    started = time.monotonic()
    proc = run(venv / "bin" / "cdc-lakehouse", *args, cwd=cwd)
    DURATIONS[f"cdc-lakehouse {args[0]} ({venv.name})"] = time.monotonic() - started
    return proc


@pytest.fixture(scope="module", autouse=True)
def report_durations() -> Iterator[None]:
    yield
    print("\n" + "\n".join(f"  {name}: {seconds:.1f}s" for name, seconds in DURATIONS.items()))


@pytest.mark.postgres
def test_postgres_extra_captures_and_sail_extra_builds_silver(wheel, pg_db, tmp_path):
    with psycopg.connect(pg_db, autocommit=True) as conn:
        conn.execute("CREATE TABLE customers (id int PRIMARY KEY, name text)")
        conn.execute("INSERT INTO customers SELECT g, 'c' || g FROM generate_series(1, 50) g")
    lake = tmp_path / "lake"
    config = tmp_path / "pipeline.yaml"
    config.write_text(pipeline_text(str(lake), pg_db) + SILVER)

    capture_venv = new_venv(tmp_path / "postgres")
    install(capture_venv, wheel, "postgres")
    assert importable(capture_venv) == {"psycopg", "psycopg2"}
    proc = ok(cli(capture_venv, "capture", "-c", str(config), "--until-idle", cwd=tmp_path))
    assert "50 snapshot rows" in proc.stdout
    assert DeltaTable(str(lake / "bronze" / "pg.public.customers")).to_pyarrow_table().num_rows == 50
    assert "snapshot completed" in ok(cli(capture_venv, "status", "-c", str(config), cwd=tmp_path)).stdout
    proc = cli(capture_venv, "silver", "-c", str(config), "--once", cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert "pip install 'cdc-lakehouse[sail]'" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert not (lake / "silver").exists()

    silver_venv = new_venv(tmp_path / "sail")
    install(silver_venv, wheel, "sail")
    assert importable(silver_venv) == {"pyspark", "pysail"}
    proc = ok(cli(silver_venv, "silver", "-c", str(config), "--once", cwd=tmp_path))
    assert "silver customers:" in proc.stdout
    silver = DeltaTable(str(lake / "silver" / "customers")).to_pyarrow_table()
    assert silver.num_rows == 50
    assert str(silver.schema.field("id").type) == "int64"  # the cast ran on Sail
    proc = cli(silver_venv, "capture", "-c", str(config), "--until-idle", cwd=tmp_path)
    assert proc.returncode == 2 and "pip install 'cdc-lakehouse[postgres]'" in proc.stderr, proc.stderr


@pytest.mark.mariadb
def test_mysql_extra_captures_mariadb(wheel, mariadb_db, tmp_path):
    conn = pymysql.connect(**mariadb_db, autocommit=True)  # type: ignore[arg-type]
    try:
        with conn.cursor() as cur:
            cur.execute("CREATE TABLE items (id INT PRIMARY KEY, name VARCHAR(40))")
            cur.execute("INSERT INTO items VALUES " + ",".join(f"({i}, 'item {i}')" for i in range(1, 31)))
    finally:
        conn.close()
    lake = tmp_path / "lake"
    config = tmp_path / "pipeline.yaml"
    config.write_text(mariadb_pipeline_text(str(lake), mariadb_db, server_id=5931))

    venv = new_venv(tmp_path / "mysql")
    install(venv, wheel, "mysql")
    assert importable(venv) == {"pymysql", "pymysqlreplication", "sqlglot"}
    proc = ok(cli(venv, "capture", "-c", str(config), "--until-idle", cwd=tmp_path))
    topic = f"my.{mariadb_db['database']}.items"
    assert f"{topic}: 30" in proc.stdout
    assert DeltaTable(str(lake / "bronze" / topic)).to_pyarrow_table().num_rows == 30


def test_spark_extra_keeps_the_clusters_pyspark_and_brings_no_sail(wheel, tmp_path):
    venv = new_venv(tmp_path / "spark")
    pip(venv, "install", "-c", CONSTRAINTS, "pyspark")  # what a Spark cluster's Python already has
    marker = venv / "lib" / f"python{sys.version_info.major}.{sys.version_info.minor}" / "site-packages" / \
        "pyspark" / "__init__.py"
    before = marker.stat()
    install(venv, wheel, "spark")
    after = marker.stat()
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns), "pyspark was reinstalled"
    assert importable(venv) == {"pyspark", "delta"}
    ok(run(venv / "bin" / "python", "-c", "import pyspark, delta; print(pyspark.__version__)"))
    config = tmp_path / "pipeline.yaml"  # the default engine is Sail: this install says what it lacks
    config.write_text(pipeline_text(str(tmp_path / "lake"), "host=127.0.0.1 port=1 dbname=d user=u") + SILVER)
    proc = cli(venv, "silver", "-c", str(config), "--once", cwd=tmp_path)
    assert proc.returncode == 2 and "pip install 'cdc-lakehouse[sail]'" in proc.stderr, proc.stderr


def fake_pyspark_wheel(directory: Path, version: str) -> Path:
    """A stand-in for a cluster's pyspark at ``version`` (pip sees it as installed; it holds no Spark)."""
    files = {"pyspark/__init__.py": f'__version__ = "{version}"\n',
             f"pyspark-{version}.dist-info/METADATA": f"Metadata-Version: 2.1\nName: pyspark\nVersion: {version}\n",
             f"pyspark-{version}.dist-info/WHEEL": "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\n"
                                                   "Tag: py3-none-any\n"}
    record = [f"{name},sha256={base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b'=').decode()}"
              f",{len(text.encode())}" for name, text in files.items()]
    record.append(f"pyspark-{version}.dist-info/RECORD,,")
    path = directory / f"pyspark-{version}-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as zf:
        for name, text in files.items():
            zf.writestr(name, text)
        zf.writestr(f"pyspark-{version}.dist-info/RECORD", "\n".join(record) + "\n")
    return path


def test_spark_extra_keeps_an_older_in_range_pyspark(wheel, tmp_path):
    """A cluster on Spark 4.1 keeps its pyspark: delta-spark resolves to a release that accepts it."""
    venv = new_venv(tmp_path / "cluster")
    pip(venv, "install", "--no-deps", fake_pyspark_wheel(tmp_path, "4.1.1"))
    unpinned = tmp_path / "constraints.txt"  # the project's pins, less the engine that the cluster provides
    unpinned.write_text("".join(line for line in CONSTRAINTS.read_text().splitlines(keepends=True)
                                if not line.startswith("pyspark")))
    install(venv, wheel, "spark", constraints=unpinned)
    listed = pip(venv, "list", "--format=freeze").stdout.lower().replace("_", "-").splitlines()
    assert "pyspark==4.1.1" in listed
    assert not any(line.startswith("pysail") for line in listed)
    assert any(line.startswith("delta-spark==") for line in listed)
