"""The SQL Server connector's schema history: a table whose capture was enabled while the
connector was stopped gets one ``CREATE`` schema change event at the next start (as Debezium's
"new to be monitored" table), and no snapshot; a disabled table gets no event. Against the CDC
emulator on a PostgreSQL the tests start, through the real coordinator and bronze writer; the
oracles are the source tables read with psycopg and the workload's own changes."""

from __future__ import annotations

import functools
import multiprocessing
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import psycopg
import pytest
from psycopg.conninfo import conninfo_to_dict

from cdc_sources.spi import HistoryEntry
from cdc_sources.sqlserver.changes import TableId
from cdc_sources.sqlserver.history import parse_table_id, recorded_tables
from cdc_sources.sqlserver.lsn import Lsn
from cdc_sources.sqlserver.offset import SnapshotType, SqlServerOffset
from pipelines.capture import run_capture
from pipelines.config import parse_pipeline
from tests.support.bronze_rows import read_table, read_topic, replay
from tests.support.capture_process import TracePlan
from tests.support.sqlserver_emulator import SqlServerEmulator
from tests.support.sqlserver_emulator.capture import emulated, traced_emulated_capture
from tests.support.sqlserver_emulator.pipeline import SOURCE, sqlserver_pipeline_text


@pytest.fixture
def emulator(pg_db: str) -> Iterator[SqlServerEmulator]:
    emu = SqlServerEmulator.install(pg_db)
    emu.execute("CREATE TABLE dbo.customers (id int PRIMARY KEY, name varchar(40) NOT NULL)")
    emu.execute("INSERT INTO dbo.customers SELECT g, 'c' || g FROM generate_series(1, 5) AS g")
    emu.enable_db()
    emu.enable_table("dbo", "customers")
    emu.agent().sync()
    yield emu


def _db(emu: SqlServerEmulator) -> str:
    return str(conninfo_to_dict(emu.dsn)["dbname"])


def _capture(root: str, emu: SqlServerEmulator, **options: str) -> None:
    with emulated():
        run_capture(parse_pipeline(sqlserver_pipeline_text(root, emu.dsn, **options), env={}), until_idle=True)


def _schema_changes(root: str) -> list[tuple[str, str]]:
    return [(v["tableChanges"][0]["type"], v["tableChanges"][0]["id"])
            for v in (orjson.loads(r["value"]) for r in read_topic(root, SOURCE))]


def _history(root: str) -> list[str]:
    return [orjson.loads(r["value"])["tableChanges"][0]["id"]
            for r in read_table(f"{root}/bronze/_cdc/{SOURCE}/history")]


def _orders(emu: SqlServerEmulator) -> dict[Any, dict[str, Any]]:
    with psycopg.connect(emu.dsn) as conn:
        return {r[0]: {"id": r[0], "item": r[1]} for r in conn.execute("SELECT id, item FROM dbo.orders")}


def _enable_orders_while_stopped(emu: SqlServerEmulator) -> None:
    emu.execute("CREATE TABLE dbo.orders (id int PRIMARY KEY, item varchar(20))")
    emu.execute("INSERT INTO dbo.orders VALUES (1, 'before')")  # before its capture: in no change table
    emu.enable_table("dbo", "orders")
    emu.execute("INSERT INTO dbo.orders VALUES (2, 'two'), (3, 'three')")
    emu.execute("UPDATE dbo.orders SET item = 'TWO' WHERE id = 2")
    emu.execute("DELETE FROM dbo.orders WHERE id = 3")
    emu.agent().sync()


