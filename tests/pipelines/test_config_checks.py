"""Issue 14: pipeline files that used to hang, pass validation wrongly or demand unused secrets."""

from __future__ import annotations

import logging
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pipelines.cli import main
from pipelines.validation import load_validated

SOURCE = """  - name: a
    connector: postgres
    connection: {host: h, database: d, user: u}
"""


def write(tmp_path: Path, text: str) -> str:
    path = tmp_path / "pipeline.yaml"
    path.write_text(text)
    return str(path)


def run_cli(*args: str, env: dict[str, str] | None = None, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pipelines.cli", *args], capture_output=True, text=True,
                          env={**os.environ, **(env or {})}, timeout=timeout)


# --- the hang --------------------------------------------------------------------------------

@pytest.mark.parametrize("text, key", [
    ("pipeline: x\nlakehous: {root: ./lake}\nsources:\n" + SOURCE, "lakehouse"),
    ("pipeline: x\nlakehouse: {root: ./lake}\n", "sources"),
    ("lakehouse: {root: ./lake}\nsources:\n" + SOURCE, "pipeline"),
], ids=["lakehous", "no-sources", "no-pipeline"])
@pytest.mark.parametrize("command", [["validate"], ["capture", "--until-idle"], ["silver", "--once"], ["status"],
                                     ["run"]], ids=lambda c: c[0])
def test_missing_top_level_key_exits_2_instead_of_hanging(tmp_path, text, key, command):
    path = write(tmp_path, text)
    proc = run_cli(command[0], "-c", path, *command[1:], timeout=60)
    assert proc.returncode == 2, proc.stderr
    assert f"{key}: required key is missing" in proc.stderr


# --- capture --until-idle gives up ---------------------------------------------------------

@pytest.mark.integration
def test_until_idle_gives_up_on_an_unreachable_source(tmp_path):
    text = ("pipeline: x\nlakehouse: {root: \"" + str(tmp_path / "lake") + "\"}\nsources:\n  - name: a\n"
            "    connector: postgres\n    connection: {host: 127.0.0.1, port: 1, database: d, user: u}\n"
            "    options: {errors.retry.delay.initial.ms: 50, errors.retry.delay.max.ms: 100}\n")
    started = time.monotonic()
    proc = run_cli("capture", "-c", write(tmp_path, text), "--until-idle", timeout=60)
    assert proc.returncode == 1, proc.stderr
    assert time.monotonic() - started < 50
    assert "unlimited" not in proc.stderr
    assert "gave up" in proc.stderr and "connecting to u@127.0.0.1:1/d" in proc.stderr


@pytest.mark.integration
def test_until_idle_gives_up_after_the_configured_retries(tmp_path):
    text = ("pipeline: x\nlakehouse: {root: \"" + str(tmp_path / "lake") + "\"}\nsources:\n  - name: a\n"
            "    connector: postgres\n    connection: {host: 127.0.0.1, port: 1, database: d, user: u}\n"
            "    options: {errors.retry.delay.initial.ms: 100, errors.retry.delay.max.ms: 400,\n"
            "              errors.max.retries: 4}\n")
    proc = run_cli("capture", "-c", write(tmp_path, text), "--until-idle", timeout=60)
    assert proc.returncode == 1, proc.stderr
    # exponential: the initial delay doubled at every retry, never above the maximum
    waits = re.findall(r"retrying in ([0-9.]+)s \(retry (\d) of 4\)", proc.stderr)
    assert waits == [("0.1", "1"), ("0.2", "2"), ("0.4", "3"), ("0.4", "4")], proc.stderr
    assert "gave up after 4 retries" in proc.stderr


def test_the_initial_retry_delay_must_be_below_the_maximum(tmp_path):
    text = BASE + "    options: {errors.retry.delay.initial.ms: 5000, errors.retry.delay.max.ms: 1000}\n"
    err = problems_of(tmp_path, text)
    assert "sources[0].options.errors.retry.delay.initial.ms: must be less than errors.retry.delay.max.ms (1000)" in err


# --- capture --source nosuch --------------------------------------------------------------

def test_unknown_source_name_is_an_error_listing_the_declared_ones(tmp_path, capsys):
    text = "pipeline: x\nlakehouse: {root: ./lake}\nsources:\n" + SOURCE + SOURCE.replace("name: a", "name: b")
    path = write(tmp_path, text)
    assert main(["capture", "-c", path, "--source", "nosuch", "--until-idle"]) == 2
    err = capsys.readouterr().err
    assert "nosuch" in err and "declared: a, b" in err


