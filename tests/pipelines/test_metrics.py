"""``capture --metrics-port``: scrape /metrics and /health during real captures of PostgreSQL and
MariaDB and check the numbers against what the test did to the source."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path

import psycopg
import pymysql
import pytest
from prometheus_client.parser import text_string_to_metric_families

from pipelines.cli import main
from pipelines.metrics import CaptureMetrics, exported_names, serving
from tests.support.mariadb_pipeline import mariadb_pipeline_text
from tests.support.pipeline_yaml import pipeline_text

pytestmark = [pytest.mark.integration]

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _scrape(port: int) -> tuple[Samples, set[str]]:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
        text = r.read().decode()
    samples: Samples = {}
    families = set()
    for family in text_string_to_metric_families(text):
        families.add(family.name)
        for s in family.samples:
            samples[(s.name, frozenset(s.labels.items()))] = s.value
    return samples, families


def _value(samples: Samples, metric: str, **labels: str) -> float | None:
    found = [v for (n, ls), v in samples.items() if n == metric and set(labels.items()) <= set(ls)]
    assert len(found) <= 1, (metric, labels, found)
    return found[0] if found else None


def _health(port: int) -> tuple[int, dict]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=5) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def _wait(port: int, proc: subprocess.Popen[bytes], err: Path, check: Callable[[Samples], bool],
          timeout: float = 90) -> Samples:
    deadline = time.monotonic() + timeout
    samples: Samples = {}
    while time.monotonic() < deadline:
        assert proc.poll() is None, f"capture ended:\n{err.read_text()[-3000:]}"
        try:
            samples, _ = _scrape(port)
        except OSError:
            samples = {}
        if samples and check(samples):
            return samples
        time.sleep(0.2)
    raise AssertionError(f"metrics never matched; last scrape: {samples}\n{err.read_text()[-3000:]}")


def _start(config: Path, port: int, tmp_path: Path) -> tuple[subprocess.Popen[bytes], Path]:
    err = tmp_path / "capture.err"
    with (tmp_path / "capture.out").open("wb") as out, err.open("wb") as e:
        proc = subprocess.Popen([sys.executable, "-m", "pipelines.cli", "capture", "-c", str(config),
                                 "--metrics-port", str(port)], stdout=out, stderr=e)
    return proc, err


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _status_state(config: Path, capsys: pytest.CaptureFixture[str]) -> str:
    capsys.readouterr()
    assert main(["status", "-c", str(config), "--json"]) == 0
    return str(json.loads(capsys.readouterr().out)["sources"][0]["state"])


def _check_capture(config: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], plugin: str, source: str,
                   table: str, snapshot_rows: int, change: Callable[[], tuple[tuple[int, int, int], int]], *,
                   clean_stop: bool = True) -> None:
    port = _free_port()
    proc, err = _start(config, port, tmp_path)
    try:
        streaming = {"context": "streaming", "plugin": plugin, "name": source}
        snap = {"context": "snapshot", "plugin": plugin, "name": source}
        samples = _wait(port, proc, err, lambda s: _value(s, "debezium_metrics_SnapshotCompleted", **snap) == 1
                        and _value(s, "debezium_metrics_Connected", **streaming) == 1)
        assert _value(samples, "debezium_metrics_TotalTableCount", **snap) == 1
        assert _value(samples, "debezium_metrics_RemainingTableCount", **snap) == 0
        assert _value(samples, "debezium_metrics_RowsScanned", **snap, table=table) == snapshot_rows
        assert _value(samples, "debezium_metrics_TotalNumberOfEventsSeen", **snap) == snapshot_rows
        assert _value(samples, "debezium_metrics_SnapshotRunning", **snap) == 0
        assert _value(samples, "debezium_metrics_SnapshotDurationInSeconds", **snap) > 0
        code, body = _health(port)
        assert code == 200 and body["status"] == "up" and body["sources"][source]["connected"]
        deadline = time.monotonic() + 20  # the status file is rewritten every few seconds
        while _status_state(config, capsys) != "streaming":
            assert time.monotonic() < deadline, "status never said streaming"
            time.sleep(0.5)

        events, transactions = change()
        samples = _wait(port, proc, err, lambda s: _value(
            s, "debezium_metrics_NumberOfCommittedTransactions", **streaming) == transactions)
        assert _value(samples, "debezium_metrics_TotalNumberOfEventsSeen", **streaming) == sum(events)
        for metric, n in zip(("Create", "Update", "Delete"), events, strict=True):
            assert _value(samples, f"debezium_metrics_TotalNumberOf{metric}EventsSeen", **streaming) == n
        behind = _value(samples, "debezium_metrics_MilliSecondsBehindSource", **streaming)
        assert behind is not None and 0 <= behind < 60_000
        assert _value(samples, "cdc_lakehouse_bronze_records_committed", plugin=plugin, name=source) >= \
            snapshot_rows + sum(events)
        assert _value(samples, "cdc_lakehouse_up", plugin=plugin, name=source) == 1
        positions = [dict(ls) for (n, ls), _ in samples.items() if n == "debezium_metrics_SourceEventPosition"]
        assert len(positions) == 1 and positions[0]["position"]
        _, families = _scrape(port)
        assert families <= exported_names()
    finally:
        if clean_stop:
            _stop(proc)
        else:
            proc.kill()
            proc.wait()
    if clean_stop:
        assert proc.returncode == 0, err.read_text()[-3000:]  # SIGINT stops cleanly
        assert _status_state(config, capsys) == "stopped"


@pytest.mark.postgres
def test_metrics_of_a_postgres_capture(pg_db, tmp_path, capsys):
    with psycopg.connect(pg_db, autocommit=True) as conn:
        conn.execute("CREATE TABLE items (id int PRIMARY KEY, name text)")
        conn.execute("INSERT INTO items SELECT g, 'item ' || g FROM generate_series(1, 40) g")
    config = tmp_path / "pipeline.yaml"
    config.write_text(pipeline_text(str(tmp_path / "lake"), pg_db, capture={"commit_interval_ms": 200}))

    def change() -> tuple[tuple[int, int, int], int]:
        with psycopg.connect(pg_db, autocommit=True) as conn:
            for i in range(41, 44):
                conn.execute("INSERT INTO items VALUES (%s, 'x')", (i,))
            with conn.transaction():
                conn.execute("INSERT INTO items SELECT g, 'y' FROM generate_series(44, 47) g")
            conn.execute("UPDATE items SET name = 'z' WHERE id = 1")
        return (3 + 4, 1, 0), 5  # (creates, updates, deletes), transactions

    _check_capture(config, tmp_path, capsys, "postgres", "pg", "public.items", 40, change)


@pytest.mark.mariadb
def test_metrics_of_a_mariadb_capture(mariadb_db, tmp_path, capsys):
    conn = pymysql.connect(**mariadb_db, autocommit=True)
    try:
        with conn.cursor() as cur:
            cur.execute("CREATE TABLE t (id int PRIMARY KEY, name varchar(20))")
            cur.executemany("INSERT INTO t VALUES (%s, 'a')", [(i,) for i in range(1, 26)])
        config = tmp_path / "pipeline.yaml"
        config.write_text(mariadb_pipeline_text(str(tmp_path / "lake"), mariadb_db, server_id=7302,
                                                capture={"commit_interval_ms": 200}))

        def change() -> tuple[tuple[int, int, int], int]:
            with conn.cursor() as cur:
                for i in range(26, 28):
                    cur.execute("INSERT INTO t VALUES (%s, 'b')", (i,))
                conn.begin()
                cur.execute("UPDATE t SET name = 'c' WHERE id <= 3")
                cur.execute("DELETE FROM t WHERE id = 4")
                conn.commit()
            return (2, 3, 1), 3

        # killed: an idle MariaDB stream does not see SIGINT until its next binlog event
        _check_capture(config, tmp_path, capsys, "mariadb", "my", f"{mariadb_db['database']}.t", 25, change,
                       clean_stop=False)
    finally:
        conn.close()


@pytest.mark.postgres
def test_run_serves_the_capture_metrics(pg_db, tmp_path):
    with psycopg.connect(pg_db, autocommit=True) as conn:
        conn.execute("CREATE TABLE items (id int PRIMARY KEY, name text)")
        conn.execute("INSERT INTO items SELECT g, 'item ' || g FROM generate_series(1, 12) g")
    config = tmp_path / "pipeline.yaml"
    config.write_text(pipeline_text(str(tmp_path / "lake"), pg_db, capture={"commit_interval_ms": 200})
                      + "silver:\n  - {table: items, source: pg.public.items}\n")
    port = _free_port()
    err = tmp_path / "run.err"
    with (tmp_path / "run.out").open("wb") as out, err.open("wb") as e:
        proc = subprocess.Popen([sys.executable, "-m", "pipelines.cli", "run", "-c", str(config),
                                 "--metrics-port", str(port)], stdout=out, stderr=e)
    try:
        labels = {"plugin": "postgres", "name": "pg"}
        samples = _wait(port, proc, err, lambda s: _value(
            s, "debezium_metrics_Connected", context="streaming", **labels) == 1, timeout=180)
        assert _value(samples, "debezium_metrics_SnapshotCompleted", context="snapshot", **labels) == 1
        assert _value(samples, "debezium_metrics_RowsScanned", context="snapshot", table="public.items", **labels) == 12
        assert _health(port)[0] == 200
    finally:
        # killed, not interrupted: how `run` stops on SIGINT is not what this test is about
        proc.kill()
        proc.wait()


def test_a_metrics_port_in_use_is_an_error_before_capturing(tmp_path, capsys):
    config = tmp_path / "pipeline.yaml"
    config.write_text(pipeline_text(str(tmp_path / "lake"), "host=127.0.0.1 port=1 dbname=d user=u"))
    with socket.socket() as taken:
        taken.bind(("", 0))
        taken.listen()
        port = taken.getsockname()[1]
        assert main(["capture", "-c", str(config), "--until-idle", "--metrics-port", str(port)]) == 1
    assert f"cannot serve metrics on port {port}" in capsys.readouterr().err
    assert not (tmp_path / "lake").exists()


def test_the_metrics_host_limits_where_the_server_listens(capsys):
    lines: list[str] = []
    with serving(CaptureMetrics(), 0, lines.append):  # port 0: no server at all
        pass
    assert lines == []
    with serving(CaptureMetrics(), _free_port(), lines.append, "127.0.0.1") as server:
        assert server is not None
        assert server._server.server_address[0] == "127.0.0.1"
        assert lines == [f"metrics: http://127.0.0.1:{server.port}/metrics, health: "
                         f"http://127.0.0.1:{server.port}/health"]
        assert _health(server.port)[0] == 503  # no source has reported yet: down, but served


def test_a_metrics_host_that_cannot_be_bound_is_an_error_before_capturing(tmp_path, capsys):
    config = tmp_path / "pipeline.yaml"
    config.write_text(pipeline_text(str(tmp_path / "lake"), "host=127.0.0.1 port=1 dbname=d user=u"))
    assert main(["capture", "-c", str(config), "--until-idle", "--metrics-port", str(_free_port()),
                 "--metrics-host", "192.0.2.1"]) == 1  # TEST-NET-1: never an address of this machine
    assert "cannot serve metrics on 192.0.2.1:" in capsys.readouterr().err
    assert not (tmp_path / "lake").exists()
