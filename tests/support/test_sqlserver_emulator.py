"""The SQL Server CDC emulator (tests/support/sqlserver_emulator) does what SQL Server's CDC
does, read back with psycopg (not through the connector's gateway): the change-table rows of a
known workload, their order, the LSN functions, the capture agent's idempotence, and SQL
Server's error texts."""

from __future__ import annotations

from collections.abc import Iterator
from decimal import Decimal

import psycopg
import pytest

from cdc_sources.sqlserver import catalogue
from pipelines.local_postgres import LocalPostgres
from tests.support.sqlserver_emulator import SqlServerEmulator, to_postgres
from tests.support.sqlserver_emulator.agent import AgentError, parse_change
from tests.support.sqlserver_emulator.databases import dbname, more_databases

_CDC_COLUMNS = ('"__$start_lsn", "__$seqval", "__$operation", "__$update_mask", "__$command_id"')


@pytest.fixture
def emulator(pg_db: str) -> Iterator[SqlServerEmulator]:
    emu = SqlServerEmulator.install(pg_db)
    emu.execute("CREATE TABLE dbo.customers (id int PRIMARY KEY, name varchar(40), score numeric(8, 2))")
    yield emu


def _rows(emu: SqlServerEmulator, query: str, *params: object) -> list[tuple[object, ...]]:
    with psycopg.connect(emu.dsn) as conn:
        return conn.execute(query, params or None).fetchall()  # type: ignore[arg-type]


def test_the_agent_writes_sql_servers_change_rows_in_commit_order(emulator: SqlServerEmulator) -> None:
    emulator.execute("INSERT INTO dbo.customers VALUES (0, 'before cdc', 1)")
    emulator.enable_db()
    emulator.enable_table("dbo", "customers")
    emulator.execute("INSERT INTO dbo.customers VALUES (1, 'ann', 1.5), (2, 'o''brien', NULL)")
    # two interleaved transactions: the one that commits first comes first
    with psycopg.connect(emulator.dsn) as first, psycopg.connect(emulator.dsn) as second:
        first.execute("UPDATE dbo.customers SET name = 'ANN' WHERE id = 1")
        second.execute("DELETE FROM dbo.customers WHERE id = 0")
        second.commit()
        first.execute("UPDATE dbo.customers SET id = 3 WHERE id = 2")
        first.commit()
    agent = emulator.agent()
    assert agent.sync() == 3
    assert agent.sync() == 0  # nothing new: idempotent

    rows = _rows(emulator, f'SELECT {_CDC_COLUMNS}, id, name, score FROM cdc."dbo_customers_CT" '
                           'ORDER BY "__$start_lsn", "__$seqval", "__$operation"')
    assert [(r[2], r[4], r[5], r[6], r[7]) for r in rows] == [
        (2, 1, 1, "ann", Decimal("1.50")), (2, 2, 2, "o'brien", None),
        (1, 1, 0, "before cdc", Decimal("1.00")),
        (3, 1, 1, "ann", Decimal("1.50")), (4, 1, 1, "ANN", Decimal("1.50")),
        (3, 2, 2, "o'brien", None), (4, 2, 3, "o'brien", None)]
    commits = [bytes(r[0]) for r in rows]
    assert commits[0] == commits[1] < commits[2] < commits[3] == commits[6]
    for row in rows:
        assert len(row[0]) == len(row[1]) == 10 and bytes(row[1]) < bytes(row[0])  # change before its commit
    assert bytes(rows[3][1]) == bytes(rows[4][1]) < bytes(rows[5][1])  # 3 and 4 share one seqval
    assert [bytes(r[3]) for r in rows] == [b"\x07", b"\x07", b"\x07", b"\x02", b"\x02", b"\x01", b"\x01"]

    mapping = _rows(emulator, "SELECT start_lsn, tran_end_time, tran_id FROM cdc.lsn_time_mapping ORDER BY start_lsn")
    assert [bytes(m[0]) for m in mapping] == sorted(set(commits))
    assert all(len(bytes(m[2])) == 10 and bytes(m[2]) != bytes(10) for m in mapping)
    (max_lsn, min_lsn, next_lsn, when), = _rows(
        emulator, "SELECT sys.fn_cdc_get_max_lsn(), sys.fn_cdc_get_min_lsn('dbo_customers'), "
                  "sys.fn_cdc_increment_lsn(sys.fn_cdc_get_max_lsn()), sys.fn_cdc_map_lsn_to_time(%s)", commits[2])
    assert bytes(max_lsn) == commits[-1] and bytes(min_lsn) < commits[0]  # type: ignore[arg-type]
    assert int.from_bytes(bytes(next_lsn), "big") == int.from_bytes(commits[-1], "big") + 1  # type: ignore[arg-type]
    assert when == mapping[1][1]


