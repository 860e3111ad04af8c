"""Each command imports only what its extra installs (issue 9), proved in child processes.

`blocked_cli` runs the CLI with packages made unimportable, as in an install without their
extra, and reports which optional dependencies got imported. The installs themselves are
exercised in `test_install_extras` (slow): these run in seconds.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import psycopg
import pytest
from deltalake import DeltaTable

from tests.support.mariadb_pipeline import mariadb_pipeline_text
from tests.support.pipeline_yaml import pipeline_text

CHILD = Path(__file__).with_name("blocked_cli.py")
SPARK = ("pyspark", "pysail", "delta", "py4j", "pandas", "grpc")
MYSQL_DRIVERS = ("pymysql", "pymysqlreplication", "sqlglot", "mysql", "_mysql_connector")
PG_DRIVERS = ("psycopg", "psycopg2")
SILVER = "silver:\n  - {table: customers, source: pg.public.customers, casts: {id: bigint}}\n"


def run_blocked(blocked: tuple[str, ...], *args: str) -> tuple[int, str, str, set[str]]:
    """Exit code, stdout, stderr and the optional modules the command imported."""
    proc = subprocess.run([sys.executable, str(CHILD), ",".join(blocked) or "-", *args], capture_output=True,
                          text=True, timeout=120)
    *out, last = proc.stdout.rstrip("\n").split("\n")
    assert last.startswith("optional-modules-loaded:"), proc.stdout + proc.stderr
    loaded = {m for m in last.split(":", 1)[1].strip().split(",") if m}
    return proc.returncode, "\n".join(out), proc.stderr, loaded


def pg_file(tmp_path: Path, *, engine: str = "", silver: bool = True) -> str:
    text = pipeline_text(str(tmp_path / "lake"), "host=127.0.0.1 port=5432 dbname=shop user=cdc")
    path = tmp_path / "pg.yaml"
    path.write_text(text + (SILVER if silver else "") + engine)
    return str(path)


def mariadb_file(tmp_path: Path) -> str:
    args = {"host": "127.0.0.1", "port": 3306, "user": "cdc", "database": "shop"}
    path = tmp_path / "my.yaml"
    path.write_text(mariadb_pipeline_text(str(tmp_path / "lake"), args, server_id=7))
    return str(path)


def test_validate_postgres_imports_neither_spark_nor_mysql_drivers(tmp_path):
    path = pg_file(tmp_path)
    code, out, err, loaded = run_blocked((), "validate", "-c", path)
    assert code == 0, err
    assert "valid: 1 source(s), 1 silver table(s)" in out
    assert not loaded & {*SPARK, *MYSQL_DRIVERS}, loaded  # installed here, yet not imported
    code, _, err, loaded = run_blocked((*SPARK, *MYSQL_DRIVERS), "validate", "-c", path)
    assert code == 0, err  # and not needed: as in `pip install cdc-lakehouse[postgres]`


def test_validate_mariadb_imports_neither_spark_nor_postgres_drivers(tmp_path):
    path = mariadb_file(tmp_path)
    code, _, err, loaded = run_blocked((), "validate", "-c", path)
    assert code == 0, err
    assert not loaded & {*SPARK, *PG_DRIVERS}, loaded
    code, _, err, _ = run_blocked((*SPARK, *PG_DRIVERS), "validate", "-c", path)
    assert code == 0, err


@pytest.mark.parametrize(("fixture", "blocked", "extra"), [
    ("pg", ("psycopg",), "postgres"),
    ("pg", ("psycopg2",), "postgres"),
    ("mariadb", ("pymysql",), "mysql"),
    ("mariadb", ("sqlglot",), "mysql"),
    ("mariadb", ("pymysqlreplication",), "mysql"),
])
def test_a_missing_driver_names_its_extra(tmp_path, fixture, blocked, extra):
    path = pg_file(tmp_path) if fixture == "pg" else mariadb_file(tmp_path)
    for command in ("validate", "capture"):
        code, _, err, _ = run_blocked(blocked, command, "-c", path)
        assert code == 2, err
        assert f"pip install 'cdc-lakehouse[{extra}]'" in err
        assert "Traceback" not in err


@pytest.mark.parametrize(("engine", "blocked", "extra"), [
    ("", ("pyspark",), "sail"),
    ("", ("pysail",), "sail"),
    ("engine: {kind: connect, url: 'sc://127.0.0.1:1'}\n", ("grpc",), "sail"),
    ("engine: {kind: spark}\n", ("pyspark",), "spark"),
])
def test_silver_and_run_without_their_engine_name_its_extra(tmp_path, engine, blocked, extra):
    path = pg_file(tmp_path, engine=engine)
    for command in ("silver", "run"):
        code, _, err, loaded = run_blocked(blocked, command, "-c", path)
        assert code == 2, err
        assert f"pip install 'cdc-lakehouse[{extra}]'" in err
        assert "Traceback" not in err
        assert not loaded & set(SPARK), loaded  # nothing was started


def test_silver_needs_no_connector_driver(tmp_path):
    """A silver-only install (``[sail]``) reads bronze: the pipeline's connectors are not built."""
    code, _, err, _ = run_blocked((*PG_DRIVERS, *MYSQL_DRIVERS, "pysail"), "silver", "-c", pg_file(tmp_path))
    assert code == 2 and "cdc-lakehouse[sail]" in err  # it got as far as the engine check


