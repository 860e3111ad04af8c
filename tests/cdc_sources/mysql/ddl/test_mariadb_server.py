"""The schema model against a real MariaDB 10.11 (the ``mariadb_db`` fixture).

* Every corpus case flagged ``server`` is run on the server and applied to a `SchemaModel`; the
  model must agree with ``information_schema`` on column names and order, nullability, base data
  type, lengths, character sets, the primary key and the unique keys. `SERVER_DIVERGENCES` lists
  what Debezium records differently from the server (and we with it), with the reason.
* The snapshot path: each table's ``SHOW CREATE TABLE`` text (what a snapshot feeds the parser)
  is parsed by the model and, when a JDK is there, by Debezium's parser: they must agree (except
  for the cases listed in ``test_ddl_conformance.DIFFERENCES``, whose MariaDB syntax Debezium's
  MySQL grammar rejects), and the model must again agree with ``information_schema``.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from cdc_sources.mysql.ddl import SchemaModel
from cdc_sources.mysql.ddl.types import CHARSET_TYPES
from cdc_sources.mysql.model import TableDef, TableId
from tests.cdc_sources.mysql.ddl.corpus import (
    SERVER_CHARSET_STEP,
    Case,
    Step,
    debezium_libs,
    differences,
    load_corpus,
    run_ours,
    run_probe,
)
from tests.cdc_sources.mysql.ddl.test_ddl_conformance import DIFFERENCES

pytestmark = [pytest.mark.mariadb, pytest.mark.integration]

SERVER_CASES = [c for c in load_corpus() if "server" in c.flags]

SERVER_DIVERGENCES: dict[tuple[str, str, str, str], str] = {
    ("string_types", "strings", "v", "charset"): "CHAR(2) ASCII is latin1 on the server; Debezium ignores ASCII",
    ("string_types", "strings", "w", "charset"): "CHAR(2) UNICODE is ucs2 on the server; Debezium ignores UNICODE",
    ("alter_pk_changes", "p1", "c", "nullable"): (
        "MODIFY c INT keeps a primary key column NOT NULL on the server; Debezium makes it optional"),
    ("more_string_types", "st", "d", "type"): "CHAR(5) CHARACTER SET binary is BINARY(5) on the server",
    ("more_string_types", "st", "d", "charset"): "CHAR(5) CHARACTER SET binary is BINARY(5) on the server",
    ("more_string_types", "st", "h", "charset"): (
        "COLLATE 'utf8mb4_bin' (quoted): Debezium cuts the charset from the text before '_', quote included"),
    ("real_types", "reals", "c", "type"): "FLOAT(30) is a DOUBLE on the server; Debezium keeps FLOAT",
    ("unique_promotion", "k6", "id", "nullable"): "an AUTO_INCREMENT column is NOT NULL on the server, not in Debezium",
}
"""(case, table, column, property) where the model follows Debezium rather than the server."""

_BASE_TYPES = {
    "INTEGER": "int", "INT1": "tinyint", "INT2": "smallint", "INT3": "mediumint", "MIDDLEINT": "mediumint",
    "INT4": "int", "INT8": "bigint", "BOOL": "tinyint", "BOOLEAN": "tinyint", "DEC": "decimal", "FIXED": "decimal",
    "NUMERIC": "decimal", "REAL": "double", "DOUBLE PRECISION": "double", "FLOAT8": "double", "FLOAT4": "float",
    "CHARACTER": "char", "CHARACTER VARYING": "varchar", "VARCHARACTER": "varchar", "NCHAR": "char",
    "NATIONAL CHAR": "char", "NATIONAL CHARACTER": "char", "NVARCHAR": "varchar", "NATIONAL VARCHAR": "varchar",
    "NCHAR VARCHAR": "varchar", "NATIONAL CHAR VARYING": "varchar", "NCHAR VARYING": "varchar",
    "NATIONAL CHARACTER VARYING": "varchar", "LONG": "mediumtext", "LONG VARCHAR": "mediumtext",
    "LONG CHAR VARYING": "mediumtext", "LONG VARBINARY": "mediumblob", "JSON": "longtext", "SERIAL": "bigint",
    "BIGINT UNSIGNED": "bigint",
}
_CHARSET_ALIASES = {"utf8": "utf8mb3"}


@dataclass(frozen=True)
class ServerColumn:
    """One row of ``information_schema.COLUMNS``."""

    name: str
    nullable: bool
    data_type: str
    char_length: int | None
    precision: int | None
    scale: int | None
    datetime_precision: int | None
    charset: str | None


def _base_type(type_name: str) -> str:
    words = type_name.split()
    while len(words) > 1 and words[-1] in ("UNSIGNED", "SIGNED", "ZEROFILL", "BINARY"):
        words.pop()
    name = " ".join(words)
    return _BASE_TYPES.get(name, name.lower())


def _connect(args: dict[str, object]) -> Any:
    import pymysql

    return pymysql.connect(**args, autocommit=True)  # type: ignore[call-overload]


def _server_tables(conn: Any, database: str) -> dict[str, tuple[list[ServerColumn], list[str], list[list[str]]]]:
    """Per table: its columns, primary key and unique keys, from information_schema."""
    out: dict[str, tuple[list[ServerColumn], list[str], list[list[str]]]] = {}
    with conn.cursor() as cur:
        cur.execute(
            "SELECT TABLE_NAME, COLUMN_NAME, IS_NULLABLE, DATA_TYPE, CHARACTER_MAXIMUM_LENGTH, NUMERIC_PRECISION, "
            "NUMERIC_SCALE, DATETIME_PRECISION, CHARACTER_SET_NAME FROM information_schema.COLUMNS "
            "WHERE TABLE_SCHEMA = %s ORDER BY TABLE_NAME, ORDINAL_POSITION", (database,))
        for row in cur.fetchall():
            out.setdefault(row[0], ([], [], []))[0].append(
                ServerColumn(row[1], row[2] == "YES", row[3], row[4], row[5], row[6], row[7], row[8]))
        cur.execute(
            "SELECT TABLE_NAME, INDEX_NAME, NON_UNIQUE, COLUMN_NAME FROM information_schema.STATISTICS "
            "WHERE TABLE_SCHEMA = %s ORDER BY TABLE_NAME, INDEX_NAME, SEQ_IN_INDEX", (database,))
        uniques: dict[tuple[str, str], list[str | None]] = {}
        for table, index, non_unique, column in cur.fetchall():
            if index == "PRIMARY":
                out[table][1].append(column)
            elif not non_unique:
                uniques.setdefault((table, index), []).append(column)
        for (table, _), columns in uniques.items():
            if all(c is not None for c in columns):
                out[table][2].append([c for c in columns if c is not None])
    return out


def _compare(case: str, table: TableDef, server: tuple[list[ServerColumn], list[str], list[list[str]]]) -> list[str]:
    columns, primary, uniques = server
    found: list[str] = []
    names = [c.name for c in table.columns]
    if names != [c.name for c in columns]:
        return [f"{table.id.table}: columns {names} != server {[c.name for c in columns]}"]
    for ours, theirs in zip(table.columns, columns, strict=True):
        where = (case, table.id.table, ours.name)
        checks: list[tuple[str, object, object]] = [
            ("nullable", ours.optional, theirs.nullable),
            ("type", _base_type(ours.type_name), theirs.data_type),
        ]
        if ours.jdbc_type in CHARSET_TYPES:
            charset = _CHARSET_ALIASES.get(ours.charset or "", ours.charset)
            checks.append(("charset", charset, theirs.charset))
        if ours.length is not None and theirs.data_type in ("char", "varchar", "binary", "varbinary"):
            checks.append(("length", ours.length, theirs.char_length))
        if theirs.data_type == "decimal":
            checks.append(("precision", (ours.length, ours.scale), (theirs.precision, theirs.scale)))
        if ours.length is not None and theirs.data_type in ("datetime", "timestamp", "time"):
            checks.append(("fsp", ours.length, theirs.datetime_precision))
        for prop, mine, server_value in checks:
            if mine != server_value and (*where, prop) not in SERVER_DIVERGENCES:
                found.append(f"{table.id.table}.{ours.name} {prop}: model {mine!r} != server {server_value!r}")
    if primary and list(table.primary_key) != primary:
        found.append(f"{table.id.table}: primary key {list(table.primary_key)} != server {primary}")
    if sorted(list(u) for u in table.unique_keys) != sorted(uniques):
        found.append(f"{table.id.table}: unique keys {[list(u) for u in table.unique_keys]} != server {uniques}")
    return found


def _run_on_server(case: Case, args: dict[str, object]) -> tuple[SchemaModel, Any]:
    database = str(args["database"])
    model = SchemaModel()
    conn = _connect(args)
    for step in case.steps:
        assert "inv." not in step.ddl, f"{case.name}: a server case must not qualify names"
        model.apply(step.ddl, database=None if step.db is None else database)
        if step.ddl != SERVER_CHARSET_STEP:
            with conn.cursor() as cur:
                cur.execute(step.ddl)
    return model, conn


@pytest.mark.parametrize("case", SERVER_CASES, ids=[c.name for c in SERVER_CASES])
def test_model_matches_information_schema(case: Case, mariadb_db: dict[str, object]) -> None:
    model, conn = _run_on_server(case, mariadb_db)
    try:
        server = _server_tables(conn, str(mariadb_db["database"]))
    finally:
        conn.close()
    database = str(mariadb_db["database"])
    assert sorted(t.id.table for t in model.tables()) == sorted(server)
    found = [d for name in server for d in _compare(case.name, _table(model, database, name), server[name])]
    assert not found, "\n".join(found)


def _table(model: SchemaModel, database: str, name: str) -> TableDef:
    table = model.table(TableId(database, name))
    assert table is not None, name
    return table


@pytest.fixture
def show_create(mariadb_db: dict[str, object]) -> Iterator[tuple[str, list[tuple[str, str, str]]]]:
    """Every server case run on the server; yields the database and (case, table, SHOW CREATE
    TABLE text) for every table the cases leave."""
    database = str(mariadb_db["database"])
    texts: list[tuple[str, str, str]] = []
    conn = _connect(mariadb_db)
    try:
        with conn.cursor() as cur:
            cur.execute("SET SESSION foreign_key_checks = 0")
        for case in SERVER_CASES:
            with conn.cursor() as cur:
                for step in case.steps[1:]:
                    cur.execute(step.ddl)
                cur.execute("SHOW TABLES")
                tables = sorted(row[0] for row in cur.fetchall())
                for table in tables:
                    cur.execute(f"SHOW CREATE TABLE `{table}`")
                    texts.append((case.name, table, cur.fetchone()[1]))
                for table in tables:
                    cur.execute(f"DROP TABLE `{table}`")
        yield database, texts
    finally:
        conn.close()


def test_show_create_table_round_trip(show_create: tuple[str, list[tuple[str, str, str]]],
                                      mariadb_db: dict[str, object]) -> None:
    """The snapshot path: SHOW CREATE TABLE texts give the same model as Debezium's parser builds,
    and one that agrees with the server."""
    database, texts = show_create
    cases = [Case(f"{case}.{table}", "show create", frozenset(),
                  [Step(None, SERVER_CHARSET_STEP), Step(database, text)]) for case, table, text in texts]
    assert len(cases) >= 20
    comparable = [c for c, (name, _, _) in zip(cases, texts, strict=True) if name not in DIFFERENCES]
    _, answers = run_probe(debezium_libs(), comparable)
    for case in comparable:
        found = differences(answers[case.name], run_ours(case))
        assert not found, f"{case.name}:\n" + "\n".join(found[:20])
    conn = _connect(mariadb_db)
    try:
        with conn.cursor() as cur:
            cur.execute("SET SESSION foreign_key_checks = 0")
        for case, (name, table, text) in zip(cases, texts, strict=True):
            with conn.cursor() as cur:
                cur.execute(text)
            model = SchemaModel(server_charset="utf8mb4")
            model.apply(text, database=database)
            found = _compare(name, _table(model, database, table), _server_tables(conn, database)[table])
            assert not found, f"{case.name}:\n" + "\n".join(found)
            with conn.cursor() as cur:
                cur.execute(f"DROP TABLE `{table}`")
    finally:
        conn.close()
