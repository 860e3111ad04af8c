"""The Oracle DDL reader: each statement form against the table it must leave, written by hand."""

from __future__ import annotations

import pytest

from cdc_sources.oracle.converters import OracleColumn, OracleType
from cdc_sources.oracle.ddl import DdlKind, OracleDdlError, apply_ddl, ddl_target
from cdc_sources.oracle.envelope import OracleTable
from cdc_sources.oracle.schema_changes import create_table_ddl, table_change, table_of_change

N = OracleType
ID = OracleColumn("ID", N.NUMBER, 10, 0, False)
NAME = OracleColumn("NAME", N.VARCHAR2, 50, None, True)
T = OracleTable("APP", "T", (ID, NAME), ("ID",))


def _cols(sql: str, table: OracleTable | None = T) -> list[tuple[str, OracleType, int, int | None, bool]]:
    out = apply_ddl(sql, "APP", table)
    assert out.table is not None
    return [(c.name, c.type, c.length, c.scale, c.optional) for c in out.table.columns]


def test_create_table_reads_types_constraints_and_the_key() -> None:
    out = apply_ddl('CREATE TABLE "APP"."T2" (ID NUMBER(10) NOT NULL, "Mixed" varchar2(20 byte) default \'a,b\', '
                    "AMOUNT NUMBER(12,2), N NUMBER, I INTEGER, F FLOAT(63), TS TIMESTAMP(3) WITH TIME ZONE, "
                    "L TIMESTAMP WITH LOCAL TIME ZONE, D DATE, R RAW(16), C CHAR(3), "
                    "DS INTERVAL DAY(3) TO SECOND(2), YM INTERVAL YEAR TO MONTH, "
                    'CONSTRAINT "T2_PK" PRIMARY KEY (ID), CONSTRAINT C1 CHECK (AMOUNT > 0)) TABLESPACE USERS;',
                    "APP", None)
    assert (out.kind, out.owner, out.name) == (DdlKind.CREATE_TABLE, "APP", "T2")
    assert out.table is not None and out.table.key == ("ID",)
    assert [(c.name, c.type, c.length, c.scale, c.optional) for c in out.table.columns] == [
        ("ID", N.NUMBER, 10, 0, False), ("Mixed", N.VARCHAR2, 20, None, True), ("AMOUNT", N.NUMBER, 12, 2, True),
        ("N", N.NUMBER, 0, None, True), ("I", N.NUMBER, 38, 0, True), ("F", N.FLOAT, 63, None, True),
        ("TS", N.TIMESTAMP_TZ, 3, None, True), ("L", N.TIMESTAMP_LTZ, 6, None, True), ("D", N.DATE, 0, None, True),
        ("R", N.RAW, 16, None, True), ("C", N.CHAR, 3, None, True), ("DS", N.INTERVAL_DS, 0, 2, True),
        ("YM", N.INTERVAL_YM, 0, None, True)]


def test_inline_primary_key_and_default_owner() -> None:
    out = apply_ddl("create table t3 (id number(5) primary key, v nvarchar2(10))", "SCOTT", None)
    assert out.table == OracleTable("SCOTT", "T3", (OracleColumn("ID", N.NUMBER, 5, 0, False),
                                                    OracleColumn("V", N.NVARCHAR2, 10, None, True)), ("ID",))


@pytest.mark.parametrize(("sql", "want"), [
    ('ALTER TABLE "APP"."T" ADD "EMAIL" VARCHAR2(100)', [("EMAIL", N.VARCHAR2, 100, None, True)]),
    ("alter table app.t add (email varchar2(100) default 'x' not null, score number(5,2))",
     [("EMAIL", N.VARCHAR2, 100, None, False), ("SCORE", N.NUMBER, 5, 2, True)]),
])
def test_add_columns(sql: str, want: list[tuple[str, OracleType, int, int | None, bool]]) -> None:
    assert _cols(sql) == [("ID", N.NUMBER, 10, 0, False), ("NAME", N.VARCHAR2, 50, None, True), *want]


