"""Both value paths against a real MariaDB 10.11, and against Debezium reading the same server.

A table with every type gets edge values; they are read back (a) as the snapshot reads them
(pymysql with `SNAPSHOT_CONVERSIONS`, ``time_zone='+00:00'``) and (b) from the binlog with
python-mysql-replication, and rendered with our converters. The two renderings must agree
(except where Debezium's own paths differ, see `PATH_DIFFERENCES`), and with the probe they must
equal what Debezium renders when it reads the same server: its JDBC snapshot (Connector/J and
Debezium's field reader) and its binlog client with Debezium's row deserializers.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pymysql
import pytest

from cdc_sources.mysql.converters import (
    SNAPSHOT_CONVERSIONS,
    ColumnConverter,
    MySqlConverterSettings,
    converter_for,
    restore_empty_sets,
)
from tests.cdc_sources.mysql.converters.dbz import column_def, comparable, render, run_probe

pytestmark = [pytest.mark.mariadb, pytest.mark.integration, pytest.mark.conformance]

COLUMNS: list[tuple[str, str]] = [
    ("id", "INT NOT NULL PRIMARY KEY"),
    ("ti", "TINYINT"), ("tiu", "TINYINT UNSIGNED"), ("bo", "BOOLEAN"), ("si", "SMALLINT"),
    ("siu", "SMALLINT UNSIGNED"), ("mi", "MEDIUMINT"), ("miu", "MEDIUMINT UNSIGNED"), ("i", "INT"),
    ("iu", "INT UNSIGNED"), ("bi", "BIGINT"), ("biu", "BIGINT UNSIGNED"),
    ("f", "FLOAT"), ("fmd", "FLOAT(7,3)"), ("d", "DOUBLE"),
    ("de", "DECIMAL(12,4)"), ("de0", "DECIMAL(20,0) NOT NULL DEFAULT 0"), ("debig", "DECIMAL(65,30)"),
    ("vc", "VARCHAR(40)"), ("ch", "CHAR(4)"), ("txt", "TEXT"), ("l1", "VARCHAR(20) CHARACTER SET latin1"),
    ("bn", "BINARY(4)"), ("vb", "VARBINARY(8)"), ("bl", "BLOB"),
    ("en", "ENUM('a','b,c','ü')"), ("st", "SET('x','y','z')"),
    ("b1", "BIT(1)"), ("b10", "BIT(10)"), ("b64", "BIT(64)"),
    ("yr", "YEAR"), ("dt", "DATE"), ("dtn", "DATE NOT NULL DEFAULT '2000-01-01'"),
    ("tm", "TIME"), ("tm6", "TIME(6)"),
    ("dtm", "DATETIME"), ("dtm3", "DATETIME(3)"), ("dtm6", "DATETIME(6)"),
    ("ts", "TIMESTAMP NULL"), ("ts3", "TIMESTAMP(3) NULL"), ("ts6", "TIMESTAMP(6) NULL"),
    ("js", "JSON"), ("geo", "GEOMETRY"), ("pt", "POINT"),
]
"""Column name -> declaration. The DDL is what Debezium's parser and our ColumnDefs read."""