def test_a_table_enabled_while_stopped_gets_one_create_at_the_next_start(emulator: SqlServerEmulator,
                                                                        tmp_path: Path) -> None:
    root = str(tmp_path / "lake")
    db = _db(emulator)
    customers, orders = f'"{db}"."dbo"."customers"', f'"{db}"."dbo"."orders"'
    _capture(root, emulator)
    assert _schema_changes(root) == [("CREATE", customers)]
    assert _history(root) == [customers]

    _enable_orders_while_stopped(emulator)
    _capture(root, emulator)
    assert _schema_changes(root) == [("CREATE", customers), ("CREATE", orders)]
    create = orjson.loads(read_topic(root, SOURCE)[1]["value"])
    assert create["source"]["snapshot"] == "false" and create["source"]["table"] == "orders"
    assert [c["name"] for c in create["tableChanges"][0]["table"]["columns"]] == ["id", "item"]
    rows = read_topic(root, f"{SOURCE}.{db}.dbo.orders")
    # not snapshotted (initial mode, snapshot completed): the changes from its capture's start only
    assert [(r["op"], orjson.loads(r["key"])["id"]) for r in rows] == [
        ("c", 2), ("c", 3), ("u", 2), ("d", 3), (None, 3)]
    assert replay(rows) == {k: v for k, v in _orders(emulator).items() if k != 1}

    _capture(root, emulator)  # a start at the same offset: nothing again
    emulator.execute("INSERT INTO dbo.orders VALUES (4, 'four')")
    emulator.agent().sync()
    _capture(root, emulator)
    _capture(root, emulator)
    assert _schema_changes(root) == [("CREATE", customers), ("CREATE", orders)]
    assert _history(root) == [customers, orders]
    assert [r["op"] for r in read_topic(root, f"{SOURCE}.{db}.dbo.orders")][5:] == ["c"]


def test_a_second_table_enabled_at_the_same_offset_gets_its_own_create(emulator: SqlServerEmulator,
                                                                      tmp_path: Path) -> None:
    """Nothing streamed between two starts (the stored offset unchanged): the table enabled
    before the second start still gets its CREATE; the first one's is not repeated."""
    root = str(tmp_path / "lake")
    db = _db(emulator)
    _capture(root, emulator)
    emulator.execute("CREATE TABLE dbo.orders (id int PRIMARY KEY, item varchar(20))")
    emulator.enable_table("dbo", "orders")
    _capture(root, emulator)
    emulator.execute("CREATE TABLE dbo.aaa (id int PRIMARY KEY)")
    emulator.enable_table("dbo", "aaa")
    _capture(root, emulator)
    assert [t for _, t in _schema_changes(root)] == [f'"{db}"."dbo"."customers"', f'"{db}"."dbo"."orders"',
                                                     f'"{db}"."dbo"."aaa"']


def test_a_disabled_table_gets_no_event_and_no_create_when_enabled_again(emulator: SqlServerEmulator,
                                                                         tmp_path: Path) -> None:
    """Debezium emits nothing when a table's capture is disabled, and keeps the table in its
    history: enabling it again brings no CREATE; its changes stream again."""
    root = str(tmp_path / "lake")
    db = _db(emulator)
    topic = f"{SOURCE}.{db}.dbo.customers"
    _capture(root, emulator)
    emulator.disable_table("dbo", "customers", "dbo_customers")
    emulator.execute("INSERT INTO dbo.customers VALUES (6, 'uncaptured')")
    _capture(root, emulator)
    emulator.enable_table("dbo", "customers")
    emulator.execute("INSERT INTO dbo.customers VALUES (7, 'seven')")
    emulator.agent().sync()
    _capture(root, emulator)
    assert _schema_changes(root) == [("CREATE", f'"{db}"."dbo"."customers"')]
    assert [(r["op"], orjson.loads(r["key"])["id"]) for r in read_topic(root, topic) if r["op"] != "r"] == [("c", 7)]