def test_modify_changes_type_or_nullability_only() -> None:
    assert _cols("ALTER TABLE T MODIFY (NAME VARCHAR2(400) NOT NULL)")[1] == ("NAME", N.VARCHAR2, 400, None, False)
    assert _cols("ALTER TABLE T MODIFY NAME NOT NULL")[1] == ("NAME", N.VARCHAR2, 50, None, False)
    assert _cols("ALTER TABLE T MODIFY ID NUMBER(12)")[0] == ("ID", N.NUMBER, 12, 0, False)


def test_drop_and_rename_columns() -> None:
    wide = OracleTable("APP", "T", (ID, NAME, OracleColumn("X", N.DATE, 0, None, True)), ("ID",))
    assert [c[0] for c in _cols('ALTER TABLE "APP"."T" DROP COLUMN "NAME"', wide)] == ["ID", "X"]
    assert [c[0] for c in _cols("ALTER TABLE T DROP (NAME, X)", wide)] == ["ID"]
    assert [c[0] for c in _cols("ALTER TABLE T SET UNUSED COLUMN X", wide)] == ["ID", "NAME"]
    out = apply_ddl('ALTER TABLE T RENAME COLUMN ID TO "Key"', "APP", T)
    assert out.renamed == (("ID", "Key"),) and out.table is not None and out.table.key == ("Key",)


def test_drop_table_and_statements_that_change_no_column() -> None:
    assert apply_ddl("DROP TABLE APP.T CASCADE CONSTRAINTS PURGE", "X", T).kind is DdlKind.DROP_TABLE
    assert apply_ddl("CREATE INDEX I ON APP.T (NAME)", "APP", T).kind is DdlKind.OTHER
    assert apply_ddl("GRANT SELECT ON APP.T TO U", "APP", T).kind is DdlKind.OTHER
    assert ddl_target("COMMENT ON TABLE APP.T IS 'x'", "APP") is None
    for sql in ("ALTER TABLE T DROP UNUSED COLUMNS", "ALTER TABLE T MODIFY PARTITION P1 COMPRESS",
                "ALTER TABLE T ADD SUPPLEMENTAL LOG DATA (ALL) COLUMNS", "ALTER TABLE T MOVE TABLESPACE X"):
        assert apply_ddl(sql, "APP", T).kind is DdlKind.OTHER, sql


@pytest.mark.parametrize(("sql", "message"), [
    ("ALTER TABLE T ADD (Z NUMBER(10,", "unexpected end of statement"),
    ("ALTER TABLE T DROP COLUMN NOPE", "table APP.T has no column NOPE"),
    ("ALTER TABLE T DROP COLUMN ID", "dropping key column ID"),
    ("ALTER TABLE T ADD NAME DATE", "already has a column NAME"),
    ("ALTER TABLE T ADD G SDO_GEOMETRY", "type SDO_GEOMETRY, which is not supported"),
    ("ALTER TABLE T RENAME TO U", "renaming table APP.T"),
])
def test_unreadable_statements_name_what_is_wrong(sql: str, message: str) -> None:
    with pytest.raises(OracleDdlError, match=message):
        apply_ddl(sql, "APP", T)


def test_an_alter_of_an_unknown_table_is_an_error() -> None:
    with pytest.raises(OracleDdlError, match="does not know"):
        apply_ddl("ALTER TABLE APP.NEW ADD X DATE", "APP", None)


def test_history_form_and_create_table_text_round_trip() -> None:
    table = apply_ddl("CREATE TABLE APP.W (ID NUMBER(10) PRIMARY KEY, A NUMBER(*,2), B TIMESTAMP(9), "
                      "C INTERVAL DAY(2) TO SECOND(3), D NCHAR(4), E BINARY_DOUBLE, F NUMBER)", "APP", None).table
    assert table is not None
    assert table_of_change("APP", "W", table_change("CREATE", "DB", "APP", "W", table)) == table
    assert apply_ddl(create_table_ddl(table), "APP", None).table == table