def test_status_needs_no_extra(tmp_path):
    code, out, err, loaded = run_blocked((*SPARK, *PG_DRIVERS, *MYSQL_DRIVERS), "status", "-c", pg_file(tmp_path))
    assert code == 0, err
    assert "source pg (postgres): never run, nothing committed to bronze yet" in out
    assert not loaded


def test_maintain_needs_no_extra(tmp_path):
    """maintain works on Delta tables with delta-rs: no Spark, no driver, no database secret."""
    code, out, err, loaded = run_blocked((*SPARK, *PG_DRIVERS, *MYSQL_DRIVERS), "maintain", "-c", pg_file(tmp_path))
    assert code == 0, err
    assert "bronze side table _cdc/pg/offsets: " in out
    assert not loaded


def test_demo_without_its_extra_names_it(tmp_path):
    code, _, err, _ = run_blocked(("pysail",), "demo", "--dir", str(tmp_path / "demo"))
    assert code == 2, err
    assert "pip install 'cdc-lakehouse[demo]'" in err
    assert not (tmp_path / "demo").exists()


def test_an_optional_import_deeper_down_is_reported_not_raised(monkeypatch, capsys):
    from pipelines import cli, commands

    def dispatch(args, say):
        raise ModuleNotFoundError("No module named 'pyspark.sql'", name="pyspark.sql")

    monkeypatch.setattr(commands, "dispatch", dispatch)
    assert cli.main(["validate", "-c", "x.yaml"]) == 2
    assert "pip install 'cdc-lakehouse[sail]'" in capsys.readouterr().err

    def broken(args, say):
        raise ModuleNotFoundError("No module named 'not_ours'", name="not_ours")

    monkeypatch.setattr(commands, "dispatch", broken)
    with pytest.raises(ModuleNotFoundError):  # a bug, not a missing extra: the traceback stays
        cli.main(["validate", "-c", "x.yaml"])


@pytest.mark.integration
@pytest.mark.postgres
def test_capture_postgres_with_spark_and_mysql_drivers_unimportable(pg_db, tmp_path):
    with psycopg.connect(pg_db, autocommit=True) as conn:
        conn.execute("CREATE TABLE customers (id int PRIMARY KEY, name text)")
        conn.execute("INSERT INTO customers SELECT g, 'c' || g FROM generate_series(1, 50) g")
    path = tmp_path / "pg.yaml"
    path.write_text(pipeline_text(str(tmp_path / "lake"), pg_db) + SILVER)
    code, out, err, loaded = run_blocked((*SPARK, *MYSQL_DRIVERS), "capture", "-c", str(path), "--until-idle")
    assert code == 0, err
    assert "50 snapshot rows" in out
    assert loaded <= set(PG_DRIVERS), loaded
    assert DeltaTable(str(tmp_path / "lake" / "bronze" / "pg.public.customers")).to_pyarrow_table().num_rows == 50


def test_bundle_imports_no_spark_and_no_driver(tmp_path):
    wheel = tmp_path / "cdc_lakehouse-0.1.0-py3-none-any.whl"
    wheel.write_bytes(b"the wheel is only copied")
    out = tmp_path / "bundle"
    code, out_text, err, loaded = run_blocked((*SPARK, *MYSQL_DRIVERS, *PG_DRIVERS), "bundle", "spark-submit", "-c",
                                              pg_file(tmp_path), "-o", str(out), "--wheel", str(wheel))
    assert code == 0, err  # as with `pip install cdc-lakehouse`, no extra
    assert "spark-submit bundle of" in out_text and (out / "bin" / "silver-batch.sh").exists()
    assert not loaded, loaded


def test_reset_without_a_position_needs_no_extra(tmp_path):
    """Offsets live in bronze: forgetting them imports no driver and no Spark."""
    code, out, err, loaded = run_blocked((*SPARK, *PG_DRIVERS, *MYSQL_DRIVERS), "reset", "-c", pg_file(tmp_path),
                                         "--source", "pg", "--yes")
    assert code == 0, err
    assert "source pg: offsets reset" in out
    assert not loaded


def test_rebuild_needs_no_connector_driver(tmp_path):
    code, _, err, _ = run_blocked((*PG_DRIVERS, *MYSQL_DRIVERS, "pysail"), "rebuild", "-c", pg_file(tmp_path),
                                  "--table", "customers", "--yes")
    assert code == 2 and "cdc-lakehouse[sail]" in err  # it got as far as the engine check


def test_expectations_need_the_quality_extra_only_where_silver_runs(tmp_path):
    """validate and status load a file with expectations without Great Expectations; silver names its extra."""
    path = tmp_path / "quality.yaml"
    path.write_text(Path(pg_file(tmp_path, silver=False)).read_text()
                    + "silver:\n  - table: customers\n    source: pg.public.customers\n    expectations:\n"
                      "      - {type: not_null, column: email, action: warn}\n")
    for command in ("validate", "status"):
        code, _, err, _ = run_blocked(("great_expectations",), command, "-c", str(path))
        assert code == 0, err
    code, _, err, loaded = run_blocked(("great_expectations",), "silver", "-c", str(path), "--once")
    assert code == 2, err
    assert "pip install 'cdc-lakehouse[quality]'" in err and "Traceback" not in err
    assert not loaded & set(SPARK), loaded  # refused before any session started