def test_an_offset_stored_without_a_history_records_the_tables_without_events(emulator: SqlServerEmulator,
                                                                              tmp_path: Path) -> None:
    """Bronze written before the connector kept a history (simulated: its history removed): the
    next start records the captured tables without a CREATE; a table enabled after that gets one."""
    root = str(tmp_path / "lake")
    db = _db(emulator)
    _capture(root, emulator)
    shutil.rmtree(f"{root}/bronze/_cdc/{SOURCE}/history")
    _capture(root, emulator)
    assert _schema_changes(root) == [("CREATE", f'"{db}"."dbo"."customers"')]
    assert _history(root) == [f'"{db}"."dbo"."customers"']
    _enable_orders_while_stopped(emulator)
    _capture(root, emulator)
    assert [t for _, t in _schema_changes(root)] == [f'"{db}"."dbo"."customers"', f'"{db}"."dbo"."orders"']


def _enable_again(dsn: str) -> None:
    """Run in the child capture as its stream starts: the table's capture enabled again, a row."""
    emu = SqlServerEmulator(dsn)
    emu.enable_table("dbo", "customers")
    emu.execute("INSERT INTO dbo.customers VALUES (8, 'eight')")
    emu.agent().sync()


def test_a_recorded_table_enabled_again_while_streaming_gets_no_create(emulator: SqlServerEmulator,
                                                                       tmp_path: Path) -> None:
    """The capture instance found while streaming belongs to a table the history records (its
    capture was disabled while the connector was stopped): no CREATE, as in Debezium."""
    root = str(tmp_path / "lake")
    db = _db(emulator)
    text = sqlserver_pipeline_text(root, emulator.dsn)
    _capture(root, emulator)
    emulator.disable_table("dbo", "customers", "dbo_customers")
    _capture(root, emulator)
    plan = TracePlan(str(tmp_path / "trace"), ack="cdc_sources.sqlserver.session:SqlServerCaptureSession.acknowledge",
                     stream="cdc_sources.sqlserver.session:SqlServerCaptureSession.stream",
                     before_stream=functools.partial(_enable_again, emulator.dsn))
    child = multiprocessing.get_context("forkserver").Process(target=traced_emulated_capture, args=(text, plan))
    child.start()
    child.join(120)
    assert child.exitcode == 0
    assert _schema_changes(root) == [("CREATE", f'"{db}"."dbo"."customers"')]
    rows = read_topic(root, f"{SOURCE}.{db}.dbo.customers")
    assert [(r["op"], orjson.loads(r["key"])["id"]) for r in rows if r["op"] != "r"] == [("c", 8)]


@pytest.mark.parametrize("table", ["history", SOURCE])
def test_the_create_is_in_bronze_once_after_a_crash_between_its_commits(emulator: SqlServerEmulator,
                                                                       tmp_path: Path, table: str) -> None:
    """The restart's batch is committed topic by topic: a capture killed right after the
    history's commit (the event's not made) or right after the schema change topic's (the
    history's not made) is followed by a run that makes the missing one: one CREATE, one
    history record."""
    root = str(tmp_path / "lake")
    db = _db(emulator)
    text = sqlserver_pipeline_text(root, emulator.dsn)
    _capture(root, emulator)
    _enable_orders_while_stopped(emulator)
    saved = tmp_path / "saved"
    shutil.copytree(root, saved)
    ctx = multiprocessing.get_context("forkserver")
    stream = "cdc_sources.sqlserver.session:SqlServerCaptureSession.stream"
    ack = "cdc_sources.sqlserver.session:SqlServerCaptureSession.acknowledge"

    def traced(trace: Path, after_write: int) -> int | None:
        child = ctx.Process(target=traced_emulated_capture,
                            args=(text, TracePlan(str(trace), ack=ack, stream=stream, after_write=after_write)))
        child.start()
        child.join(120)
        return child.exitcode

    assert traced(tmp_path / "dry", 0) == 0  # where the table's commit comes among the run's writes
    writes = [line.split() for line in (tmp_path / "dry").read_text().splitlines() if line.startswith("write")]
    target = f"_cdc/{SOURCE}/history" if table == "history" else SOURCE
    (n,) = [int(w[1]) for w in writes if w[2:] == [target]]
    shutil.rmtree(root)
    shutil.copytree(saved, root)
    assert traced(tmp_path / "killed", n) == -9
    held = _history(root) if table == "history" else [t for _, t in _schema_changes(root)]
    assert held[-1] == f'"{db}"."dbo"."orders"'  # the commit the kill came after was made

    _capture(root, emulator)
    _capture(root, emulator)
    assert [t for _, t in _schema_changes(root)] == [f'"{db}"."dbo"."customers"', f'"{db}"."dbo"."orders"']
    assert _history(root) == [f'"{db}"."dbo"."customers"', f'"{db}"."dbo"."orders"']
    rows = read_topic(root, f"{SOURCE}.{db}.dbo.orders")
    assert [(r["op"], orjson.loads(r["key"])["id"]) for r in rows] == [
        ("c", 2), ("c", 3), ("u", 2), ("d", 3), (None, 3)]


