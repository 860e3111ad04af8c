"""End to end against a private MariaDB: snapshot, binlog streaming, DDL, restart without duplicates."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import orjson
import pymysql
import pytest
from deltalake import DeltaTable

from bronze.schema import history_path, offsets_path, topic_path
from pipelines.capture import run_capture
from pipelines.config import parse_pipeline

pytestmark = [pytest.mark.integration, pytest.mark.mariadb]


def pipeline(root: str, db: dict[str, Any], *, server_id: int = 5401, **options: str):
    opts = {"database.include.list": db["database"], "database.server.id": str(server_id), **options}
    lines = "".join(f'      {k}: "{v}"\n' for k, v in opts.items())
    text = (f'pipeline: t\nlakehouse: {{root: "{root}"}}\nsources:\n  - name: my\n    connector: mariadb\n'
            f"    connection: {{host: 127.0.0.1, port: {db['port']}, user: root}}\n"
            f"    options:\n{lines}")
    return parse_pipeline(text, env={})


def rows(root: str, topic: str) -> list[dict[str, Any]]:
    return sorted(DeltaTable(topic_path(root, topic)).to_pyarrow_table().to_pylist(), key=lambda r: r["seq"])


def execute(db: dict[str, Any], *statements: str) -> None:
    conn = pymysql.connect(**db, autocommit=True)
    try:
        with conn.cursor() as cur:
            for sql in statements:
                cur.execute(sql)
    finally:
        conn.close()


def values(data: list[dict[str, Any]]) -> list[dict[str, Any] | None]:
    return [orjson.loads(r["value"]) if r["value"] is not None else None for r in data]


def test_snapshot_then_stream_then_resume(mariadb_db, tmp_path):
    root, name = str(tmp_path / "lake"), mariadb_db["database"]
    execute(mariadb_db,
            "CREATE TABLE items (id INT PRIMARY KEY, name VARCHAR(40), price DECIMAL(8,2), at DATETIME(3))",
            "INSERT INTO items VALUES " + ",".join(f"({i}, 'item {i}', {i}.5, '2024-01-02 03:04:05.678')"
                                                   for i in range(1, 51)))
    cfg = pipeline(root, mariadb_db, **{"skipped.operations": "none"})
    first = run_capture(cfg, until_idle=True)["my"]
    assert first.per_topic[f"my.{name}.items"] == 50
    execute(mariadb_db,
            "INSERT INTO items VALUES (51, 'new', 1.25, NULL)",
            "UPDATE items SET name = 'renamed' WHERE id = 1",
            "DELETE FROM items WHERE id = 2",
            "UPDATE items SET id = 100 WHERE id = 3")
    second = run_capture(cfg, until_idle=True)["my"]
    assert second.snapshot_rows == 0
    topic = f"my.{name}.items"
    data = rows(root, topic)
    assert [r["op"] for r in data[50:]] == ["c", "u", "d", None, "d", None, "c"]
    assert [r["seq"] for r in data] == list(range(1, len(data) + 1))
    parsed = values(data)
    snap = [v["source"]["snapshot"] for v in parsed[:50] if v]
    assert snap[0] == "first" and snap[-1] == "last" and set(snap[1:-1]) == {"true"}
    assert parsed[0]["after"] == {"id": 1, "name": "item 1", "price": "AJY=", "at": 1704164645678}
    update = parsed[51]
    assert update["before"]["name"] == "item 1" and update["after"]["name"] == "renamed"
    source = update["source"]
    assert source["connector"] == "mariadb" and source["db"] == name and source["table"] == "items"
    assert source["snapshot"] == "false" and source["gtid"] and source["file"].startswith("mysql-bin.")
    assert source["ts_ms"] % 1000 == 0 and source["server_id"] == 1
    assert orjson.loads(data[50]["key"]) == {"id": 51}
    assert dict(data[54]["headers"])["__debezium.newkey"] == '{"id":100}'
    assert dict(data[56]["headers"])["__debezium.oldkey"] == '{"id":3}'
    third = run_capture(cfg, until_idle=True)["my"]
    assert third.streamed_records == 0
    assert len(rows(root, topic)) == len(data)


def test_ddl_mid_stream_decodes_each_row_with_the_structure_of_its_time(mariadb_db, tmp_path):
    root, name = str(tmp_path / "lake"), mariadb_db["database"]
    execute(mariadb_db, "CREATE TABLE t (id INT PRIMARY KEY, a VARCHAR(10))", "INSERT INTO t VALUES (1, 'x')")
    cfg = pipeline(root, mariadb_db)
    run_capture(cfg, until_idle=True)
    execute(mariadb_db,
            "INSERT INTO t VALUES (2, 'before')",
            "ALTER TABLE t ADD COLUMN b INT NOT NULL DEFAULT 7 AFTER id",
            "INSERT INTO t VALUES (3, 8, 'after')",
            "ALTER TABLE t DROP COLUMN a",
            "INSERT INTO t VALUES (4, 9)")
    run_capture(cfg, until_idle=True)
    # restart from an offset before the DDL must replay the history and decode the same way
    execute(mariadb_db, "ALTER TABLE t CHANGE b c BIGINT", "INSERT INTO t VALUES (5, 10)")
    run_capture(cfg, until_idle=True)
    afters = [v["after"] for v in values(rows(root, f"my.{name}.t")) if v and v["after"]]
    assert afters == [{"id": 1, "a": "x"}, {"id": 2, "a": "before"}, {"id": 3, "b": 8, "a": "after"},
                      {"id": 4, "b": 9}, {"id": 5, "c": 10}]
    changes = [v for v in values(rows(root, "my")) if v]
    ddls = [c["ddl"] for c in changes if c["source"]["snapshot"] == "false"]
    assert ddls == ["ALTER TABLE t ADD COLUMN b INT NOT NULL DEFAULT 7 AFTER id", "ALTER TABLE t DROP COLUMN a",
                    "ALTER TABLE t CHANGE b c BIGINT"]
    # Debezium's snapshot publishes its SET character_set_server statement with databaseName ""
    assert [c["databaseName"] for c in changes if c["ddl"].startswith("SET ")] == [""]
    assert all(c["databaseName"] == name for c in changes if not c["ddl"].startswith("SET "))
    alter = next(c for c in changes if c["ddl"].startswith("ALTER TABLE t ADD"))
    assert [col["name"] for col in alter["tableChanges"][0]["table"]["columns"]] == ["id", "b", "a"]
    history = DeltaTable(history_path(root, "my")).to_pyarrow_table().to_pylist()
    assert any("ADD COLUMN b" in orjson.loads(h["value"])["ddl"] for h in history)


def test_truncate_and_transaction_metadata(mariadb_db, tmp_path):
    root, name = str(tmp_path / "lake"), mariadb_db["database"]
    execute(mariadb_db, "CREATE TABLE a (id INT PRIMARY KEY)", "CREATE TABLE b (id INT PRIMARY KEY)")
    cfg = pipeline(root, mariadb_db, **{"skipped.operations": "none", "provide.transaction.metadata": "true"})
    run_capture(cfg, until_idle=True)
    conn = pymysql.connect(**mariadb_db)
    with conn.cursor() as cur:
        cur.execute("INSERT INTO a VALUES (1), (2)")
        cur.execute("INSERT INTO b VALUES (1)")
    conn.commit()
    conn.close()
    execute(mariadb_db, "TRUNCATE TABLE a")
    run_capture(cfg, until_idle=True)
    a = values(rows(root, f"my.{name}.a"))
    assert [v["op"] for v in a if v] == ["c", "c", "t"]
    tx = a[0]["transaction"]
    assert tx["total_order"] == 1 and tx["data_collection_order"] == 1
    assert a[1]["transaction"]["id"] == tx["id"] == a[0]["source"]["gtid"]
    b = values(rows(root, f"my.{name}.b"))
    assert b[0]["transaction"] == {"id": tx["id"], "total_order": 3, "data_collection_order": 1}
    meta = [v for v in values(rows(root, "my.transaction")) if v]
    assert [m["status"] for m in meta] == ["BEGIN", "END"]
    assert meta[1]["event_count"] == 3
    assert sorted((d["data_collection"], d["event_count"]) for d in meta[1]["data_collections"]) == [
        (f"{name}.a", 2), (f"{name}.b", 1)]
    assert a[2]["source"]["table"] == "a" and rows(root, f"my.{name}.a")[2]["key"] is None


def test_wrong_binlog_format_is_a_clear_error(tmp_path):
    from cdc_sources.spi import CdcError
    from pipelines.local_mariadb import LocalMariaDB

    server = LocalMariaDB(tmp_path / "data", settings={"binlog-format": "MIXED"}).start()
    try:
        execute(server.connect_args(), "CREATE DATABASE d")
        cfg = pipeline(str(tmp_path / "lake"), {**server.connect_args(), "database": "d"})
        with pytest.raises(CdcError) as info:
            run_capture(cfg, until_idle=True)
        assert "binlog_format" in str(info.value) and "ROW" in str(info.value)
    finally:
        server.stop()


def test_purged_binlog_stops_with_a_clear_error_or_resnapshots_when_needed(tmp_path):
    from cdc_sources.spi import CdcError
    from pipelines.local_mariadb import LocalMariaDB

    server = LocalMariaDB(tmp_path / "data").start()
    try:
        db = {**server.connect_args(), "database": "d"}
        execute(server.connect_args(), "CREATE DATABASE d", "CREATE TABLE d.t (id INT PRIMARY KEY)",
                "INSERT INTO d.t VALUES (1)")
        root = str(tmp_path / "lake")
        run_capture(pipeline(root, db), until_idle=True)
        execute(db, "INSERT INTO t VALUES (2)", "FLUSH BINARY LOGS", "INSERT INTO t VALUES (3)")
        conn = pymysql.connect(**server.connect_args(), autocommit=True)
        with conn.cursor() as cur:
            cur.execute("SHOW MASTER STATUS")
            current = cur.fetchone()[0]
            for _ in range(100):  # a binlog dump thread that is still ending keeps its file in use
                cur.execute(f"PURGE BINARY LOGS TO '{current}'")
                cur.execute("SHOW BINARY LOGS")
                if [r[0] for r in cur.fetchall()] == [current]:
                    break
                time.sleep(0.1)
        conn.close()
        with pytest.raises(CdcError) as info:
            run_capture(pipeline(root, db), until_idle=True)
        assert "no longer available" in str(info.value) and "when_needed" in str(info.value)
        again = run_capture(pipeline(root, db, **{"snapshot.mode": "when_needed"}), until_idle=True)["my"]
        assert again.per_topic.get("my.d.t") == 3  # a new snapshot of the three rows
        snap = [v for v in values(rows(root, "my.d.t")) if v and v["op"] == "r"]
        assert sorted(v["after"]["id"] for v in snap) == [1, 1, 2, 3]
    finally:
        server.stop()


def test_wrong_password_is_fatal_and_never_printed(mariadb_server, tmp_path):
    from cdc_sources.spi import CdcError

    execute(mariadb_server.connect_args(), "CREATE USER IF NOT EXISTS 'cdc_pw'@'%' IDENTIFIED BY 'right-secret'")
    text = (f'pipeline: t\nlakehouse: {{root: "{tmp_path}"}}\nsources:\n  - name: my\n    connector: mariadb\n'
            f"    connection: {{host: 127.0.0.1, port: {mariadb_server.port}, user: cdc_pw, password: s3cr3t-wrong}}\n"
            '    options: {database.server.id: "5402"}\n')
    with pytest.raises(CdcError) as info:
        run_capture(parse_pipeline(text, env={}), until_idle=True)
    assert "s3cr3t-wrong" not in str(info.value) and "cdc_pw" in str(info.value)


def test_filters_masks_query_and_heartbeats(mariadb_db, tmp_path):
    root, name = str(tmp_path / "lake"), mariadb_db["database"]
    execute(mariadb_db, "CREATE TABLE kept (id INT PRIMARY KEY, secret VARCHAR(20), dropped INT)",
            "CREATE TABLE skipped (id INT PRIMARY KEY)")
    cfg = pipeline(root, mariadb_db, **{
        "table.include.list": f"{name}.kept", "column.exclude.list": f"{name}.kept.dropped",
        "column.mask.with.5.chars": f"{name}.kept.secret", "include.query": "true",
        "heartbeat.interval.ms": "100"})
    run_capture(cfg, until_idle=True)
    execute(mariadb_db, "INSERT INTO kept VALUES (1, 'hunter2', 9)", "INSERT INTO skipped VALUES (1)")
    run_capture(cfg, until_idle=True)
    kept = [v for v in values(rows(root, f"my.{name}.kept")) if v]
    assert kept[-1]["after"] == {"id": 1, "secret": "*****"}
    assert kept[-1]["source"]["query"] == "INSERT INTO kept VALUES (1, 'hunter2', 9)"
    from deltalake.exceptions import TableNotFoundError

    with pytest.raises(TableNotFoundError):
        DeltaTable(topic_path(root, f"my.{name}.skipped"))
    # heartbeats are emitted while streaming; a caught-up --until-idle run ends before the first
    stop = threading.Event()
    runner = threading.Thread(target=run_capture, args=(cfg,), kwargs={"until_idle": False, "stop": stop})
    runner.start()
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not (Path(topic_path(root, "__debezium-heartbeat.my")) / "_delta_log"
                                                   ).is_dir():
            time.sleep(0.1)
    finally:
        stop.set()
        runner.join(60)
    beats = values(rows(root, "__debezium-heartbeat.my"))
    assert beats and set(beats[0]) == {"ts_ms"}
    assert orjson.loads(rows(root, "__debezium-heartbeat.my")[0]["key"]) == {"serverName": "my"}


@pytest.mark.parametrize("mode", ["no_data", "never"])
def test_no_data_records_the_structure_then_streams_from_now(mariadb_db, tmp_path, mode):
    root, name = str(tmp_path / "lake"), mariadb_db["database"]
    execute(mariadb_db, "CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(10))", "INSERT INTO t VALUES (1, 'old')")
    cfg = pipeline(root, mariadb_db, **{"snapshot.mode": mode})
    first = run_capture(cfg, until_idle=True)["my"]
    assert f"my.{name}.t" not in first.per_topic
    execute(mariadb_db, "INSERT INTO t VALUES (2, 'new')")
    run_capture(cfg, until_idle=True)
    data = [v for v in values(rows(root, f"my.{name}.t")) if v]
    assert [(v["op"], v["after"]) for v in data] == [("c", {"id": 2, "v": "new"})]
    history = DeltaTable(history_path(root, "my")).to_pyarrow_table().to_pylist()
    assert any("CREATE TABLE `t`" in orjson.loads(h["value"])["ddl"] for h in history)
    # no data snapshot is planned, so none is incomplete: silver must not wait for one
    offsets = DeltaTable(offsets_path(root, "my")).to_pyarrow_table(columns=["batch", "snapshot_completed"])
    assert offsets.num_rows > 0 and all(offsets.column("snapshot_completed").to_pylist()), offsets.to_pylist()


@pytest.mark.parametrize("option, value, listed", [
    ("table.include.list", "{db}.nope", "tables in database {db}: {db}.customers, {db}.orders"),
    ("database.include.list", "nope_{db}", "tables in database nope_{db}: none (there is no database nope_{db})"),
])
def test_a_filter_that_matches_no_table_names_the_filter_and_the_tables(mariadb_db, tmp_path, option, value, listed):
    from cdc_sources.spi import CdcError

    name = mariadb_db["database"]
    execute(mariadb_db, "CREATE TABLE customers (id INT PRIMARY KEY)", "CREATE TABLE orders (id INT PRIMARY KEY)")
    value, listed = value.format(db=name), listed.format(db=name)
    text = (f'pipeline: t\nlakehouse: {{root: "{tmp_path}/lake"}}\nsources:\n  - name: my\n'
            f"    connector: mariadb\n    connection: {{host: 127.0.0.1, port: {mariadb_db['port']}, user: root}}\n"
            f'    options: {{{option}: "{value}", database.server.id: "5409", errors.max.retries: "0"}}\n')
    with pytest.raises(CdcError) as info:
        run_capture(parse_pipeline(text, env={}), until_idle=True)
    message = str(info.value)
    assert f"no table matches the filters ({option}: {value})" in message
    assert listed in message


def test_an_idle_source_does_not_commit_its_unchanged_offset_at_every_heartbeat(mariadb_db, tmp_path):
    import os
    import signal
    import subprocess
    import sys

    name = mariadb_db["database"]
    execute(mariadb_db, "CREATE TABLE t (id INT PRIMARY KEY)", "INSERT INTO t VALUES (1)")
    root = tmp_path / "lake"
    path = tmp_path / "pipeline.yaml"
    path.write_text(f'pipeline: t\nlakehouse: {{root: "{root}"}}\nsources:\n  - name: my\n    connector: mariadb\n'
                    f"    connection: {{host: 127.0.0.1, port: {mariadb_db['port']}, user: root}}\n"
                    f'    options: {{database.include.list: {name}, database.server.id: "5410", '
                    f'poll.interval.ms: "200"}}\n')
    offsets_log = root / "bronze" / "_cdc" / "my" / "offsets" / "_delta_log"

    def offsets_commits() -> int:
        return len(list(offsets_log.glob("*.json"))) if offsets_log.is_dir() else 0

    proc = subprocess.Popen([sys.executable, "-m", "pipelines.cli", "-q", "capture", "-c", str(path)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=os.environ.copy())
    try:
        deadline = time.monotonic() + 60
        while offsets_commits() == 0 and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.2)
        assert offsets_commits() > 0, proc.stderr.read() if proc.poll() is not None else "no commit"
        time.sleep(1.5)
        before = offsets_commits()
        time.sleep(3)  # 15 heartbeats at poll.interval.ms 200
        assert offsets_commits() - before <= 1
        execute(mariadb_db, "INSERT INTO t VALUES (2)")  # a change after the quiet time still reaches bronze
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and len(rows(str(root), f"my.{name}.t")) < 2:
            time.sleep(0.2)
        assert [orjson.loads(r["key"])["id"] for r in rows(str(root), f"my.{name}.t")] == [1, 2]
        time.sleep(1)  # idle again: a stop request is still noticed between heartbeats
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=15) == 0, proc.stderr.read()
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.communicate(timeout=60)


def test_until_idle_ends_at_the_binlog_end_without_waiting_for_a_server_heartbeat(mariadb_db, tmp_path):
    """``--until-idle`` ends once everything written before it started is handled: the server's
    heartbeat (every poll.interval.ms while there is nothing to send) is not what ends it, so a
    long poll interval does not hold a scheduled run up, whether there are changes or none."""
    root, name = str(tmp_path / "lake"), mariadb_db["database"]
    execute(mariadb_db, "CREATE TABLE t (id INT PRIMARY KEY)", "INSERT INTO t VALUES (1)")
    cfg = pipeline(root, mariadb_db, **{"poll.interval.ms": "120000"})

    def capture() -> Any:
        results: list[Any] = []
        runner = threading.Thread(target=lambda: results.append(run_capture(cfg, until_idle=True)["my"]),
                                  daemon=True)
        runner.start()
        runner.join(60)  # half the poll interval: a run waiting for a heartbeat is still running
        assert not runner.is_alive(), "capture --until-idle waited for a server heartbeat"
        return results[0]

    assert capture().per_topic[f"my.{name}.t"] == 1
    offsets = DeltaTable(offsets_path(root, "my"))
    version = offsets.version()
    for _ in range(2):  # caught up: ends at once and commits nothing
        idle = capture()
        assert (idle.batches, idle.streamed_records) == (0, 0)
    offsets.update_incremental()
    assert offsets.version() == version
    execute(mariadb_db, "INSERT INTO t VALUES (2)", "INSERT INTO t VALUES (3)")
    assert capture().per_topic == {f"my.{name}.t": 2}
    assert [orjson.loads(r["key"])["id"] for r in rows(root, f"my.{name}.t")] == [1, 2, 3]
    execute(mariadb_db, "INSERT INTO t VALUES (4)")
    assert capture().per_topic == {f"my.{name}.t": 1}


def test_connector_mysql_on_a_mariadb_server_says_connector_mariadb_is_needed(mariadb_db, tmp_path, capsys):
    """A user who writes ``connector: mysql`` for a MariaDB server is told to write ``connector:
    mariadb`` (exit 2, no traceback), before anything is written to bronze."""
    from pipelines.cli import main

    execute(mariadb_db, "CREATE TABLE t (id INT PRIMARY KEY)", "INSERT INTO t VALUES (1)")
    root = tmp_path / "lake"
    text = (f'pipeline: t\nlakehouse: {{root: "{root}"}}\nsources:\n  - name: my\n    connector: mysql\n'
            f"    connection: {{host: 127.0.0.1, port: {mariadb_db['port']}, user: root}}\n"
            f'    options: {{database.include.list: "{mariadb_db["database"]}", database.server.id: "5403"}}\n')
    path = tmp_path / "p.yaml"
    path.write_text(text)
    code = main(["capture", "-c", str(path), "--until-idle"])
    err = capsys.readouterr().err
    assert code == 2, err
    assert "MariaDB" in err and "connector: mariadb" in err and "Traceback" not in err, err
    assert "server UUID" not in err, err
    assert not (root / "bronze" / f"my.{mariadb_db['database']}.t").exists()


def test_the_password_override_variable_is_what_capture_connects_with(mariadb_db, tmp_path, capsys, monkeypatch):
    """``CDC__SOURCES__<NAME>__PASSWORD`` supplies the password of a source whose file has none:
    ``capture`` connects with it (and fails on authentication without it), never printing it."""
    from pipelines.cli import main

    db = mariadb_db["database"]
    execute(mariadb_db, "CREATE TABLE t (id INT PRIMARY KEY)", "INSERT INTO t VALUES (1), (2)",
            "CREATE USER IF NOT EXISTS 'cdc_envpw'@'%' IDENTIFIED BY 'env-s3cret'",
            "GRANT SELECT, RELOAD, SHOW DATABASES, REPLICATION SLAVE, BINLOG MONITOR, LOCK TABLES ON *.* "
            "TO 'cdc_envpw'@'%'")
    root = tmp_path / "lake"
    path = tmp_path / "p.yaml"
    path.write_text(f'pipeline: t\nlakehouse: {{root: "{root}"}}\nsources:\n  - name: my-db\n'
                    f"    connector: mariadb\n    connection: {{host: 127.0.0.1, port: {mariadb_db['port']}, "
                    f"user: cdc_envpw}}\n"
                    f'    options: {{database.include.list: "{db}", database.server.id: "5404"}}\n')
    monkeypatch.delenv("CDC__SOURCES__MY_DB__PASSWORD", raising=False)
    assert main(["capture", "-c", str(path), "--until-idle"]) == 1
    err = capsys.readouterr().err
    assert "cdc_envpw" in err and "Traceback" not in err, err
    monkeypatch.setenv("CDC__SOURCES__MY_DB__PASSWORD", "env-s3cret")
    code = main(["capture", "-c", str(path), "--until-idle"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "env-s3cret" not in out + err
    assert sorted(orjson.loads(r["key"])["id"] for r in rows(str(root), f"my-db.{db}.t")) == [1, 2]
