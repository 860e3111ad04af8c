"""``cdc-lakehouse status`` against a real PostgreSQL and MariaDB: state, position, bronze tables,
transactions, the WAL/binlog the source keeps, the last error and silver lag."""

from __future__ import annotations

import datetime as dt
import json
import re
import time
from pathlib import Path

import psycopg
import pymysql
import pytest

from pipelines.capture_status import CaptureStatus
from pipelines.cli import main
from pipelines.metrics import CaptureState
from tests.support.mariadb_pipeline import mariadb_pipeline_text
from tests.support.pipeline_yaml import dsn_parts, pipeline_text

pytestmark = [pytest.mark.integration]


def _status_json(capsys: pytest.CaptureFixture[str], config: Path, *extra: str) -> dict:
    capsys.readouterr()
    assert main(["status", "-c", str(config), "--json", *extra]) == 0
    return json.loads(capsys.readouterr().out)


def _write_pg_config(tmp_path: Path, dsn: str, **options: str) -> Path:
    # the root is relative: relative to the file's folder, not to the working directory
    config = tmp_path / "conf" / "pipeline.yaml"
    config.parent.mkdir()
    config.write_text(pipeline_text("../lake", dsn, **{"provide.transaction.metadata": "false", **options}))
    return config


def _slot(dsn: str) -> str:
    return "s_" + dsn_parts(dsn)["dbname"][-40:].lower()


@pytest.mark.postgres
def test_status_of_a_postgres_source(pg_db, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path.parent)  # not the config's folder
    config = _write_pg_config(tmp_path, pg_db)
    with psycopg.connect(pg_db, autocommit=True) as conn:
        conn.execute("CREATE TABLE items (id int PRIMARY KEY, name text)")
        conn.execute("INSERT INTO items SELECT g, 'item ' || g FROM generate_series(1, 30) g")
    assert main(["capture", "-c", str(config), "--until-idle"]) == 0
    with psycopg.connect(pg_db, autocommit=True) as conn:
        for i in range(31, 34):  # three transactions
            conn.execute("INSERT INTO items VALUES (%s, 'x')", (i,))
        with conn.transaction():  # one transaction of two changes
            conn.execute("UPDATE items SET name = 'y' WHERE id = 1")
            conn.execute("DELETE FROM items WHERE id = 2")
        changed = conn.execute("SELECT pg_current_wal_lsn()").fetchone()[0]
    assert main(["capture", "-c", str(config), "--until-idle"]) == 0

    status = _status_json(capsys, config)
    lake = tmp_path / "lake"
    assert status["root"] == str(lake)
    (source,) = status["sources"]
    assert source["name"] == "pg" and source["state"] == "stopped" and source["snapshot_completed"]
    with psycopg.connect(pg_db, autocommit=True) as conn:  # PostgreSQL reads it as a pg_lsn, past the changes
        assert conn.execute("SELECT %s::pg_lsn >= %s AND %s::pg_lsn <= pg_current_wal_lsn()",
                            (source["position"], changed, source["position"])).fetchone()[0]
    assert source["transactions"] == 4
    table_dir = lake / "bronze" / "pg.public.items"
    files = list(table_dir.glob("*.parquet"))
    (table,) = [t for t in source["tables"] if t["topic"] == "pg.public.items"]
    assert table["rows"] == 30 + 3 + 1 + 2  # snapshot, inserts, update, delete + its tombstone
    assert table["files"] == len(files)
    assert table["bytes"] == sum(f.stat().st_size for f in files)
    assert source["events"] == sum(t["rows"] for t in source["tables"])
    assert source["last_error"] is None
    age = dt.datetime.now(dt.UTC) - dt.datetime.fromisoformat(source["last_commit_at"])
    assert dt.timedelta(0) <= age < dt.timedelta(minutes=5)
    assert source["source_lag"]["checked"] is False  # no --source-lag: no connection

    text = capsys.readouterr().out
    assert main(["status", "-c", str(config)]) == 0
    text = capsys.readouterr().out
    assert f"lakehouse root: {lake}" in text
    assert "source pg (postgres): stopped, snapshot completed" in text
    assert f"position:      {source['position']}" in text
    assert "pg.public.items" in text and "4 transactions" in text


