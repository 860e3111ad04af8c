"""The command line: exit codes, error messages, no secrets, nothing written on bad input."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import psycopg
import pytest

from pipelines.cli import main
from tests.support.pipeline_yaml import pipeline_text


def run_cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pipelines.cli", *args], capture_output=True, text=True,
                          env={**os.environ, **(env or {})}, timeout=120)


def write(tmp_path: Path, text: str) -> str:
    path = tmp_path / "pipeline.yaml"
    path.write_text(text)
    return str(path)


def test_help_lists_the_commands(capsys):
    with pytest.raises(SystemExit) as info:
        main(["--help"])
    assert info.value.code == 0
    out = capsys.readouterr().out
    for command in ("validate", "capture", "silver", "run", "status", "demo"):
        assert command in out


def test_version_prints_the_installed_version_and_exits_0():
    import importlib.metadata

    out = run_cli("--version")
    assert out.returncode == 0
    assert out.stdout.strip() == f"cdc-lakehouse {importlib.metadata.version('cdc-lakehouse')}"


def test_malformed_yaml_names_file_and_line(tmp_path, capsys):
    path = write(tmp_path, "pipeline: x\nsources: [\n  - name: a\n")
    assert main(["validate", "-c", path]) == 2
    err = capsys.readouterr().err
    assert f"{path}:" in err and "malformed YAML" in err


def test_unknown_keys_and_bad_options_are_all_reported(tmp_path, capsys):
    text = """pipeline: x
lakehouse: {root: ./lake, rot: 1}
sources:
  - name: a
    connector: postgres
    connection: {host: h, database: d, user: u}
    options:
      snapshot.mode: sometimes
      tombstone.on.delete: true
      slot.name: Bad-Name
"""
    path = write(tmp_path, text)
    assert main(["validate", "-c", path]) == 2
    err = capsys.readouterr().err
    assert f"{path}:2: lakehouse.rot: unknown key" in err
    assert "sources[0].options.snapshot.mode: invalid value 'sometimes'" in err
    assert "did you mean 'tombstones.on.delete'" in err
    assert "sources[0].options.slot.name" in err


def test_missing_environment_variable_is_reported(tmp_path, capsys):
    text = ("pipeline: x\nlakehouse: {root: ./lake}\nsources:\n  - name: a\n    connector: postgres\n"
            "    connection: {host: h, database: d, user: u, password: \"${NOPE_PASSWORD_VAR}\"}\n")
    path = write(tmp_path, text)
    assert main(["validate", "-c", path]) == 2
    assert "environment variable NOPE_PASSWORD_VAR is not set" in capsys.readouterr().err


@pytest.mark.integration
@pytest.mark.postgres
def test_wrong_password_fails_without_leaking_it_or_writing(pg_server, pg_db, tmp_path):
    with psycopg.connect(pg_db, autocommit=True) as conn:
        conn.execute("DROP ROLE IF EXISTS pw_user")
        conn.execute("CREATE ROLE pw_user LOGIN REPLICATION PASSWORD 'right-password'")
    # the test server trusts local connections, so require passwords for this role only
    hba = pg_server.data_dir / "pg_hba.conf"
    original = hba.read_text()
    hba.write_text("host all pw_user 127.0.0.1/32 scram-sha-256\n" + original)
    with psycopg.connect(pg_server.dsn(), autocommit=True) as conn:
        conn.execute("SELECT pg_reload_conf()")
    try:
        root = tmp_path / "lake"
        text = pipeline_text(str(root), pg_db, user="pw_user", password="${PG_TEST_SECRET}")
        proc = run_cli("capture", "-c", write(tmp_path, text), "--until-idle", "-vv",
                       env={"PG_TEST_SECRET": "Sup3rSecretValue"})
        assert proc.returncode == 1
        assert "authentication" in proc.stderr
        assert "Sup3rSecretValue" not in proc.stderr + proc.stdout
        assert not (root / "bronze").exists()
    finally:
        hba.write_text(original)
        with psycopg.connect(pg_server.dsn(), autocommit=True) as conn:
            conn.execute("SELECT pg_reload_conf()")


@pytest.mark.integration
def test_unreachable_host_fails_cleanly(tmp_path):
    text = ("pipeline: x\nlakehouse: {root: \"" + str(tmp_path / "lake") + "\"}\nsources:\n  - name: a\n"
            "    connector: postgres\n    connection: {host: 127.0.0.1, port: 1, database: d, user: u}\n"
            "    options: {errors.max.retries: 0}\n")
    proc = run_cli("capture", "-c", write(tmp_path, text), "--until-idle")
    assert proc.returncode == 1
    assert "connecting to u@127.0.0.1:1/d" in proc.stderr
    assert not (tmp_path / "lake").exists()


@pytest.mark.integration
@pytest.mark.postgres
def test_capture_and_status_commands(pg_db, tmp_path):
    with psycopg.connect(pg_db, autocommit=True) as conn:
        conn.execute("CREATE TABLE t (id int PRIMARY KEY)")
        conn.execute("INSERT INTO t SELECT generate_series(1, 25000)")
    path = write(tmp_path, pipeline_text(str(tmp_path / "lake"), pg_db))
    proc = run_cli("capture", "-c", path, "--until-idle")
    assert proc.returncode == 0, proc.stderr
    assert "snapshot table 1/1 public.t: reading, 10,000 rows" in proc.stdout
    assert "25000 snapshot rows" in proc.stdout
    quiet = run_cli("-q", "capture", "-c", path, "--until-idle")
    assert quiet.returncode == 0 and quiet.stdout == ""
    status = run_cli("status", "-c", path)
    assert status.returncode == 0 and "snapshot completed" in status.stdout
    assert run_cli("silver", "-c", path, "--once").returncode == 0  # no silver tables declared: nothing to do


@pytest.mark.integration
@pytest.mark.postgres
def test_a_filter_that_matches_no_table_names_the_filter_and_the_tables(pg_db, tmp_path):
    with psycopg.connect(pg_db, autocommit=True) as conn:
        conn.execute("CREATE TABLE customers (id int PRIMARY KEY)")
        conn.execute("CREATE TABLE orders (id int PRIMARY KEY)")
    text = pipeline_text(str(tmp_path / "lake"), pg_db, **{"table.include.list": "public.nope",
                                                            "publication.autocreate.mode": "filtered",
                                                            "errors.max.retries": "0"})
    proc = run_cli("capture", "-c", write(tmp_path, text), "--until-idle")
    assert proc.returncode == 1
    assert "no table matches the filters" in proc.stderr
    assert "table.include.list: public.nope" in proc.stderr
    assert "tables in schema public: public.customers, public.orders" in proc.stderr
