"""Issue 14: pipeline files that used to hang, pass validation wrongly or demand unused secrets."""

from __future__ import annotations

import os
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
            "    options: {retriable.restart.connector.wait.ms: 50}\n")
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
            "    options: {retriable.restart.connector.wait.ms: 50, errors.max.retries: 2}\n")
    proc = run_cli("capture", "-c", write(tmp_path, text), "--until-idle", timeout=60)
    assert proc.returncode == 1, proc.stderr
    assert "attempt 2 of 2" in proc.stderr and "attempt 3" not in proc.stderr
    assert "gave up after 2 retries" in proc.stderr


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