@pytest.mark.postgres
def test_source_lag_reports_the_wal_the_slot_keeps_and_a_lost_slot(pg_db, tmp_path, capsys):
    config = _write_pg_config(tmp_path, pg_db)
    with psycopg.connect(pg_db, autocommit=True) as conn:
        conn.execute("CREATE TABLE t (id int PRIMARY KEY, pad text)")
    assert main(["capture", "-c", str(config), "--until-idle"]) == 0
    with psycopg.connect(pg_db, autocommit=True) as conn:
        before = conn.execute("SELECT pg_current_wal_lsn()").fetchone()[0]
        conn.execute("INSERT INTO t SELECT g, repeat('x', 1000) FROM generate_series(1, 5000) g")
        written = conn.execute("SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), %s)::bigint", (before,)).fetchone()[0]
    assert written > 1_000_000
    lag = _status_json(capsys, config, "--source-lag")["sources"][0]["source_lag"]
    assert lag["checked"] and lag["retained_bytes"] >= written
    assert lag["risk"] is None  # below the 10 GB default
    lag = _status_json(capsys, config, "--source-lag", "--lag-warn-bytes", "1MB")["sources"][0]["source_lag"]
    assert lag["risk"] == "above 1.0 MB"
    with psycopg.connect(pg_db, autocommit=True) as conn:
        conn.execute("SELECT pg_drop_replication_slot(%s)", (_slot(pg_db),))
    lag = _status_json(capsys, config, "--source-lag")["sources"][0]["source_lag"]
    assert lag["risk"] == "lost" and "does not exist" in lag["detail"]


@pytest.mark.postgres
def test_a_failed_capture_is_failed_with_its_error_and_no_password(pg_db, tmp_path, capsys):
    parts = dsn_parts(pg_db)
    with psycopg.connect(pg_db, autocommit=True) as conn:
        conn.execute("CREATE TABLE t (id int PRIMARY KEY)")
    config = tmp_path / "pipeline.yaml"
    text = pipeline_text(str(tmp_path / "lake"), pg_db, password="s3cret-Pa55", **{"errors.max.retries": "0"})
    config.write_text(text)
    assert main(["capture", "-c", str(config), "--until-idle"]) == 0
    config.write_text(text.replace(f"port: {parts['port']}", "port: 1"))  # nothing listens there
    assert main(["capture", "-c", str(config), "--until-idle"]) == 1
    source = _status_json(capsys, config)["sources"][0]
    assert source["state"] == "failed"
    assert "127.0.0.1:1" in source["last_error"]
    assert "s3cret-Pa55" not in json.dumps(source)
    assert "s3cret-Pa55" not in (tmp_path / "lake" / "bronze" / "_cdc" / "pg" / "status.json").read_text()
    config.write_text(text)
    assert main(["capture", "-c", str(config), "--until-idle"]) == 0
    source = _status_json(capsys, config)["sources"][0]
    assert source["state"] == "stopped" and "127.0.0.1:1" in source["last_error"]  # the last error stays


@pytest.mark.postgres
def test_a_capture_that_never_reached_its_source_writes_nothing(pg_db, tmp_path, capsys):
    config = tmp_path / "pipeline.yaml"
    config.write_text(pipeline_text(str(tmp_path / "lake"), pg_db, **{"errors.max.retries": "0"})
                      .replace(f"port: {dsn_parts(pg_db)['port']}", "port: 1"))
    assert main(["capture", "-c", str(config), "--until-idle"]) == 1
    assert not (tmp_path / "lake").exists()
    assert _status_json(capsys, config)["sources"][0]["state"] == "never run"


def test_a_running_state_whose_heartbeat_stopped_is_stopped():
    now = dt.datetime(2026, 1, 1, 12, 0, tzinfo=dt.UTC)
    status = CaptureStatus("pg", "postgres", CaptureState.STREAMING, 1, "h", now - dt.timedelta(hours=1),
                           now - dt.timedelta(seconds=14), 5.0, True, 0)
    assert status.live_state(now) is CaptureState.STREAMING
    assert status.live_state(now + dt.timedelta(seconds=2)) is CaptureState.STOPPED  # 16 s: 3 heartbeats missed
    failed = CaptureStatus("pg", "postgres", CaptureState.FAILED, 1, "h", now, now - dt.timedelta(days=1), 5.0,
                           False, 0, "boom", now)
    assert failed.live_state(now) is CaptureState.FAILED
    assert CaptureStatus.from_json(failed.to_json()) == failed