# --- validate: checks across entries ----------------------------------------------------

BASE = "pipeline: x\nlakehouse: {root: ./lake}\nsources:\n" + SOURCE


def problems_of(tmp_path: Path, text: str, env: dict[str, str] | None = None) -> str:
    from cdc_sources.spi import ConfigError

    with pytest.raises(ConfigError) as info:
        load_validated(write(tmp_path, text), env=env or {})
    return str(info.value)


def test_two_silver_tables_with_the_same_name(tmp_path):
    text = BASE + "silver:\n  - table: t\n    source: a.public.t\n  - table: t\n    source: a.public.u\n"
    err = problems_of(tmp_path, text)
    assert "pipeline.yaml:10: silver[1].table: silver table 't' is declared twice (also silver[0], line 8)" in err


def test_silver_source_of_an_undeclared_source(tmp_path):
    text = BASE + "silver:\n  - table: t\n    source: nope.public.t\n"
    err = problems_of(tmp_path, text)
    assert "pipeline.yaml:9: silver[0].source: 'nope.public.t' is not a topic of a declared source" in err
    assert "declared: a" in err


def test_two_tables_with_the_same_location(tmp_path):
    text = (BASE + "silver:\n  - table: t\n    source: a.public.t\n    location: /data/x\n"
            "  - table: u\n    source: a.public.u\n    location: /data/x/\n")
    err = problems_of(tmp_path, text)
    assert "pipeline.yaml:13: silver[1].location: '/data/x/' is also the location of silver[0] (t)" in err


def test_explicit_location_onto_another_tables_default_location(tmp_path):
    text = (BASE + "silver:\n  - table: t\n    source: a.public.t\n"
            "  - table: u\n    source: a.public.u\n    location: ./lake/silver/t\n")
    err = problems_of(tmp_path, text)
    assert "silver[1].location" in err and "silver[0] (t)" in err


@pytest.mark.parametrize("text, line, path", [
    ("pipeline: x\npipeline: y\nlakehouse: {root: ./lake}\nsources:\n" + SOURCE, 2, "pipeline"),
    (BASE.replace("user: u}", "user: u, host: i}"), 6, "sources[0].connection.host"),
    (BASE + "    options:\n      slot.name: s\n      slot.name: t\n", 9, "sources[0].options.slot.name"),
])
def test_a_key_given_twice_is_an_error(tmp_path, text, line, path):
    err = problems_of(tmp_path, text)
    assert f"pipeline.yaml:{line}: {path}: given twice" in err
# --- secrets only where a command connects ---------------------------------------------

SECRET = ("pipeline: x\nlakehouse: {root: LAKE}\nsources:\n  - name: shop-pg\n    connector: postgres\n"
          "    connection: {host: h, database: d, user: u, password: \"${PG_PASSWORD_ISSUE14}\"}\n")