ROWS: list[str] = [
    # every column NULL (the NOT NULL ones their default)
    "(1, " + ", ".join("DEFAULT" if "NOT NULL" in d else "NULL" for _, d in COLUMNS[1:]) + ")",
    # minima and negative values
    "(2, -128, 0, 0, -32768, 0, -8388608, 0, -2147483648, 0, -9223372036854775808, 0, -3.4e38, -9999.999, "
    "-1.7976931348623157e308, -99999999.9999, -99999999999999999999, "
    "'-12345678901234567890123456789012345.123456789012345678901234567890', '', '', '', '', "
    "'', '', '', 'a', '', b'0', b'0000000000', b'0', 1901, '1000-01-01', '1000-01-01', '-838:59:59', "
    "'-00:00:00.000001', '1000-01-01 00:00:00', '1000-01-01 00:00:00.000', '1000-01-01 00:00:00.000000', "
    "'1970-01-01 00:00:01', '1970-01-01 00:00:01.001', '1970-01-01 00:00:01.000001', '[]', "
    "ST_GeomFromText('LINESTRING(0 0, 1 1)'), ST_GeomFromText('POINT(-1.5 2.25)', 4326))",
    # maxima
    "(3, 127, 255, 1, 32767, 65535, 8388607, 16777215, 2147483647, 4294967295, 9223372036854775807, "
    "18446744073709551615, 3.4e38, 9999.999, 1.7976931348623157e308, 99999999.9999, 99999999999999999999, "
    "'12345678901234567890123456789012345.123456789012345678901234567890', 'ünïcödé 😀 \"q\" \\\\ \\n', 'abcd', "
    "REPEAT('x', 1000), 'àéî €', 'ab', 0x00FF00FF0000, 0xDEADBEEF, 'b,c', 'x,y,z', b'1', b'1111111111', "
    "b'1111111111111111111111111111111111111111111111111111111111111111', 2155, '9999-12-31', '9999-12-31', "
    "'838:59:59', '23:59:59.999999', '9999-12-31 23:59:59', '9999-12-31 23:59:59.999', "
    "'9999-12-31 23:59:59.999999', '2038-01-19 03:14:07', '2038-01-19 03:14:07.999', "
    "'2038-01-19 03:14:07.999999', '{\"a\": [1, 2.5, \"x\"], \"b\": {\"c\": null}}', "
    "ST_GeomFromText('POLYGON((0 0,1 0,1 1,0 0))', 3857), ST_GeomFromText('POINT(1e300 -0)'))",
    # zero dates, invalid ENUM, empty SET, fractions
    "(4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1.1, 1.1, 0.1, 0.0001, 0, 0, 'a', 'a', 'a', 'a', 0x01, 0x00, 0x00, "
    "'', '', b'0', b'0100000001', b'1000000000000000000000000000000000000000000000000000000000000001', 0, "
    "'0000-00-00', '0000-00-00', '-01:30:00', '-00:30:00.5', '0000-00-00 00:00:00', '2020-00-01 00:00:00.000', "
    "'0000-00-00 00:00:00.000000', '0000-00-00 00:00:00', '0000-00-00 00:00:00.000', "
    "'0000-00-00 00:00:00.000000', '\"scalar\"', NULL, NULL)",
    # years 0-99 (time adjuster), leap day, sub-millisecond fractions, half-way values
    "(5, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 9223372036854775808, 3.14159274, 0.0005, 2.5, 0.5, 1, 0.5, "
    "'tab\\there', 'x  ', 'trailing  ', 'Ä', 'a\\0', 'a\\0\\0', 'a\\0', 'ü', 'z,x', b'1', b'0000000001', "
    "b'0000000000000000000000000000000000000000000000000000000000000001', 1970, '0050-06-15', '0069-12-31', "
    "'12:00:00', '-12:34:56.789012', '0070-01-01 10:00:00', '2024-02-29 12:00:00.5', "
    "'1969-12-31 23:59:59.999999', '1970-01-01 00:00:01', '2000-01-01 00:00:00.5', "
    "'2000-01-01 00:00:00.100000', '{}', ST_GeomFromText('MULTIPOINT(0 0, 1 1)'), ST_GeomFromText('POINT(0 0)'))",
]
"""Inserted rows (VALUES tuples, in COLUMNS order), written with sql_mode='' so zero dates and
out-of-range values go in as MySQL stores them."""

PATH_DIFFERENCES: dict[str, str] = {
    "en": "ENUM member with a comma: Debezium's stream looks the index up in its escaped member list "
          "('b\\,c'), its snapshot passes the server's text ('b,c')",
    "f": "FLOAT: the binlog carries every bit (3.1415927), the text protocol 6 significant digits (3.14159)",
    "yr": "YEAR 0000: the binlog stores 1900 + 0; Connector/J reads 0, which Debezium's YEAR converter makes 2000",
    "ts3": "TIMESTAMP(n) fractions: streamed with n digits (.500Z), snapshotted from a java.sql.Timestamp "
           "with the shortest (.5Z)",
    "ts6": "as ts3",
}
"""Columns whose streamed and snapshotted renderings differ on these rows, as Debezium's differ."""


def _ddl(table: str) -> str:
    return f"CREATE TABLE {table} (" + ", ".join(f"{n} {d}" for n, d in COLUMNS) + ") DEFAULT CHARSET=utf8mb4"