@pytest.mark.mariadb
def test_status_of_a_mariadb_source_and_a_purged_binlog(mariadb_db, mariadb_server, tmp_path, capsys):
    config = tmp_path / "pipeline.yaml"
    config.write_text(mariadb_pipeline_text(str(tmp_path / "lake"), mariadb_db, server_id=7301))
    conn = pymysql.connect(**mariadb_db, autocommit=True)
    try:
        with conn.cursor() as cur:
            cur.execute("CREATE TABLE t (id int PRIMARY KEY, pad varchar(2000))")
            cur.execute("INSERT INTO t VALUES (1, 'a'), (2, 'b')")
        assert main(["capture", "-c", str(config), "--until-idle"]) == 0
        with conn.cursor() as cur:
            cur.execute("SHOW MASTER STATUS")
            file, pos = cur.fetchone()[:2]
        source = _status_json(capsys, config)["sources"][0]
        assert source["state"] == "stopped"
        assert source["position"].startswith(f"{file}:{pos}")  # the server's own file:pos
        assert "gtids" in source["position"]
        with conn.cursor() as cur:
            for i in range(3, 13):
                cur.execute("INSERT INTO t VALUES (%s, REPEAT('x', 1500))", (i,))
            cur.execute("SHOW MASTER STATUS")
            end_file, end_pos = cur.fetchone()[:2]
        assert end_file == file
        lag = _status_json(capsys, config, "--source-lag")["sources"][0]["source_lag"]
        assert lag["checked"] and lag["retained_bytes"] == end_pos - pos
        assert lag["server_position"] == f"{end_file}:{end_pos}"
        with conn.cursor() as cur:
            cur.execute("FLUSH BINARY LOGS")
            cur.execute("SHOW MASTER STATUS")
            newest = cur.fetchone()[0]
            deadline = time.monotonic() + 30  # a binlog dump thread that is ending still holds its file
            while True:
                cur.execute(f"PURGE BINARY LOGS TO '{newest}'")
                cur.execute("SHOW BINARY LOGS")
                if file not in [r[0] for r in cur.fetchall()] or time.monotonic() > deadline:
                    break
                time.sleep(0.2)
        lag = _status_json(capsys, config, "--source-lag")["sources"][0]["source_lag"]
        assert lag["risk"] == "lost" and f"binlog {file} was purged" in lag["detail"]
    finally:
        conn.close()


@pytest.mark.postgres
def test_silver_lag_behind_bronze_in_events_and_seconds(pg_db, tmp_path, capsys):
    config = _write_pg_config(tmp_path, pg_db)
    config.write_text(config.read_text() + "silver:\n  - {table: items, source: pg.public.items}\n")
    with psycopg.connect(pg_db, autocommit=True) as conn:
        conn.execute("CREATE TABLE items (id int PRIMARY KEY, name text)")
        conn.execute("INSERT INTO items SELECT g, 'item ' || g FROM generate_series(1, 10) g")
    assert main(["capture", "-c", str(config), "--until-idle"]) == 0
    (lag,) = _status_json(capsys, config)["silver"]
    assert lag == {**lag, "table": "items", "applied_seq": None, "bronze_seq": 10, "events_behind": 10}
    assert main(["silver", "-c", str(config), "--once"]) == 0
    (lag,) = _status_json(capsys, config)["silver"]
    assert lag == {**lag, "applied_seq": 10, "bronze_seq": 10, "events_behind": 0, "seconds_behind": 0}
    with psycopg.connect(pg_db, autocommit=True) as conn:
        conn.execute("INSERT INTO items SELECT g, 'new' FROM generate_series(11, 15) g")
        conn.execute("DELETE FROM items WHERE id = 1")  # a delete and its tombstone: two bronze rows
    assert main(["capture", "-c", str(config), "--until-idle"]) == 0
    time.sleep(1.5)
    (lag,) = _status_json(capsys, config)["silver"]
    assert lag["applied_seq"] == 10 and lag["bronze_seq"] == 17 and lag["events_behind"] == 7
    assert 1.5 <= lag["seconds_behind"] < 120
    assert main(["status", "-c", str(config)]) == 0
    assert re.search(r"items\s+pg\.public\.items\s+10\s+17\s+7\s+\d+s", capsys.readouterr().out)
