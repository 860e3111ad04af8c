"""The gateway runs the catalogue's T-SQL through the real pyodbc driver and types the results.

Against the SQL Server CDC emulator (tests/support/sqlserver_emulator) on a PostgreSQL the
tests start, reached through Debian's PostgreSQL ODBC driver; the expected values are the
workload's own rows and what psycopg reads from the emulator's tables directly."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from decimal import Decimal

import psycopg
import pytest

from cdc_sources.sqlserver.catalogue import Statement, StatementKind
from cdc_sources.sqlserver.changes import ChangeEvent, ChangeStream, EventKind, merge_rows
from cdc_sources.sqlserver.gateway import Gateway, GatewayError, parse_column_list
from cdc_sources.sqlserver.lsn import Lsn
from tests.support.sqlserver_emulator import SqlServerEmulator


@pytest.fixture
def emulator(pg_db: str) -> Iterator[SqlServerEmulator]:
    emu = SqlServerEmulator.install(pg_db)
    emu.execute('CREATE TABLE dbo.customers (id int PRIMARY KEY, "full name" varchar(40) NOT NULL, '
                "score numeric(8, 2), seen timestamp(3))")
    emu.execute("CREATE TABLE dbo.notes (body text)")
    emu.enable_db()
    emu.enable_table("dbo", "customers")
    emu.enable_table("dbo", "notes")
    yield emu


@pytest.fixture
def gateway(emulator: SqlServerEmulator) -> Iterator[Gateway]:
    gw = emulator.gateway()
    try:
        yield gw
    finally:
        gw.connection.close()


def _one(emu: SqlServerEmulator, query: str) -> object:
    with psycopg.connect(emu.dsn) as conn:
        return conn.execute(query).fetchone()[0]  # type: ignore[index]


def test_positions_instances_and_columns(emulator: SqlServerEmulator, gateway: Gateway) -> None:
    assert gateway.max_lsn() == Lsn.NULL  # nothing captured yet
    emulator.execute("INSERT INTO dbo.customers VALUES (1, 'ann', 1.5, '2024-02-29 10:11:12.345')")
    emulator.execute("INSERT INTO dbo.notes VALUES ('n')")
    emulator.agent().sync()

    assert gateway.database_name() == _one(emulator, "SELECT current_database()")
    assert gateway.version().startswith("Microsoft SQL Server")
    gateway.use_database(gateway.database_name())
    with pytest.raises(Exception, match=r"Database 'elsewhere' does not exist"):
        gateway.use_database("elsewhere")
    max_lsn = gateway.max_lsn()
    newest = _one(emulator, "SELECT start_lsn FROM cdc.lsn_time_mapping ORDER BY start_lsn DESC LIMIT 1")
    assert isinstance(newest, bytes) and max_lsn == Lsn.of(newest)
    assert gateway.max_lsn_pair() == (max_lsn, max_lsn)
    assert gateway.increment_lsn(max_lsn) == Lsn((int.from_bytes(max_lsn.binary or b"", "big") + 1).to_bytes(10, "big"))
    assert gateway.lsn_to_time(max_lsn) == _one(emulator, "SELECT max(tran_end_time) FROM cdc.lsn_time_mapping")
    assert gateway.min_lsn("no_such_instance") == Lsn(bytes(10))

    customers, notes = gateway.capture_instances()
    assert (customers.source_schema, customers.source_table, customers.name) == ("dbo", "customers", "dbo_customers")
    assert customers.captured_columns == ("id", "full name", "score", "seen")
    assert customers.index_columns == ("id",) == gateway.key_columns(customers.object_id)
    assert customers.start_lsn == gateway.min_lsn("dbo_customers") < max_lsn
    assert (notes.name, notes.captured_columns, notes.index_columns) == ("dbo_notes", ("body",), ())
    assert gateway.key_columns(notes.object_id) == ()

    columns = gateway.table_columns("dbo", "customers")
    assert [(c.name, c.type_name, c.precision, c.scale, c.nullable, c.position) for c in columns] == [
        ("id", "int", 10, 0, False, 1), ("full name", "nvarchar", 0, 0, False, 2),
        ("score", "decimal", 8, 2, True, 3), ("seen", "datetime2", 26, 3, True, 4)]


def _events(gateway: Gateway, database: str, function: bool) -> list[ChangeEvent]:
    instances = [i.capture_instance(database) for i in gateway.capture_instances()]
    high = gateway.max_lsn()
    stream = ChangeStream(instances)
    # each instance from its own minimum LSN: below it the change function fails (error 313)
    rows = merge_rows({i.name: gateway.changes(i, i.start_lsn, high, function=function) for i in instances})
    return [e for e in stream.events(rows) if isinstance(e, ChangeEvent)]


def test_change_rows_become_the_connectors_events(emulator: SqlServerEmulator, gateway: Gateway) -> None:
    emulator.execute("INSERT INTO dbo.customers VALUES (1, 'ann', 1.5, NULL), (2, 'bob', NULL, NULL)")
    emulator.execute("BEGIN; INSERT INTO dbo.notes VALUES ('hello'); UPDATE dbo.customers SET score = 2 WHERE id = 1; "
                     "COMMIT")
    emulator.execute("UPDATE dbo.customers SET id = 3 WHERE id = 2")
    emulator.execute("DELETE FROM dbo.customers WHERE id = 1")
    emulator.agent().sync()
    database = gateway.database_name()

    direct = _events(gateway, database, function=False)
    through_function = _events(gateway, database, function=True)
    assert [(e.kind, e.instance.name, e.key, e.before, e.after, e.serial) for e in direct] == [
        (EventKind.CREATE, "dbo_customers", (1,), None, (1, "ann", Decimal("1.50"), None), 1),
        (EventKind.CREATE, "dbo_customers", (2,), None, (2, "bob", None, None), 1),
        (EventKind.CREATE, "dbo_notes", None, None, ("hello",), 1),
        (EventKind.UPDATE, "dbo_customers", (1,), (1, "ann", Decimal("1.50"), None),
         (1, "ann", Decimal("2.00"), None), 2),
        (EventKind.DELETE, "dbo_customers", (2,), (2, "bob", None, None), None, 2),
        (EventKind.TOMBSTONE, "dbo_customers", (2,), None, None, 2),
        (EventKind.CREATE, "dbo_customers", (3,), None, (3, "bob", None, None), 2),
        (EventKind.DELETE, "dbo_customers", (1,), (1, "ann", Decimal("2.00"), None), None, 1),
        (EventKind.TOMBSTONE, "dbo_customers", (1,), None, None, 1)]
    assert [(e.kind, e.key, e.before, e.after, e.position.key()) for e in through_function] == [
        (e.kind, e.key, e.before, e.after, e.position.key()) for e in direct]
    # commit LSNs rise with the transactions; the update's note came first in its transaction
    commits = [e.position.commit for e in direct]
    assert commits == sorted(commits) and commits[2] == commits[3] and direct[2].position < direct[3].position


def test_the_snapshot_reads_one_point_in_time_under_its_lock(emulator: SqlServerEmulator, gateway: Gateway) -> None:
    emulator.execute("INSERT INTO dbo.customers SELECT g, 'c' || g, g, NULL FROM generate_series(1, 50) AS g")
    gateway.begin_snapshot("snapshot")
    gateway.set_lock_timeout(-1)
    gateway.lock_table("dbo", "customers")
    rows = list(gateway.snapshot_rows("dbo", "customers", ["id", "full name"], batch=7))  # the snapshot starts here
    assert sorted(rows) == [(g, f"c{g}") for g in range(1, 51)]
    # the isolation level went through the ODBC attribute (PostgreSQL's snapshot level is REPEATABLE READ)
    assert gateway.connection.cursor().execute("SHOW transaction_isolation").fetchone()[0] == "repeatable read"
    with psycopg.connect(emulator.dsn, autocommit=True) as other:
        other.execute("SET lock_timeout = 200")
        with pytest.raises(psycopg.errors.LockNotAvailable):
            other.execute("INSERT INTO dbo.customers VALUES (99, 'blocked', 0, NULL)")
        other.execute("INSERT INTO dbo.notes VALUES ('after the snapshot began')")
    assert list(gateway.snapshot_rows("dbo", "notes", ["body"])) == []  # the transaction's snapshot is older
    gateway.end_snapshot()
    assert list(gateway.snapshot_rows("dbo", "notes", ["body"])) == [("after the snapshot began",)]


def test_only_catalogue_statements_with_their_parameters_are_sent(gateway: Gateway) -> None:
    with pytest.raises(GatewayError, match="not the catalogue's MAX_LSN statement"):
        gateway._rows(Statement(StatementKind.MAX_LSN, "DROP TABLE dbo.customers"))
    with pytest.raises(GatewayError, match="MIN_LSN takes 1 parameter"):
        gateway._rows(Statement(StatementKind.MIN_LSN, "SELECT sys.fn_cdc_get_min_lsn(?)", 1))
    with pytest.raises(GatewayError, match="has no isolation level"):
        gateway.begin_snapshot("chaos")


def test_column_lists_of_sp_cdc_help_change_data_capture() -> None:
    assert parse_column_list("[id], [full name], [a]]b], plain") == ("id", "full name", "a]b", "plain")
    assert parse_column_list(None) == () == parse_column_list("")
    with pytest.raises(GatewayError, match="not a column list"):
        parse_column_list("[open")


def test_column_defaults_as_sql_server_keeps_them(emulator: SqlServerEmulator, gateway: Gateway) -> None:
    emulator.execute("CREATE TABLE dbo.defaults (id int PRIMARY KEY, qty int DEFAULT 0, neg bigint DEFAULT -3, "
                     "price numeric(9, 2) DEFAULT 1.5, flag boolean DEFAULT true, "
                     "name varchar(20) DEFAULT 'it''s', raw bytea DEFAULT '\\x0102', born date DEFAULT '2019-02-03', "
                     "at timestamp(3) DEFAULT now(), plain int)")
    columns = {c.name: c.default for c in gateway.table_columns("dbo", "defaults")}
    assert columns == {"id": None, "qty": "((0))", "neg": "((-3))", "price": "((1.5))", "flag": "((1))",
                       "name": "('it''s')", "raw": "(0x0102)", "born": "('2019-02-03')", "at": "(getdate())",
                       "plain": None}
    assert gateway.parse_default("date", "2019-02-03") == dt.date(2019, 2, 3)
    assert gateway.parse_default("datetime2", "2019-01-01 00:00:00.123456") == dt.datetime(2019, 1, 1, 0, 0, 0, 123456)
    assert gateway.parse_default("time", "12:34:56") == dt.time(12, 34, 56)
    with pytest.raises(Exception, match="invalid input syntax"):
        gateway.parse_default("date", "etdate(")