@pytest.fixture
def table(mariadb_db: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """Creates and fills the table; yields the connection arguments and the binlog start."""
    conn = pymysql.connect(**mariadb_db, autocommit=True)  # type: ignore[arg-type]
    try:
        with conn.cursor() as cur:
            cur.execute("SET SESSION sql_mode = ''")
            cur.execute("SET SESSION time_zone = '+00:00'")
            cur.execute("SHOW MASTER STATUS")
            file, position = cur.fetchone()[:2]
            cur.execute(_ddl("t"))
            for row in ROWS:
                cur.execute(f"INSERT INTO t VALUES {row}")
        yield {**mariadb_db, "binlog_file": file, "binlog_position": position}
    finally:
        conn.close()


def _snapshot_rows(args: dict[str, Any]) -> list[tuple[Any, ...]]:
    connect = {k: v for k, v in args.items() if not k.startswith("binlog_")}
    conn = pymysql.connect(**connect, conv=dict(SNAPSHOT_CONVERSIONS), charset="utf8mb4",  # type: ignore[arg-type]
                           init_command="SET time_zone = '+00:00'")
    try:
        with conn.cursor() as cur:
            cur.execute("SELECT * FROM t ORDER BY id")
            return list(cur.fetchall())
    finally:
        conn.close()


def _binlog_rows(args: dict[str, Any]) -> list[dict[str, Any]]:
    from pymysqlreplication import BinLogStreamReader
    from pymysqlreplication.row_event import WriteRowsEvent

    settings = {"host": args["host"], "port": args["port"], "user": args["user"], "password": args.get("password", "")}
    stream = BinLogStreamReader(connection_settings=settings, server_id=914_201, only_schemas=[args["database"]],
                                only_events=[WriteRowsEvent], blocking=False, is_mariadb=True, resume_stream=True,
                                log_file=args["binlog_file"], log_pos=args["binlog_position"])
    rows: list[dict[str, Any]] = []
    try:
        for event in stream:
            for row in event.rows:
                rows.append(restore_empty_sets(dict(row["values"]), row["none_sources"]))
    finally:
        stream.close()
    return sorted(rows, key=lambda r: r["id"])


def _render_all(converters: list[ColumnConverter], values: list[Any]) -> dict[str, Any]:
    return {c.schema["field"]: comparable(render(c, v)) for c, v in zip(converters, values, strict=True)}


def test_snapshot_and_binlog_render_like_debezium(table: dict[str, Any]) -> None:
    settings = MySqlConverterSettings()
    [answer] = run_probe([{
        "config": {}, "ddl": _ddl("t"),
        "live": {"host": table["host"], "port": table["port"], "user": table["user"],
                 "password": table.get("password", ""), "database": table["database"],
                 "query": "SELECT * FROM t ORDER BY id", "serverId": 914_202,
                 "binlogFile": table["binlog_file"], "binlogPosition": table["binlog_position"]},
    }])
    assert "error" not in answer and "schemaError" not in answer, answer
    columns = [column_def(c) for c in answer["columns"]]
    streamed = [converter_for(c, settings, origin="binlog") for c in columns]
    snapshotted = [converter_for(c, settings, origin="snapshot") for c in columns]
    assert all(c is not None for c in streamed + snapshotted)
    ours_binlog = [_render_all(streamed, [r[c.name] for c in columns]) for r in _binlog_rows(table)]
    ours_snapshot = [_render_all(snapshotted, list(r)) for r in _snapshot_rows(table)]
    theirs_binlog = [json.loads(r) if isinstance(r, str) else r for r in answer["binlogRows"]]
    theirs_snapshot = [json.loads(r) if isinstance(r, str) else r for r in answer["snapshotRows"]]
    assert len(ours_binlog) == len(ours_snapshot) == len(theirs_binlog) == len(theirs_snapshot) == len(ROWS)
    problems = []
    differing = set()
    for i in range(len(ROWS)):
        for name, _ in COLUMNS:
            for path, ours, theirs in (("binlog", ours_binlog, theirs_binlog),
                                       ("snapshot", ours_snapshot, theirs_snapshot)):
                theirs_value = theirs[i][name] if "error" not in theirs[i] else theirs[i]
                if ours[i][name] != theirs_value:
                    problems.append(f"row {i + 1} {name} {path}: ours {ours[i][name]!r} Debezium {theirs_value!r}")
            if ours_binlog[i][name] != ours_snapshot[i][name]:
                differing.add(name)
    assert not problems, "\n".join(problems)
    assert differing == set(PATH_DIFFERENCES)