# -- reading the history back (pure) ---------------------------------------------------------------

def _entry(database: str, table: str, offset: SqlServerOffset, start_index: int | None = None) -> HistoryEntry:
    value: dict[str, Any] = {"databaseName": database, "schemaName": "dbo",
                             "tableChanges": [{"type": "CREATE", "id": f'"{database}"."dbo"."{table}"'}]}
    if start_index is not None:
        value["startIndex"] = start_index
    return HistoryEntry(orjson.dumps(offset.to_map()).decode(), orjson.dumps(value).decode())


def test_recorded_tables_as_of_the_stored_offset() -> None:
    low, high = Lsn(bytes.fromhex("00000020000000100001")), Lsn(bytes.fromhex("00000030000000100001"))
    snapshot = SqlServerOffset(low, snapshot=SnapshotType.INITIAL)
    stored = SqlServerOffset(high, high, 2)
    history = [_entry("inv", "customers", snapshot), _entry("other", "x", snapshot),
               _entry("inv", "streamed", SqlServerOffset(low, low, 1)),
               _entry("inv", "orders", stored, 0), _entry("inv", "aaa", stored, 1),
               _entry("inv", "later", SqlServerOffset(high, high, 3), 0)]
    recorded = recorded_tables(history, "inv", stored)
    assert recorded.recorded
    assert recorded.tables == {TableId("inv", "dbo", "customers"), TableId("inv", "dbo", "streamed")}
    assert dict(recorded.replayed) == {TableId("inv", "dbo", "orders"): 0, TableId("inv", "dbo", "aaa"): 1}
    assert recorded.next_index() == 2
    assert not recorded_tables(history, "none", stored).recorded
    assert recorded_tables(history, "inv", None).tables == frozenset()


def test_parse_table_id() -> None:
    assert parse_table_id('"inv"."dbo"."a.b"') == ("inv", "dbo", "a.b")
    assert parse_table_id('"inv"."dbo"."say ""hi"""') == ("inv", "dbo", 'say "hi"')
    with pytest.raises(ValueError, match="not a quoted table id"):
        parse_table_id("inv.dbo.t")



def test_no_data_writes_the_create_events_once_at_the_first_start(emulator: SqlServerEmulator, tmp_path: Path) -> None:
    """``snapshot.mode: no_data`` without an offset: a CREATE per table (Debezium's schema-only
    snapshot marks it ``snapshot: true``), none at later starts; no row is snapshotted."""
    root = str(tmp_path / "lake")
    db = _db(emulator)
    _capture(root, emulator, **{"snapshot.mode": "no_data"})
    _capture(root, emulator, **{"snapshot.mode": "no_data"})
    values = [orjson.loads(r["value"]) for r in read_topic(root, SOURCE)]
    assert [(v["tableChanges"][0]["id"], v["source"]["snapshot"]) for v in values] == [
        (f'"{db}"."dbo"."customers"', "true")]
    assert _history(root) == [f'"{db}"."dbo"."customers"']
    assert read_topic(root, f"{SOURCE}.{db}.dbo.customers") == []