def test_the_change_function_bounds_and_filters_as_sql_server(emulator: SqlServerEmulator) -> None:
    emulator.enable_db()
    emulator.enable_table("dbo", "customers")
    emulator.execute("INSERT INTO dbo.customers VALUES (1, 'a', 1)")
    emulator.execute("UPDATE dbo.customers SET name = 'b' WHERE id = 1")
    emulator.agent().sync()
    function = 'cdc."fn_cdc_get_all_changes_dbo_customers"'
    low, high = "sys.fn_cdc_get_min_lsn('dbo_customers')", "sys.fn_cdc_get_max_lsn()"
    assert [r[2] for r in _rows(emulator, f"SELECT * FROM {function}({low}, {high}, 'all update old')")] == [2, 3, 4]
    assert [r[2] for r in _rows(emulator, f"SELECT * FROM {function}({low}, {high}, N'all')")] == [2, 4]
    # columns as SQL Server's function returns them: no __$end_lsn, no __$command_id
    with psycopg.connect(emulator.dsn) as conn:
        cursor = conn.execute(f"SELECT * FROM {function}({low}, {high}, 'all')")
        assert [d.name for d in cursor.description or ()] == [
            "__$start_lsn", "__$seqval", "__$operation", "__$update_mask", "id", "name", "score"]
    for bad in (f"{function}('\\x00000000000000000000'::bytea, {high}, 'all')",  # below the minimum LSN
                f"{function}({low}, sys.fn_cdc_increment_lsn({high}), 'all')",  # above the maximum
                f"{function}({low}, {high}, 'net')"):
        with pytest.raises(psycopg.errors.RaiseException,
                           match=r"An insufficient number of arguments were supplied for the procedure or "
                                 r"function cdc\.fn_cdc_get_all_changes_ \.\.\. \."):
            _rows(emulator, f"SELECT * FROM {bad}")


def test_enabling_fails_with_sql_servers_error_texts(emulator: SqlServerEmulator) -> None:
    with pytest.raises(psycopg.errors.RaiseException, match=r"The database 't_test_enabling\w*' is not enabled for "
                                                            r"Change Data Capture\."):
        emulator.enable_table("dbo", "customers")
    emulator.enable_db()
    emulator.enable_db()  # enabling twice is no error
    with pytest.raises(psycopg.errors.RaiseException, match=r"Source table 'dbo\.nothing' does not exist"):
        emulator.enable_table("dbo", "nothing")
    emulator.enable_table("dbo", "customers")
    with pytest.raises(psycopg.errors.RaiseException,
                       match=r"the capture instance name 'dbo_customers' already exists in the current database"):
        emulator.enable_table("dbo", "customers")
    emulator.enable_table("dbo", "customers", "dbo_customers_v2")
    with pytest.raises(psycopg.errors.RaiseException, match=r"at most two capture instances"):
        emulator.enable_table("dbo", "customers", "dbo_customers_v3")
    emulator.disable_table("dbo", "customers", "dbo_customers")
    assert _rows(emulator, "SELECT capture_instance FROM sys.sp_cdc_help_change_data_capture()") == [
        ("dbo_customers_v2",)]
    assert _rows(emulator, "SELECT to_regclass('cdc.\"dbo_customers_CT\"')") == [(None,)]


def test_a_capture_instance_holds_only_its_columns_and_changes_after_its_start(emulator: SqlServerEmulator) -> None:
    emulator.enable_db()
    emulator.enable_table("dbo", "customers")
    emulator.execute("INSERT INTO dbo.customers VALUES (1, 'a', 1)")
    emulator.execute("ALTER TABLE dbo.customers ADD COLUMN email varchar(80)")
    emulator.enable_table("dbo", "customers", "dbo_customers_v2")
    emulator.execute("INSERT INTO dbo.customers VALUES (2, 'b', 2, 'b@x')")
    emulator.agent().sync()
    assert _rows(emulator, 'SELECT id, name FROM cdc."dbo_customers_CT" ORDER BY id') == [(1, "a"), (2, "b")]
    assert _rows(emulator, 'SELECT id, email FROM cdc."dbo_customers_v2_CT"') == [(2, "b@x")]
    assert _rows(emulator, "SELECT column_name FROM cdc.captured_columns AS c JOIN cdc.change_tables AS t "
                           "USING (object_id) WHERE capture_instance = 'dbo_customers_v2' ORDER BY column_ordinal") == [
        ("id",), ("name",), ("score",), ("email",)]