def test_status_and_silver_do_not_need_the_password(tmp_path):
    path = write(tmp_path, SECRET.replace("LAKE", str(tmp_path / "lake")))
    env = {k: v for k, v in os.environ.items() if k != "PG_PASSWORD_ISSUE14"}
    proc = subprocess.run([sys.executable, "-m", "pipelines.cli", "status", "-c", path], capture_output=True,
                          text=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "nothing committed" in proc.stdout


def test_silver_config_loading_does_not_resolve_source_secrets(tmp_path):
    from pipelines.validation import load_validated as load

    loaded = load(write(tmp_path, SECRET), env={}, secrets=False)
    assert loaded.config.sources[0].connection.password is None


def test_capture_still_needs_the_password(tmp_path):
    err = problems_of(tmp_path, SECRET)
    assert "environment variable PG_PASSWORD_ISSUE14 is not set" in err


def test_override_variable_replaces_a_file_reference(tmp_path):
    loaded = load_validated(write(tmp_path, SECRET), env={"CDC__SOURCES__SHOP_PG__PASSWORD": "s3cret"})
    password = loaded.config.sources[0].connection.password
    assert password is not None and password.get_secret_value() == "s3cret"


def option_secret(connector: str, options: str = "") -> str:
    """A source whose password is given as its Debezium option, ``options.database.password``."""
    server_id = ', database.server.id: "5"' if connector == "mysql" else ""
    return ("pipeline: x\nlakehouse: {root: LAKE}\nsources:\n  - name: shop-pg\n"
            f"    connector: {connector}\n    connection: {{host: h, database: d, user: u}}\n"
            f'    options: {{database.password: "${{PG_PASSWORD_ISSUE14}}"{server_id}{options}}}\n')


@pytest.mark.parametrize("connector", ["postgres", "mysql"])
def test_override_variable_replaces_the_debezium_spelling_of_the_password(tmp_path, connector):
    loaded = load_validated(write(tmp_path, option_secret(connector)),
                            env={"CDC__SOURCES__SHOP_PG__PASSWORD": "s3cret"})
    config = loaded.connectors["shop-pg"].config  # type: ignore[attr-defined]
    secret = config.connection.password
    assert (secret.get_secret_value() if hasattr(secret, "get_secret_value") else secret) == "s3cret"
    assert loaded.config.sources[0].options["database.password"] == "s3cret"
    assert loaded.config.sources[0].connection.password is None  # replaced where the file gives it


def test_override_variable_replaces_the_debezium_spelling_of_the_port_and_names_the_variable(tmp_path):
    text = option_secret("postgres", ', database.port: "5432"')
    err = problems_of(tmp_path, text, env={"PG_PASSWORD_ISSUE14": "x", "CDC__SOURCES__SHOP_PG__PORT": "abc"})
    assert "given twice" not in err
    assert "sources[0].options.database.port" in err and "CDC__SOURCES__SHOP_PG__PORT" in err
    assert "abc" not in err.replace("CDC__SOURCES", "")


def test_override_with_a_bad_value_names_the_variable(tmp_path):
    err = problems_of(tmp_path, SECRET, env={"PG_PASSWORD_ISSUE14": "x", "CDC__SOURCES__SHOP_PG__PORT": "abc"})
    assert "sources[0].connection.port" in err and "CDC__SOURCES__SHOP_PG__PORT" in err


def test_override_of_an_enum_like_field_does_not_echo_the_value(tmp_path):
    text = SECRET.replace("connector: postgres", "connector: \"${CONNECTOR_ISSUE14}\"")
    err = problems_of(tmp_path, text, env={"PG_PASSWORD_ISSUE14": "x", "CONNECTOR_ISSUE14": "hunter2-secret"})
    assert "sources[0].connector" in err and "CONNECTOR_ISSUE14" in err
    assert "hunter2-secret" not in err


def test_silver_job_needs_no_password_and_exits_2_without_a_traceback(tmp_path):
    text = SECRET.replace("LAKE", str(tmp_path / "lake")) + "silver:\n  - table: t\n    source: nope.public.t\n"
    env = {k: v for k, v in os.environ.items() if k != "PG_PASSWORD_ISSUE14"}
    proc = subprocess.run([sys.executable, "-m", "jobs.silver_job", "-c", write(tmp_path, text), "--once"],
                          capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert "PG_PASSWORD_ISSUE14" not in proc.stderr
    assert "pipeline.yaml:9: silver[0].source: 'nope.public.t' is not a topic of a declared source" in proc.stderr
    assert "Traceback" not in proc.stderr


# --- messages ---------------------------------------------------------------------------

MESSAGES = BASE + """silver:
  - table: "bad table!"
    source: a.public.t
    keys: id
  - table: t2
    source: a.public.t2
    keys: [id]
    exclude_columns: [id]
    deletes: soft
    history: scd2
    partition_by: [c]
    cluster_by: [c]
"""


def test_a_scalar_where_a_list_belongs_says_how_to_write_it(tmp_path):
    err = problems_of(tmp_path, MESSAGES)
    assert "pipeline.yaml:10: silver[0].keys: must be a list: write [id]" in err


def test_a_bad_table_name_says_which_characters_are_allowed(tmp_path):
    err = problems_of(tmp_path, MESSAGES)
    assert ("pipeline.yaml:8: silver[0].table: 'bad table!' is not a valid name: use letters, digits, _ and -, "
            "not starting with -") in err
    assert "^[" not in err


def test_every_silver_problem_names_its_key(tmp_path):
    err = problems_of(tmp_path, MESSAGES)
    assert "pipeline.yaml:14: silver[1].exclude_columns: key column 'id' cannot be in exclude_columns" in err
    assert "pipeline.yaml:15: silver[1].deletes: soft does not apply to history: scd2" in err
    assert "pipeline.yaml:18: silver[1].cluster_by: use either partition_by or cluster_by" in err
    assert "Value error" not in err


# --- truncates skipped under a silver table ----------------------------------------------

def test_silver_over_a_source_that_skips_truncates_is_warned_about(tmp_path, caplog):
    text = BASE + "silver:\n  - table: t\n    source: a.public.t\n"
    with caplog.at_level(logging.WARNING):
        load_validated(write(tmp_path, text), env={})
    warnings = [r.getMessage() for r in caplog.records if "TRUNCATE" in r.getMessage()]
    assert len(warnings) == 1, caplog.text
    assert "silver table t" in warnings[0] and "skipped.operations: none" in warnings[0]
    assert "pipeline.yaml" in warnings[0] and "sources[0].options.skipped.operations" in warnings[0]


@pytest.mark.parametrize("options", ["    options: {skipped.operations: none}\n",
                                     "    options: {skipped.operations: c}\n"])
def test_no_truncate_warning_when_truncates_reach_bronze(tmp_path, caplog, options):
    text = BASE + options + "silver:\n  - table: t\n    source: a.public.t\n"
    with caplog.at_level(logging.WARNING):
        load_validated(write(tmp_path, text), env={})
    assert "TRUNCATE" not in caplog.text


def test_no_truncate_warning_without_silver_tables(tmp_path, caplog):
    with caplog.at_level(logging.WARNING):
        load_validated(write(tmp_path, BASE), env={})
    assert "TRUNCATE" not in caplog.text


# --- quiet means quiet ------------------------------------------------------------------

QUIET = ("pipeline: x\nlakehouse: {root: LAKE}\nsources:\n  - name: a\n    connector: postgres\n"
         "    connection: {database: d, user: u}\n    options: {skipped.operations: none}\n"
         "silver:\n  - {table: t, source: a.public.t}\n  - {table: u, source: a.public.u}\n")


def test_quiet_silver_prints_nothing_not_even_sail_logs(tmp_path):
    path = write(tmp_path, QUIET.replace("LAKE", str(tmp_path / "lake")))
    proc = run_cli("-q", "silver", "-c", path, "--once", timeout=180)
    assert proc.returncode == 0, proc.stderr
    assert (proc.stdout, proc.stderr) == ("", "")


def test_silver_reports_each_table_once(tmp_path):
    path = write(tmp_path, QUIET.replace("LAKE", str(tmp_path / "lake")))
    proc = run_cli("silver", "-c", path, "--once", timeout=180)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert [line.split(":")[0] for line in lines] == ["silver t", "silver u"], proc.stdout
    assert " INFO " not in proc.stderr


def test_an_option_from_a_variable_is_not_echoed(tmp_path):
    text = BASE + "    options: {snapshot.mode: \"${MODE_ISSUE14}\"}\n"
    err = problems_of(tmp_path, text, env={"MODE_ISSUE14": "hunter2-secret"})
    assert "sources[0].options.snapshot.mode" in err and "MODE_ISSUE14" in err
    assert "hunter2-secret" not in err


# --- topic.prefix: validate and silver agree ----------------------------------------------

def test_silver_finds_the_source_of_a_topic_by_its_topic_prefix(tmp_path, monkeypatch):
    import jobs.silver_job
    import pipelines.silver_commands
    from pipelines.silver_runner import SilverRunResult

    seen: list[dict[str, str]] = []

    def fake_run_silver(**kwargs):
        seen.append(dict(kwargs["sources"]))
        return SilverRunResult()

    monkeypatch.setattr(pipelines.silver_commands, "run_silver", fake_run_silver)
    monkeypatch.setattr(jobs.silver_job, "run_silver", fake_run_silver)
    text = (BASE + "    options: {topic.prefix: shop, skipped.operations: none}\n"
            "silver:\n  - {table: t, source: shop.public.t}\n")
    path = write(tmp_path, text)
    assert main(["silver", "-c", path, "--once"]) == 0
    assert jobs.silver_job.main(["-c", path, "--once"]) == 0
    assert seen == [{"a": "shop"}, {"a": "shop"}]


@pytest.mark.parametrize("connector", ["postgres", "mysql"])
def test_commands_that_never_connect_do_not_need_connection_keys(tmp_path, connector):
    text = (f"pipeline: x\nlakehouse: {{root: ./lake}}\nsources:\n  - name: a\n    connector: {connector}\n"
            "    connection: {host: h, database: d}\n    options: {database.server.id: 5501}\n")
    if connector == "postgres":
        text = text.replace("    options: {database.server.id: 5501}\n", "")
    path = write(tmp_path, text)
    load_validated(path, env={}, secrets=False)
    assert "connection.user: is required" in problems_of(tmp_path, text)
