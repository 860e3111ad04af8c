"""The SQL Server connector captures into bronze through the real coordinator and bronze writer:
initial snapshot, then streaming by polling the change tables, offsets committed with the
batches, restart from the offset. Against the CDC emulator on a PostgreSQL the tests start;
the oracle is the source table read with psycopg, and the workload's own changes."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import orjson
import psycopg
import pytest
from psycopg.conninfo import conninfo_to_dict

from cdc_sources.spi import HISTORY_TOPIC, ChangeRecord
from cdc_sources.sqlserver.config import build_sqlserver_config
from cdc_sources.sqlserver.session import SqlServerCaptureSession
from pipelines.capture import run_capture
from pipelines.config import parse_pipeline
from tests.support.bronze_rows import read_offsets, read_topic
from tests.support.sqlserver_emulator import SqlServerEmulator
from tests.support.sqlserver_emulator.capture import emulated
from tests.support.sqlserver_emulator.pipeline import SOURCE, sqlserver_pipeline_text


@pytest.fixture
def emulator(pg_db: str) -> Iterator[SqlServerEmulator]:
    emu = SqlServerEmulator.install(pg_db)
    emu.execute("CREATE TABLE dbo.customers (id int PRIMARY KEY, name varchar(40) NOT NULL, score numeric(8, 2), "
                "active boolean, seen timestamp(3))")
    emu.execute("INSERT INTO dbo.customers SELECT g, 'c' || g, g * 1.25, g % 2 = 0, "
                "timestamp '2024-01-01 00:00:00' + g * interval '1 minute' FROM generate_series(1, 30) AS g")
    emu.enable_db()
    emu.enable_table("dbo", "customers")
    emu.execute("DELETE FROM dbo.customers WHERE id = 30")  # captured before the snapshot: in it, not streamed
    emu.agent().sync()
    yield emu


def _topic(dsn: str) -> str:
    return f"{SOURCE}.{conninfo_to_dict(dsn)['dbname']}.dbo.customers"


def _capture(root: str, emu: SqlServerEmulator, progress: list[str] | None = None, **options: str) -> Any:
    config = parse_pipeline(sqlserver_pipeline_text(root, emu.dsn, **options), env={})
    with emulated():
        return run_capture(config, until_idle=True, progress=None if progress is None else progress.append)[SOURCE]


def _replay(rows: list[dict[str, Any]]) -> dict[int, dict[str, Any]]:
    """The table a consumer rebuilds from the topic: the latest image per key."""
    table: dict[int, dict[str, Any]] = {}
    for row in rows:
        key = orjson.loads(row["key"])["id"]
        if row["value"] is None:
            continue  # tombstone
        value = orjson.loads(row["value"])
        if value["op"] == "d":
            table.pop(key, None)
        else:
            table[key] = value["after"]
    return table


def _source(emu: SqlServerEmulator) -> dict[int, dict[str, Any]]:
    with psycopg.connect(emu.dsn) as conn:
        rows = conn.execute("SELECT id, name, score, active, seen FROM dbo.customers").fetchall()
    epoch = datetime(1970, 1, 1)
    return {r[0]: {"id": r[0], "name": r[1], "score": None if r[2] is None else str(r[2]),
                   "active": r[3], "seen": None if r[4] is None else int((r[4] - epoch).total_seconds() * 1000)}
            for r in rows}


def _stored(root: str) -> dict[str, Any]:
    offset = read_offsets(root, SOURCE)[-1]["offset"]
    return dict(orjson.loads(offset) if isinstance(offset, str) else offset)


def test_snapshot_then_streaming_then_restart(emulator: SqlServerEmulator, tmp_path: Path) -> None:
    root = str(tmp_path / "lake")
    topic = _topic(emulator.dsn)

    progress: list[str] = []
    first = _capture(root, emulator, progress, **{"decimal.handling.mode": "string"})
    assert any("snapshot table 1/1 dbo.customers: done, 29 rows" in line for line in progress), progress
    rows = read_topic(root, topic)
    assert [r["op"] for r in rows] == ["r"] * 29
    read = orjson.loads(rows[5]["value"])
    assert list(read) == ["before", "after", "source", "transaction", "op", "ts_ms", "ts_us", "ts_ns"]
    assert (read["before"], read["transaction"], read["op"], read["after"]["name"]) == (None, None, "r", "c6")
    markers = [orjson.loads(r["value"])["source"]["snapshot"] for r in rows]
    assert markers[0] == "first" and markers[-1] == "last" and set(markers[1:-1]) == {"true"}
    snapshot_lsn = orjson.loads(rows[0]["value"])["source"]["commit_lsn"]
    assert snapshot_lsn is not None
    assert _stored(root) == {"commit_lsn": snapshot_lsn, "change_lsn": "NULL", "event_serial_no": 0}
    assert first.snapshot_rows == 30  # the rows and the table's CREATE schema change event

    agent = emulator.agent()
    emulator.execute("INSERT INTO dbo.customers VALUES (31, 'new', 9.5, true, '2024-02-02 02:02:02.5')")
    emulator.execute("BEGIN; UPDATE dbo.customers SET name = 'renamed', score = NULL WHERE id = 2; "
                     "DELETE FROM dbo.customers WHERE id = 3; COMMIT")
    emulator.execute("UPDATE dbo.customers SET id = 100 WHERE id = 4")
    agent.sync()
    _capture(root, emulator, **{"decimal.handling.mode": "string"})
    rows = read_topic(root, topic)
    streamed = rows[29:]
    assert [(r["op"], orjson.loads(r["key"])["id"]) for r in streamed] == [
        ("c", 31), ("u", 2), ("d", 3), (None, 3), ("d", 4), (None, 4), ("c", 100)]
    update = orjson.loads(streamed[1]["value"])
    assert update["before"]["name"] == "c2" and update["after"] == {
        "id": 2, "name": "renamed", "score": None, "active": True, "seen": 1704067320000}
    source = update["source"]
    assert (source["connector"], source["schema"], source["table"], source["snapshot"]) == (
        "sqlserver", "dbo", "customers", "false")
    assert source["commit_lsn"] == orjson.loads(streamed[2]["value"])["source"]["commit_lsn"]  # one transaction
    assert [orjson.loads(r["value"])["source"]["event_serial_no"] for r in streamed if r["value"]] == [1, 2, 1, 2, 2]

    # a restart with nothing new adds nothing; one more change comes exactly once
    _capture(root, emulator, **{"decimal.handling.mode": "string"})
    assert len(read_topic(root, topic)) == 36
    emulator.execute("UPDATE dbo.customers SET active = NULL WHERE id = 31")
    agent.sync()
    _capture(root, emulator, **{"decimal.handling.mode": "string"})
    rows = read_topic(root, topic)
    assert [r["op"] for r in rows[36:]] == ["u"]

    assert _replay(rows) == _source(emulator)
    stored = _stored(root)
    assert stored["change_lsn"] == orjson.loads(rows[-1]["value"])["source"]["change_lsn"]
    assert stored["event_serial_no"] == 2


def test_a_second_capture_instance_after_a_schema_change(emulator: SqlServerEmulator, tmp_path: Path) -> None:
    """The snapshot reads the table once, through its newest instance; streaming switches to the
    newer instance at its start LSN, so a change is in bronze once, with the new column."""
    root = str(tmp_path / "lake")
    topic = _topic(emulator.dsn)
    emulator.execute("ALTER TABLE dbo.customers ADD COLUMN email varchar(60)")
    emulator.enable_table("dbo", "customers", "dbo_customers_v2")
    emulator.execute("UPDATE dbo.customers SET email = 'one@example.com' WHERE id = 1")
    emulator.agent().sync()
    _capture(root, emulator)
    rows = read_topic(root, topic)
    assert len(rows) == 29 and {r["op"] for r in rows} == {"r"}
    first = next(orjson.loads(r["value"])["after"] for r in rows if orjson.loads(r["key"])["id"] == 1)
    assert first["email"] == "one@example.com"

    emulator.execute("INSERT INTO dbo.customers VALUES (50, 'fifty', 1, true, NULL, 'fifty@example.com')")
    emulator.agent().sync()
    _capture(root, emulator)
    streamed = read_topic(root, topic)[29:]
    assert [(r["op"], orjson.loads(r["value"])["after"]["email"]) for r in streamed] == [("c", "fifty@example.com")]


def test_a_snapshot_taken_before_anything_was_captured(pg_db: str, tmp_path: Path) -> None:
    """No change captured yet: the snapshot's LSN is NULL, and the run after it streams every
    instance from its minimum LSN instead of calling the stored offset unavailable."""
    emu = SqlServerEmulator.install(pg_db)
    emu.execute("CREATE TABLE dbo.customers (id int PRIMARY KEY, name varchar(40) NOT NULL, score numeric(8, 2), "
                "active boolean, seen timestamp(3))")
    emu.execute("INSERT INTO dbo.customers VALUES (1, 'one', 1, true, NULL)")
    emu.enable_db()
    emu.enable_table("dbo", "customers")
    root = str(tmp_path / "lake")
    topic = _topic(pg_db)
    _capture(root, emu)
    assert _stored(root)["commit_lsn"] == "NULL"
    emu.execute("INSERT INTO dbo.customers VALUES (2, 'two', 2, false, NULL)")
    emu.agent().sync()
    _capture(root, emu)
    assert [(r["op"], orjson.loads(r["key"])["id"]) for r in read_topic(root, topic)] == [("r", 1), ("c", 2)]


def test_heartbeats_run_the_action_query_and_carry_the_offset(emulator: SqlServerEmulator, tmp_path: Path) -> None:
    """``heartbeat.interval.ms`` writes heartbeat records (key ``serverName``, value ``ts_ms``,
    position the stored offset) after running ``heartbeat.action.query`` on the source."""
    root = str(tmp_path / "lake")
    emulator.execute("CREATE TABLE dbo.beats (id serial PRIMARY KEY, at timestamp DEFAULT now())")
    options = {"heartbeat.interval.ms": "1", "heartbeat.action.query": "INSERT INTO dbo.beats DEFAULT VALUES"}
    _capture(root, emulator, **options)
    emulator.execute("INSERT INTO dbo.customers VALUES (31, 'new', 9.5, true, NULL)")
    emulator.agent().sync()
    _capture(root, emulator, **options)
    _capture(root, emulator, **options)  # nothing new: a heartbeat at the same offset is written too
    with psycopg.connect(emulator.dsn) as conn:
        beats = conn.execute("SELECT count(*) FROM dbo.beats").fetchone()[0]  # type: ignore[index]
    assert beats >= 3
    rows = read_topic(root, f"__debezium-heartbeat.{SOURCE}")
    assert len(rows) == beats
    assert {r["key"] for r in rows} == {'{"serverName":"ms"}'}
    assert all(set(orjson.loads(r["value"])) == {"ts_ms"} for r in rows)
    # the last heartbeat carries the offset after the streamed insert: the stored one
    assert orjson.loads(rows[-1]["position"]) == _stored(root)
    assert _stored(root)["change_lsn"] != "NULL"


def test_a_capture_instance_created_and_the_old_one_dropped_while_streaming(emulator: SqlServerEmulator) -> None:
    """Debezium's online schema-evolution procedure while the capture runs: a column is added, a
    second capture instance created, the old one disabled. The stream picks the new instance up
    at its start LSN (its schema version first), every change comes once, from the instance
    holding it, and disabling the old instance afterwards is no error."""
    database = str(conninfo_to_dict(emulator.dsn)["dbname"])
    config, problems = build_sqlserver_config(name=SOURCE, connection={"user": "u", "database": database},
                                              options={"poll.interval.ms": "1"}, path="sources[0]")
    assert config is not None, problems
    agent = emulator.agent()
    steps = iter([
        # changes before the new instance (old schema), the schema change, a change after it
        lambda: (emulator.execute("INSERT INTO dbo.customers VALUES (40, 'before', 1, true, NULL)"),
                 emulator.execute("ALTER TABLE dbo.customers ADD COLUMN email varchar(60)"),
                 emulator.enable_table("dbo", "customers", "dbo_customers_v2"),
                 emulator.execute("UPDATE dbo.customers SET email = 'one@example.com' WHERE id = 1"),
                 agent.sync()),
        # the old instance disabled once the new one is in use; one more change
        lambda: (emulator.disable_table("dbo", "customers", "dbo_customers"),
                 emulator.execute("INSERT INTO dbo.customers VALUES (41, 'after', 2, false, NULL, 'a@example.com')"),
                 # a table whose first capture instance appears while streaming: streamed from there
                 emulator.execute("CREATE TABLE dbo.extra (id int PRIMARY KEY)"),
                 emulator.enable_table("dbo", "extra"),
                 emulator.execute("INSERT INTO dbo.extra VALUES (7)"),
                 agent.sync()),
    ])

    def sleep(_seconds: float) -> bool:
        step = next(steps, None)
        if step is None:
            return True
        step()
        return False

    session = SqlServerCaptureSession(config, emulator.gateway(), None, sleep=sleep)
    try:
        snapshot = list(session.snapshot())
        streamed = list(session.stream(until_idle=False))
    finally:
        session.close()
    assert sum(len(i) for i in snapshot if isinstance(i, list)) == 0  # rows come one by one
    history, *snapshot_records = [i for i in snapshot if isinstance(i, ChangeRecord)]
    assert history.topic == HISTORY_TOPIC  # the connector's own record of the table, first
    create = snapshot_records[0]  # the snapshot's CREATE schema change event, before the rows
    assert [r.topic for r in snapshot_records] == [SOURCE] + [f"{SOURCE}.{database}.dbo.customers"] * 29
    create_value = orjson.loads(create.value or "null")
    assert create_value["tableChanges"][0]["type"] == "CREATE" and create_value["source"]["snapshot"] == "true"
    assert create_value["source"]["commit_lsn"] == orjson.loads(snapshot_records[1].value or "null")["source"][
        "commit_lsn"]
    assert [c["name"] for c in create_value["tableChanges"][0]["table"]["columns"]] == [
        "id", "name", "score", "active", "seen"]
    items = [(type(i).__name__, i) for i in streamed]
    versions = [i for kind, i in items if kind == "SchemaVersion"]
    records = [r for i in streamed if isinstance(i, list) for r in i]
    changes = [r for r in records if r.topic not in (SOURCE, HISTORY_TOPIC)]
    alter, create_extra = [r for r in records if r.topic == SOURCE]
    # the table enabled while streaming: its CREATE before its first event
    extra_value = orjson.loads(create_extra.value or "null")
    assert (extra_value["tableChanges"][0]["type"], extra_value["tableChanges"][0]["id"]) == (
        "CREATE", f'"{database}"."dbo"."extra"')
    assert records.index(create_extra) < records.index(changes[-1])
    assert create_extra.order_key < changes[-1].order_key and create_extra.order_key > alter.order_key
    assert [(orjson.loads(r.value)["op"], orjson.loads(r.key)["id"], orjson.loads(r.value)["after"].get("email", "-"))
            for r in changes] == [("c", 40, "-"), ("u", 1, "one@example.com"), ("c", 41, "a@example.com"),
                                  ("c", 7, "-")]
    assert changes[-1].topic == f"{SOURCE}.{database}.dbo.extra"
    # the new instance's schema (with email) reached bronze before its first event
    v2 = next(v for v in versions if "email" in v.value_schema)
    assert "email" in v2.value_schema and "email" not in versions[0].value_schema
    first_v2 = next(n for n, (_, i) in enumerate(items) if isinstance(i, list) and any(r.schema_id == v2.schema_id
                                                                                      for r in i))
    assert items.index(("SchemaVersion", v2)) < first_v2
    assert changes[0].schema_id == versions[0].schema_id and changes[1].schema_id == v2.schema_id
    # Debezium's ALTER schema change event, just before the first event of the new instance
    assert records.index(alter) == records.index(changes[1]) - 1 and alter.order_key < changes[1].order_key
    assert orjson.loads(alter.key or "null") == {"databaseName": database}
    value = orjson.loads(alter.value or "null")
    assert (value["databaseName"], value["schemaName"], value["ddl"]) == (database, "dbo", None)
    assert value["source"]["commit_lsn"] == orjson.loads(changes[1].value or "null")["source"]["commit_lsn"]
    (change,) = value["tableChanges"]
    assert (change["type"], change["id"]) == ("ALTER", f'"{database}"."dbo"."customers"')
    assert change["table"]["primaryKeyColumnNames"] == ["id"]
    assert [(c["name"], c["jdbcType"], c["typeName"], c["length"], c["position"], c["optional"])
            for c in change["table"]["columns"]] == [
        ("id", 4, "int", 10, 1, False), ("name", -9, "nvarchar", 40, 2, False), ("score", 3, "decimal", 8, 3, True),
        ("active", -7, "bit", 1, 4, True), ("seen", 93, "datetime2", 23, 5, True),
        ("email", -9, "nvarchar", 60, 6, True)]


def test_the_switch_into_bronze_once_across_restarts(emulator: SqlServerEmulator, tmp_path: Path) -> None:
    """The switch to a newer capture instance after the snapshot, into bronze through the
    coordinator: one ALTER on the schema change topic, every change once (an update both
    instances hold included), and runs after it add neither the ALTER again nor any event."""
    root = str(tmp_path / "lake")
    topic = _topic(emulator.dsn)
    _capture(root, emulator)
    agent = emulator.agent()
    emulator.execute("UPDATE dbo.customers SET name = 'old schema' WHERE id = 2")
    emulator.execute("ALTER TABLE dbo.customers ADD COLUMN email varchar(60)")
    emulator.enable_table("dbo", "customers", "dbo_customers_v2")
    emulator.execute("BEGIN; UPDATE dbo.customers SET email = 'one@example.com' WHERE id = 1; "
                     "DELETE FROM dbo.customers WHERE id = 3; COMMIT")
    agent.sync()
    _capture(root, emulator)
    _capture(root, emulator)
    emulator.execute("INSERT INTO dbo.customers VALUES (60, 'sixty', 1, true, NULL, 'sixty@example.com')")
    agent.sync()
    _capture(root, emulator)
    _capture(root, emulator)

    streamed = read_topic(root, topic)[29:]
    assert [(r["op"], orjson.loads(r["key"])["id"]) for r in streamed] == [
        ("u", 2), ("u", 1), ("d", 3), (None, 3), ("c", 60)]
    assert "email" not in orjson.loads(streamed[0]["value"])["after"]
    assert orjson.loads(streamed[1]["value"])["after"]["email"] == "one@example.com"
    schema_changes = [orjson.loads(r["value"]) for r in read_topic(root, SOURCE)]
    assert [v["tableChanges"][0]["type"] for v in schema_changes] == ["CREATE", "ALTER"]
    value = schema_changes[1]
    assert value["source"]["commit_lsn"] == orjson.loads(streamed[1]["value"])["source"]["commit_lsn"]


def test_an_old_instance_disabled_before_the_switch_is_read_is_named(emulator: SqlServerEmulator,
                                                                       caplog: pytest.LogCaptureFixture) -> None:
    """The old instance disabled before the stream reached the new one's start: a change only it
    held cannot be read any more; the run goes on with the new instance and says so in the log."""
    database = str(conninfo_to_dict(emulator.dsn)["dbname"])
    config, problems = build_sqlserver_config(name=SOURCE, connection={"user": "u", "database": database},
                                              options={"poll.interval.ms": "1"}, path="sources[0]")
    assert config is not None, problems
    agent = emulator.agent()
    steps = iter([lambda: (emulator.execute("INSERT INTO dbo.customers VALUES (40, 'lost', 1, true, NULL)"),
                           emulator.enable_table("dbo", "customers", "dbo_customers_v2"),
                           agent.sync(),
                           emulator.disable_table("dbo", "customers", "dbo_customers"),
                           emulator.execute("INSERT INTO dbo.customers VALUES (41, 'kept', 1, true, NULL)"),
                           agent.sync())])

    def sleep(_seconds: float) -> bool:
        step = next(steps, None)
        if step is None:
            return True
        step()
        return False

    session = SqlServerCaptureSession(config, emulator.gateway(), None, sleep=sleep)
    try:
        list(session.snapshot())
        with caplog.at_level(logging.WARNING, logger="cdc_sources.sqlserver.session"):
            streamed = list(session.stream(until_idle=False))
    finally:
        session.close()
    changes = [r for i in streamed if isinstance(i, list) for r in i if r.topic not in (SOURCE, HISTORY_TOPIC)]
    assert [orjson.loads(r.key or "null")["id"] for r in changes] == [41]
    (warning,) = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert "dbo_customers was disabled before the stream reached the start LSN" in warning
    assert "dbo_customers_v2" in warning and "take a new snapshot" in warning