def test_each_database_has_its_own_lsn_sequence(emulator: SqlServerEmulator, pg_server: LocalPostgres) -> None:
    """Two databases of one instance each count LSNs from their own start (as each SQL Server
    database has its own log): the second, enabled after the first's changes, numbers its change
    below them, and has its own sys.fn_cdc_get_max_lsn."""
    emulator.enable_db()
    emulator.enable_table("dbo", "customers")
    emulator.execute("INSERT INTO dbo.customers SELECT g, 'a', 1 FROM generate_series(1, 50) AS g")
    emulator.execute("UPDATE dbo.customers SET score = 2")
    emulator.agent().sync()
    with more_databases(pg_server, (f"{dbname(emulator.dsn)[:40]}_2",)) as (other,):
        other.execute("CREATE TABLE dbo.customers (id int PRIMARY KEY, name varchar(40), score numeric(8, 2))")
        other.enable_db()
        other.enable_table("dbo", "customers")
        other.execute("INSERT INTO dbo.customers VALUES (1, 'b', 1)")
        other.agent().sync()
        first = [bytes(r[0]) for r in _rows(emulator, "SELECT start_lsn FROM cdc.lsn_time_mapping ORDER BY 1")]
        second = [bytes(r[0]) for r in _rows(other, "SELECT start_lsn FROM cdc.lsn_time_mapping ORDER BY 1")]
        assert len(first) == 2 and len(second) == 1
        assert second[0] < first[-1]  # committed later, numbered lower: not one sequence
        assert bytes(_rows(other, "SELECT sys.fn_cdc_get_max_lsn()")[0][0]) == second[0]  # type: ignore[arg-type]
        assert all(lsn[:4] == b"\x00\x00\x00\x20" for lsn in (*first, *second))


def test_truncate_of_a_captured_table_stops_the_agent(emulator: SqlServerEmulator) -> None:
    emulator.enable_db()
    emulator.enable_table("dbo", "customers")
    emulator.execute("TRUNCATE dbo.customers")
    with pytest.raises(AgentError, match=r"Cannot truncate table 'dbo\.customers'"):
        emulator.agent().sync()


def test_decoded_lines_with_quotes_spaces_and_toast() -> None:
    change = parse_change("""table "my schema"."T""x": UPDATE: old-key: "a b"[integer]:1 s[text]:'it''s' """
                          """big[text]:'x' new-tuple: "a b"[integer]:1 s[text]:null big[text]:unchanged-toast-datum""")
    assert (change.schema, change.table, change.kind) == ("my schema", 'T"x', "UPDATE")
    assert change.old == {"a b": "1", "s": "it's", "big": "x"}
    assert change.new == {"a b": "1", "s": None, "big": "x"}
    with pytest.raises(AgentError, match="without its before image"):
        parse_change("table dbo.t: UPDATE: id[integer]:1")


def test_every_catalogue_statement_has_an_emulator_form() -> None:
    statements = [*(s.sql for s in catalogue.CATALOGUE.values()), catalogue.use_database("inv").sql,
                  catalogue.changes_function("dbo_c").sql, catalogue.changes_direct("dbo_c", ["id", "a]b"]).sql,
                  catalogue.set_lock_timeout(-1).sql, catalogue.set_lock_timeout(0).sql,
                  catalogue.set_lock_timeout(250).sql, catalogue.lock_table("dbo", "c").sql,
                  catalogue.snapshot_select("dbo", "c", ["id"]).sql]
    translated = [to_postgres(s) for s in statements]
    parsed = {t: to_postgres(catalogue.parse_default(t).sql) for t in sorted(catalogue.PARSED_TYPES)}
    assert parsed["datetimeoffset"] == "SELECT CAST(? AS TIMESTAMPTZ)"
    assert parsed["datetime2"] == "SELECT CAST(? AS TIMESTAMP)"
    assert "LEFT JOIN sys.default_constraints" in translated[list(catalogue.CATALOGUE).index(
        catalogue.StatementKind.TABLE_COLUMNS)]
    assert translated[-5:] == [
        "SET lock_timeout = 0", "SET lock_timeout = 1", "SET lock_timeout = 250",
        'LOCK TABLE "dbo"."c" IN ACCESS EXCLUSIVE MODE', 'SELECT "id" FROM "dbo"."c"']
    assert translated[-7] == 'SELECT * FROM cdc."fn_cdc_get_all_changes_dbo_c"(?, ?, N\'all update old\')'
    assert '"a]b" FROM "cdc"."dbo_c_CT"' in translated[-6]
    assert translated[1] == "SELECT sys.version()"
    assert "tran_id <> CAST('\\x00' AS BYTEA)" in translated[3]
