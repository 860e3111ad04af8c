"""`cdc_sources.mysql.rows`: the fast row decoder gives exactly python-mysql-replication's ``rows``.

Differential tests on the private MariaDB: a workload is run, the binlog is read back with a
``BinLogStreamReader`` (GTID-positioned at the state before the workload, up to the binlog end
after it), and for every rows event our decoder runs first, then the library decodes the same
event; the two must be equal value for value, with the same types, reprs, key order and
``none_sources``, and our decoder must have decoded every event itself.
"""

from __future__ import annotations

import datetime
import decimal
import random
import re
from collections.abc import Callable, Iterator
from contextlib import closing
from typing import Any

import pymysql
import pytest

from cdc_sources.mysql import binlog_values
from cdc_sources.mysql.rows import RowDecoder, decode_rows
from cdc_sources.mysql.rows.codegen import compile_pattern
from cdc_sources.mysql.rows.plans import Unsupported, plan_column

SERVER_ID = 915_301

ENUM_VALUES = ", ".join(f"'v{i}'" for i in range(300))
SET_BIG = ", ".join(f"'s{i}'" for i in range(64))
SET_MID = ", ".join(f"'m{i}'" for i in range(20))

ALL_TYPES: list[tuple[str, str]] = [
    ("ti", "TINYINT"), ("tiu", "TINYINT UNSIGNED"), ("si", "SMALLINT"), ("siu", "SMALLINT UNSIGNED"),
    ("mi", "MEDIUMINT"), ("miu", "MEDIUMINT UNSIGNED"), ("i", "INT"), ("iu", "INT UNSIGNED"),
    ("bi", "BIGINT"), ("biu", "BIGINT UNSIGNED"), ("bo", "BOOLEAN"), ("f", "FLOAT"), ("d", "DOUBLE"),
    ("dec0", "DECIMAL(10,0)"), ("dec1", "DECIMAL(65,30)"), ("dec2", "DECIMAL(5,5)"), ("dec3", "DECIMAL(12,2)"),
    ("dec4", "DECIMAL(1,0)"), ("dec5", "DECIMAL(18,9)"), ("dec6", "DECIMAL(20,11)"), ("dec7", "DECIMAL(65,0)"),
    ("dec8", "DECIMAL(7,3)"), ("dec9", "DECIMAL(4,1)"), ("decu", "DECIMAL(9,4) UNSIGNED"),
    *((f"dt{n}", f"DATETIME({n})") for n in range(7)),
    *((f"ts{n}", f"TIMESTAMP({n}) NULL") for n in range(7)),
    *((f"tm{n}", f"TIME({n})") for n in range(7)),
    ("dte", "DATE"), ("yr", "YEAR"),
    ("en", "ENUM('a','b','c')"), ("en2", f"ENUM({ENUM_VALUES})"),
    ("st", "SET('x','y','z')"), ("st3", f"SET({SET_MID})"), ("st8", f"SET({SET_BIG})"),
    *((f"b{n}", f"BIT({n})") for n in (1, 7, 8, 9, 17, 33, 48, 56, 64)),
    ("c10", "CHAR(10)"), ("cl", "CHAR(10) CHARACTER SET latin1"), ("cbig", "CHAR(255)"),
    ("vc", "VARCHAR(40)"), ("vcl", "VARCHAR(40) CHARACTER SET latin1"), ("vc300", "VARCHAR(300)"),
    ("vca", "VARCHAR(300) CHARACTER SET ascii"), ("v256", "VARCHAR(64)"), ("v255", "VARCHAR(255) CHARACTER SET latin1"),
    ("c64", "CHAR(64)"), ("bn", "BINARY(4)"), ("vb", "VARBINARY(10)"),
    ("tt", "TINYTEXT"), ("tx", "TEXT"), ("mt", "MEDIUMTEXT"), ("lt", "LONGTEXT CHARACTER SET latin1"),
    ("tb", "TINYBLOB"), ("bl", "BLOB"), ("mb", "MEDIUMBLOB"), ("lb", "LONGBLOB"),
    ("js", "JSON"), ("g", "GEOMETRY"), ("pt", "POINT"), ("uu", "UUID"), ("ip", "INET6"),
]
"""Every MariaDB column type (all nullable), with the metadata variants that change the binary layout."""

EDGE_ROWS: list[dict[str, str]] = [
    {},  # all NULL but the key
    {"ti": "-128", "tiu": "0", "si": "-32768", "siu": "0", "mi": "-8388608", "miu": "0", "i": "-2147483648",
     "iu": "0", "bi": "-9223372036854775808", "biu": "0", "bo": "0", "f": "-3.40282e38", "d": "-1.7976931348623157e308",
     "dec0": "-9999999999", "dec1": "-" + "9" * 35 + "." + "9" * 30, "dec2": "-0.99999", "dec3": "-1234567890.12",
     "dec4": "-9", "dec5": "-999999999.999999999", "dec6": "-123456789.00000000001", "dec7": "-" + "9" * 65,
     "dec8": "-0.001", "dec9": "-999.9", "decu": "0",
     **{f"dt{n}": "'1000-01-01 00:00:00'" for n in range(7)}, **{f"ts{n}": "'1970-01-01 02:00:01'" for n in range(7)},
     **{f"tm{n}": "'-838:59:59'" for n in range(7)}, "dte": "'1000-01-01'", "yr": "1901",
     "en": "'a'", "en2": "'v0'", "st": "''", "st3": "''", "st8": "''",
     **{f"b{n}": "0" for n in (1, 7, 8, 9, 17, 33, 48, 56, 64)},
     "c10": "''", "cl": "''", "cbig": "''", "vc": "''", "vcl": "''", "vc300": "''", "vca": "''", "bn": "''", "vb": "''",
     "tt": "''", "tx": "''", "mt": "''", "lt": "''", "tb": "''", "bl": "''", "mb": "''", "lb": "''",
     "js": "'[]'", "g": "ST_GeomFromText('POINT(0 0)')", "pt": "POINT(-1.5, 2.25)",
     "uu": "'00000000-0000-0000-0000-000000000000'", "ip": "'::'"},
    {"ti": "127", "tiu": "255", "si": "32767", "siu": "65535", "mi": "8388607", "miu": "16777215", "i": "2147483647",
     "iu": "4294967295", "bi": "9223372036854775807", "biu": "18446744073709551615", "bo": "1", "f": "3.40282e38",
     "d": "1.7976931348623157e308", "dec0": "9999999999", "dec1": "9" * 35 + "." + "9" * 30, "dec2": "0.99999",
     "dec3": "9999999999.99", "dec4": "9", "dec5": "999999999.999999999", "dec6": "999999999.99999999999",
     "dec7": "9" * 65, "dec8": "9999.999", "dec9": "0.1", "decu": "99999.9999",
     **{f"dt{n}": "'9999-12-31 23:59:59.999999'" for n in range(7)},
     **{f"ts{n}": "'2038-01-19 05:14:07.999999'" for n in range(7)},
     **{f"tm{n}": "'838:59:59'" for n in range(7)}, "dte": "'9999-12-31'", "yr": "2155",
     "en": "'c'", "en2": "'v299'", "st": "'x,y,z'", "st3": "'" + ",".join(f"m{i}" for i in range(20)) + "'",
     "st8": "'" + ",".join(f"s{i}" for i in range(64)) + "'",
     **{f"b{n}": str((1 << n) - 1) for n in (1, 7, 8, 9, 17, 33, 48, 56, 64)},
     "c10": "'ééééééééé😀'", "cl": "'àéîõü ÿ'", "cbig": "REPEAT('ü', 255)", "vc": "'😀 smile 😀'", "vcl": "'Grüße'",
     "vc300": "REPEAT('ab', 150)", "vca": "REPEAT('z', 300)", "v256": "REPEAT('ü', 64)", "v255": "REPEAT('ÿ', 255)",
     "c64": "REPEAT('€', 64)", "bn": "X'01020304'", "vb": "X'00FF00FF'",
     "tt": "REPEAT('t', 255)", "tx": "REPEAT('é', 300)", "mt": "REPEAT('m', 70000)", "lt": "REPEAT('L', 70000)",
     "tb": "REPEAT(X'FF', 255)", "bl": "REPEAT(X'00', 300)", "mb": "REPEAT(X'AB', 70000)",
     "lb": "REPEAT(X'CD', 70000)", "js": "'{\"a\": [1, 2.5, \"x\", null, true], \"b\": {\"c\": \"ü\"}}'",
     "g": "ST_GeomFromText('POLYGON((0 0,10 0,10 10,0 10,0 0))')", "pt": "POINT(1e300, -1e-300)",
     "uu": "'ffffffff-ffff-ffff-ffff-ffffffffffff'", "ip": "'ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff'"},
    # zero and partly zero dates (permissive sql_mode), odd fractions, negative and long times
    {"dt0": "'0000-00-00 00:00:00'", "dt3": "'2020-00-15 10:00:00.123'", "dt6": "'2020-05-00 01:02:03.000001'",
     "ts0": "'0000-00-00 00:00:00'", "ts3": "'0000-00-00 00:00:00'", "dte": "'0000-00-00'", "yr": "0",
     "dt1": "'2024-02-29 12:34:56.7'", "dt2": "'2024-02-29 12:34:56.78'", "dt4": "'2024-02-29 12:34:56.7891'",
     "dt5": "'2024-02-29 12:34:56.78912'", "ts1": "'2024-02-29 12:34:56.1'", "ts2": "'2024-02-29 12:34:56.12'",
     "ts4": "'2024-02-29 12:34:56.1234'", "ts5": "'2024-02-29 12:34:56.12345'", "ts6": "'2024-02-29 12:34:56.123456'",
     "tm0": "'-00:00:01'", "tm1": "'-00:00:01.5'", "tm2": "'-12:34:56.78'", "tm3": "'-838:59:58.999'",
     "tm4": "'100:00:00.0001'", "tm5": "'-00:00:00.00001'", "tm6": "'25:00:00.000001'",
     "dec3": "-0.01", "dec1": "-0.000000000000000000000000000001", "dec6": "0.00000000001", "decu": "0.0001",
     "st": "'y'", "st8": "'s63'", "en": "''", "b9": "256", "b17": "65537", "c10": "'a  '", "bn": "'a'",
     "vb": "X'00'", "f": "1.5", "d": "-0.0", "dec0": "0", "dec4": "-0", "js": "'\"text\"'"},
    {"dte": "'2020-02-00'", "dt0": "'2020-01-01 00:00:00'", "dec8": "-1.5", "dec2": "0.00001", "f": "-0.0",
     "ts6": "'2038-01-19 05:14:07.5'", "tm6": "'-00:00:00.5'", "tm1": "'00:00:00.5'", "st3": "'m0,m19'",
     "en2": "'v255'", "js": "'null'", "cl": "'Ab\u00ff'", "vcl": "'\u20ac'"},
]
"""Rows of edge values (SQL literals by column; missing columns are NULL)."""


def _ddl(table: str, columns: list[tuple[str, str]]) -> str:
    return (f"CREATE TABLE {table} (id INT PRIMARY KEY, " + ", ".join(f"{n} {t}" for n, t in columns)
            + ") DEFAULT CHARSET=utf8mb4")


def _insert(table: str, rows: list[tuple[int, dict[str, str]]], columns: list[tuple[str, str]]) -> str:
    tuples = ", ".join("(" + ", ".join([str(key)] + [row.get(n, "NULL") for n, _ in columns]) + ")"
                       for key, row in rows)
    return f"INSERT INTO {table} (id, {', '.join(n for n, _ in columns)}) VALUES {tuples}"


def _connect(args: dict[str, Any]) -> Any:
    conn = pymysql.connect(**args, autocommit=True, charset="utf8mb4")
    with conn.cursor() as cur:
        cur.execute("SET SESSION sql_mode = ''")
    return conn


def _binlog_end(args: dict[str, Any]) -> tuple[str, int]:
    with closing(_connect(args)) as conn, conn.cursor() as cur:
        cur.execute("SHOW MASTER STATUS")
        file, pos = cur.fetchone()[:2]
        return str(file), int(pos)


def _gtid_state(args: dict[str, Any]) -> str:
    """The GTID state at the binlog's current end (where the workload starts)."""
    with closing(_connect(args)) as conn, conn.cursor() as cur:
        cur.execute("SELECT BINLOG_GTID_POS(%s, %s)", _binlog_end(args))
        return str(cur.fetchone()[0])


def _row_events(args: dict[str, Any], state: str) -> Iterator[Any]:
    """The rows events of the test database from ``state`` to the binlog's current end.

    Read like the connector reads MariaDB (GTID auto-positioning), but blocking up to the end
    position: in non-blocking mode MariaDB resets the connection while an event of more than
    ~100 KB is in flight, and the library reconnects for ever.
    """
    from pymysqlreplication import BinLogStreamReader
    from pymysqlreplication.row_event import DeleteRowsEvent, UpdateRowsEvent, WriteRowsEvent

    file, end = _binlog_end(args)
    settings = {"host": args["host"], "port": args["port"], "user": args["user"], "password": args.get("password", "")}
    stream = BinLogStreamReader(connection_settings=settings, server_id=SERVER_ID, is_mariadb=True, blocking=True,
                                auto_position=state, only_schemas=[args["database"]], end_log_pos=end,
                                only_events=[WriteRowsEvent, UpdateRowsEvent, DeleteRowsEvent])
    try:
        for event in stream:
            assert stream.log_file == file, "the binlog rotated during the test"
            yield event
    finally:
        stream.close()


def _canonical(value: Any) -> Any:
    """A form that is equal only for equal values of the same types (and dicts in the same key order)."""
    if isinstance(value, dict):
        return [("key", k, _canonical(v)) for k, v in value.items()]
    if isinstance(value, list):
        return [_canonical(v) for v in value]
    if isinstance(value, (set, frozenset)):
        return (type(value).__name__, sorted(repr(v) for v in value))
    return repr(value)


def _first_difference(ours: list[dict[str, Any]], theirs: list[dict[str, Any]]) -> str:
    if len(ours) != len(theirs):
        return f"{len(ours)} rows, the library {len(theirs)}"
    for i, (a, b) in enumerate(zip(ours, theirs, strict=True)):
        if _canonical(a) == _canonical(b):
            continue
        for part in b:
            if _canonical(a.get(part)) != _canonical(b[part]):
                for name in b[part]:
                    x, y = a.get(part, {}).get(name, "<missing>"), b[part][name]
                    if _canonical(x) != _canonical(y):
                        return f"row {i} {part}[{name!r}]: ours {x!r}, the library {y!r}"
                return f"row {i} {part}: ours {a.get(part)!r}, the library {b[part]!r}"
        return f"row {i}: keys {list(a)} vs {list(b)}"
    return "no difference"


def compare_stream(args: dict[str, Any], state: str, decoder: RowDecoder,
                   inspect: Callable[[Any], None] = lambda event: None) -> tuple[dict[str, int], set[str]]:
    """Decode every rows event after ``state`` with ``decoder``, then with the library; assert equal.

    ``inspect`` sees each event first. Returns the rows seen per event class name, and the
    ``none_sources`` reasons seen.
    """
    seen: dict[str, int] = {}
    reasons: set[str] = set()
    for event in _row_events(args, state):
        inspect(event)
        ours = decoder.rows(event)
        assert ours is not None, f"{type(event).__name__} of {event.table} was left to the library"
        theirs = event.rows
        assert _canonical(ours) == _canonical(theirs), _first_difference(ours, theirs)
        seen[type(event).__name__] = seen.get(type(event).__name__, 0) + len(ours)
        reasons |= {why for row in ours for key, part in row.items() if "none_sources" in key for why in part.values()}
    return seen, reasons


def _run(args: dict[str, Any], statements: list[str]) -> None:
    with closing(_connect(args)) as conn, conn.cursor() as cur:
        for statement in statements:
            cur.execute(statement)


# -- the all-types table --------------------------------------------------------------------------

@pytest.mark.integration
@pytest.mark.mariadb
def test_all_types_inserts_updates_deletes_match_the_library(mariadb_db: dict[str, Any]) -> None:
    _run(mariadb_db, [_ddl("t_all", ALL_TYPES)])
    state = _gtid_state(mariadb_db)
    keyed = list(enumerate(EDGE_ROWS, start=1))
    _run(mariadb_db, [
        _insert("t_all", keyed[:1], ALL_TYPES),  # single-row event
        _insert("t_all", keyed[1:], ALL_TYPES),  # multi-row events (split by the server at 8 KiB)
        "UPDATE t_all SET ti = ti + 1, dec3 = -dec3, vc = CONCAT(IFNULL(vc, ''), 'x') WHERE id IN (1, 2, 4)",
        "UPDATE t_all SET dte = NULL, st = '', en = NULL, js = '{}', dt6 = '0000-00-00 00:00:00' WHERE id = 3",
        "UPDATE t_all SET tm6 = '-00:00:00.000001', b64 = 1 << 63, st8 = 's0,s31,s32' WHERE id = 5",
        "DELETE FROM t_all WHERE id IN (2, 3)",
        "UPDATE t_all SET id = id + 100",  # primary key change
        "DELETE FROM t_all",
    ])
    decoder = RowDecoder()
    seen, reasons = compare_stream(mariadb_db, state, decoder)
    assert seen == {"WriteRowsEvent": 5, "UpdateRowsEvent": 3 + 1 + 1 + 3, "DeleteRowsEvent": 2 + 3}
    assert reasons == {"null", "out of date range", "out of datetime2 range", "empty set"}
    assert decoder.stats.fallbacks == 0


@pytest.mark.integration
@pytest.mark.mariadb
@pytest.mark.parametrize("image", ["MINIMAL", "NOBLOB"])
def test_partial_row_images_match_the_library(mariadb_db: dict[str, Any], image: str) -> None:
    """``binlog_row_image`` MINIMAL/NOBLOB: columns missing from an image are None ("cols bitmap")."""
    _run(mariadb_db, [_ddl("t_part", ALL_TYPES)])
    state = _gtid_state(mariadb_db)
    keyed = list(enumerate(EDGE_ROWS, start=1))
    _run(mariadb_db, [
        f"SET SESSION binlog_row_image = '{image}'",
        _insert("t_part", keyed, ALL_TYPES),
        "INSERT INTO t_part (id, vc, dte) VALUES (50, 'only two', '2020-01-01')",
        "UPDATE t_part SET vc = 'changed', bl = X'01', dt3 = NULL WHERE id IN (1, 3, 50)",
        "UPDATE t_part SET id = id + 100 WHERE id = 2",
        "DELETE FROM t_part",
    ])
    decoder = RowDecoder()
    seen, reasons = compare_stream(mariadb_db, state, decoder)
    assert seen == {"WriteRowsEvent": 6, "UpdateRowsEvent": 4, "DeleteRowsEvent": 6}
    assert "cols bitmap" in reasons
    assert decoder.stats.fallbacks == 0


@pytest.mark.integration
@pytest.mark.mariadb
def test_table_map_changes_and_many_tables(mariadb_db: dict[str, Any]) -> None:
    """A table map re-sent per transaction, an ALTER TABLE mid-stream, several tables in one transaction."""
    columns = [("a", "INT NOT NULL"), ("b", "VARCHAR(20)"), ("c", "DECIMAL(8,3)"), ("d", "DATETIME(3)")]
    _run(mariadb_db, [_ddl("t1", columns), _ddl("t2", columns[::-1])])
    state = _gtid_state(mariadb_db)
    row = {"a": "7", "b": "'x'", "c": "-1.5", "d": "'2024-01-01 00:00:00.5'"}
    statements = []
    for key in range(1, 6):
        statements += [_insert("t1", [(key, row)], columns), _insert("t2", [(key, row)], columns[::-1])]
    statements += ["ALTER TABLE t1 ADD COLUMN e BIGINT UNSIGNED FIRST, DROP COLUMN c",
                   "INSERT INTO t1 (id, e, a) VALUES (10, 18446744073709551615, 1)",
                   "BEGIN", "UPDATE t1 SET b = 'y'", "UPDATE t2 SET c = NULL", "COMMIT"]
    _run(mariadb_db, statements)
    decoder = RowDecoder()
    seen, _ = compare_stream(mariadb_db, state, decoder)
    assert seen == {"WriteRowsEvent": 11, "UpdateRowsEvent": 11}
    assert decoder.stats.fallbacks == 0


# -- randomized -----------------------------------------------------------------------------------

_INT_BITS = {"TINYINT": 8, "SMALLINT": 16, "MEDIUMINT": 24, "INT": 32, "BIGINT": 64}
_SET_MEMBERS = {"st": ["x", "y", "z"], "st3": [f"m{i}" for i in range(20)], "st8": [f"s{i}" for i in range(64)]}


def _arguments(sql_type: str) -> list[int]:
    """The numbers in a type's parentheses: ``DECIMAL(12,2)`` -> ``[12, 2]``."""
    inside = re.search(r"\(([\d,]+)\)", sql_type)
    return [int(x) for x in inside.group(1).split(",")] if inside else []


def _random_number(rng: random.Random, kind: str, sql_type: str) -> str:
    unsigned = "UNSIGNED" in sql_type
    if kind in _INT_BITS:
        bits = _INT_BITS[kind]
        low, high = (0, (1 << bits) - 1) if unsigned else (-(1 << (bits - 1)), (1 << (bits - 1)) - 1)
        return str(rng.choice([low, high, 0, rng.randint(low, high), rng.randint(0 if unsigned else -100, 100)]))
    if kind == "BOOLEAN":
        return str(rng.randint(0, 1))
    if kind in {"FLOAT", "DOUBLE"}:
        return repr(rng.choice([0.0, -0.0, rng.uniform(-1e6, 1e6), rng.random() * 10 ** rng.randint(-30, 30)]))
    precision, scale = _arguments(sql_type)
    digits = "".join(rng.choice("0123456789") for _ in range(precision))
    text = (digits[:precision - scale] or "0") + ("." + digits[precision - scale:] if scale else "")
    return ("-" if rng.random() < 0.5 and not unsigned else "") + text


def _random_temporal(rng: random.Random, kind: str) -> str:
    clock = f"{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d}.{rng.randint(0, 999999):06d}"
    day = f"{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"
    if kind in {"DATETIME", "TIMESTAMP"}:
        if rng.random() < 0.05:
            return "'0000-00-00 00:00:00'"
        year = rng.randint(1971, 2037) if kind == "TIMESTAMP" else rng.choice([1000, 1969, 2000, rng.randint(1, 9999)])
        return f"'{year:04d}-{day} {clock}'"
    if kind == "TIME":
        return f"'{rng.choice(['', '-'])}{rng.randint(0, 838)}:{clock[3:]}'"
    if kind == "DATE":
        return rng.choice(["'0000-00-00'", f"'{rng.randint(1, 9999):04d}-{day}'"])
    return str(rng.choice([0, 1901, 2155, rng.randint(1901, 2155)]))  # YEAR


def _random_text(rng: random.Random, kind: str, sql_type: str) -> str:
    if "latin1" in sql_type:
        alphabet = "abc xyzéüÿ€"
    elif "ascii" in sql_type:
        alphabet = "abc xyz"
    else:
        alphabet = "abc xyzéü😀中"
    size = rng.choice([0, 1, 5, 10]) if kind == "CHAR" else rng.choice([0, 3, 20, 300 if kind != "VARCHAR" else 40])
    return "'" + "".join(rng.choice(alphabet) for _ in range(size)).rstrip() + "'"


def _random_literal(rng: random.Random, name: str, sql_type: str) -> str:
    """A random SQL literal for the column ``name`` of ``sql_type`` (the server clamps what is out of range)."""
    kind = re.split(r"[( ]", sql_type, maxsplit=1)[0].upper()
    if kind in {*_INT_BITS, "BOOLEAN", "FLOAT", "DOUBLE", "DECIMAL"}:
        return _random_number(rng, kind, sql_type)
    if kind in {"DATETIME", "TIMESTAMP", "TIME", "DATE", "YEAR"}:
        return _random_temporal(rng, kind)
    if kind in {"CHAR", "VARCHAR", "TINYTEXT", "TEXT", "MEDIUMTEXT", "LONGTEXT"}:
        return _random_text(rng, kind, sql_type)
    if kind in {"BINARY", "VARBINARY", "TINYBLOB", "BLOB", "MEDIUMBLOB", "LONGBLOB"}:
        size = rng.choice([0, 1, 4]) if kind in {"BINARY", "VARBINARY"} else rng.choice([0, 10, 255, 300])
        return "X'" + rng.randbytes(size).hex() + "'"
    if kind == "ENUM":
        return f"'v{rng.randint(0, 299)}'" if name == "en2" else rng.choice(["'a'", "'b'", "'c'"])
    if kind == "SET":
        return "'" + ",".join(m for m in _SET_MEMBERS[name] if rng.random() < 0.3) + "'"
    if kind == "BIT":
        return str(rng.getrandbits(_arguments(sql_type)[0]))
    if kind == "JSON":
        return rng.choice(["'{}'", "'[1,2]'", "'{\"k\": \"v\"}'", "'3.5'"])
    if kind in {"GEOMETRY", "POINT"}:
        return f"POINT({rng.uniform(-180, 180)}, {rng.uniform(-90, 90)})"
    if kind == "UUID":
        return f"'{rng.getrandbits(128):032x}'"
    if kind == "INET6":
        return rng.choice(["'::1'", f"'{rng.randint(0, 255)}.{rng.randint(0, 255)}.1.2'", "'fe80::1'"])
    raise AssertionError(f"no random values for {sql_type}")


def _random_row(rng: random.Random, null_share: float) -> dict[str, str]:
    return {n: _random_literal(rng, n, t) for n, t in ALL_TYPES if rng.random() >= null_share}


@pytest.mark.integration
@pytest.mark.mariadb
def test_random_rows_match_the_library(mariadb_db: dict[str, Any]) -> None:
    rng = random.Random(20260412)
    _run(mariadb_db, [_ddl("t_rand", ALL_TYPES)])
    state = _gtid_state(mariadb_db)
    statements, keys = [], list(range(1, 301))
    for start in range(0, len(keys), 20):  # multi-row inserts, null shares from none to most
        batch = [(k, _random_row(rng, rng.choice([0.0, 0.1, 0.5, 0.9]))) for k in keys[start:start + 20]]
        statements.append(_insert("t_rand", batch, ALL_TYPES))
    for key in rng.sample(keys, 120):
        changes = {n: _random_literal(rng, n, t) if rng.random() < 0.8 else "NULL"
                   for n, t in rng.sample(ALL_TYPES, rng.randint(1, 6))}
        statements.append(f"UPDATE t_rand SET {', '.join(f'{n} = {v}' for n, v in changes.items())} WHERE id = {key}")
    statements.append("UPDATE t_rand SET i = i WHERE id % 7 = 0")
    statements.append("UPDATE t_rand SET vc = NULL, dec3 = 1 WHERE id % 11 = 0")
    statements += [f"DELETE FROM t_rand WHERE id = {k}" for k in rng.sample(keys, 30)]
    statements.append("DELETE FROM t_rand WHERE id % 5 = 0")
    _run(mariadb_db, statements)
    decoder = RowDecoder()
    seen, reasons = compare_stream(mariadb_db, state, decoder)
    assert reasons == {"null", "out of date range", "out of datetime2 range", "empty set"}
    assert seen["WriteRowsEvent"] == 300 and seen["DeleteRowsEvent"] > 30 and seen["UpdateRowsEvent"] >= 120
    assert decoder.stats.fallbacks == 0


@pytest.mark.integration
@pytest.mark.mariadb
def test_many_null_patterns_use_the_generic_reader(mariadb_db: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    """Beyond the compiled-pattern limit the generic reader (bit tests at run time) takes over."""
    from cdc_sources.mysql.rows import decoder as module

    monkeypatch.setattr(module, "MAX_PATTERNS", 2)
    rng = random.Random(7)
    _run(mariadb_db, [_ddl("t_gen", ALL_TYPES)])
    state = _gtid_state(mariadb_db)
    rows = [(k, _random_row(rng, 0.5)) for k in range(1, 81)]
    _run(mariadb_db, [_insert("t_gen", rows[:40], ALL_TYPES), _insert("t_gen", rows[40:], ALL_TYPES),
                      "UPDATE t_gen SET f = NULL, st = '', vc = CONCAT('u', id) WHERE id % 2 = 0", "DELETE FROM t_gen"])
    decoder = RowDecoder()
    seen, _ = compare_stream(mariadb_db, state, decoder)
    assert seen == {"WriteRowsEvent": 80, "UpdateRowsEvent": 40, "DeleteRowsEvent": 80}
    assert decoder.stats.fallbacks == 0


# -- the old temporal formats ---------------------------------------------------------------------

@pytest.mark.integration
@pytest.mark.mariadb
def test_pre_5_6_temporal_types_match_the_library(mariadb_db: dict[str, Any]) -> None:
    """DATETIME, TIMESTAMP and TIME of the old binary formats (``mysql56_temporal_format=OFF``)."""
    columns = [("dt", "DATETIME"), ("ts", "TIMESTAMP NULL"), ("tm", "TIME")]
    with closing(_connect(mariadb_db)) as conn, conn.cursor() as cur:
        cur.execute("SET GLOBAL mysql56_temporal_format = OFF")
        try:
            cur.execute(_ddl("t_old", columns))
        finally:
            cur.execute("SET GLOBAL mysql56_temporal_format = ON")
    state = _gtid_state(mariadb_db)
    rows = [{}, {"dt": "'2024-02-29 23:59:58'", "ts": "'2024-02-29 23:59:58'", "tm": "'-838:59:59'"},
            {"dt": "'0000-00-00 00:00:00'", "ts": "'0000-00-00 00:00:00'", "tm": "'838:59:59'"},
            {"dt": "'2024-00-10 01:02:03'", "tm": "'00:00:00'"}, {"dt": "'1000-01-01 00:00:00'", "tm": "'-00:00:01'"}]
    _run(mariadb_db, [_insert("t_old", list(enumerate(rows, start=1)), columns), "UPDATE t_old SET tm = '12:00:00'"])
    decoder = RowDecoder()
    types: set[int] = set()
    seen, reasons = compare_stream(mariadb_db, state, decoder, lambda e: types.update(c.type for c in e.columns))
    assert types == {3, 7, 11, 12}  # INT, and the old TIMESTAMP, TIME, DATETIME: the old formats were really used
    assert seen == {"WriteRowsEvent": 5, "UpdateRowsEvent": 5}
    assert reasons == {"null", "out of datetime range"}


# -- what is left to the library ------------------------------------------------------------------

def _single_event(args: dict[str, Any], state: str, check: Callable[[Any], None]) -> None:
    events = 0
    for event in _row_events(args, state):
        check(event)
        events += 1
    assert events == 1


@pytest.mark.integration
@pytest.mark.mariadb
def test_values_the_library_rejects_are_left_to_it(mariadb_db: dict[str, Any]) -> None:
    """A latin1 byte cp1252 cannot decode, an invalid DATE: we return None, and the library's
    readers as `binlog_values` replaces them read them as Debezium does (U+FFFD; the epoch with
    ``event.processing.failure.handling.mode=warn``, an error with ``fail``)."""
    binlog_values.install()
    _run(mariadb_db, ["CREATE TABLE t_bad (id INT PRIMARY KEY, l VARCHAR(10) CHARACTER SET latin1, d DATE)"])
    for literal, column, value in (("l = X'81'", "l", "\ufffd"), ("d = '2021-02-30'", "d", datetime.date(1970, 1, 1))):
        state = _gtid_state(mariadb_db)
        _run(mariadb_db, ["SET SESSION sql_mode = 'ALLOW_INVALID_DATES'",
                          f"INSERT INTO t_bad SET id = {len(literal)}, {literal}"])

        def check(event: Any, column: str = column, value: Any = value) -> None:
            decoder = RowDecoder()
            assert decoder.rows(event) is None
            assert decoder.stats.fallbacks == 1
            binlog_values.failure_mode("warn")
            try:
                assert event.rows[0]["values"][column] == value
            finally:
                binlog_values.failure_mode("fail")

        _single_event(mariadb_db, state, check)
    state = _gtid_state(mariadb_db)
    _run(mariadb_db, ["SET SESSION sql_mode = 'ALLOW_INVALID_DATES'",
                      "INSERT INTO t_bad SET id = 99, d = '2021-04-31'"])

    def fails(event: Any) -> None:
        with pytest.raises(binlog_values.InvalidTemporalError, match="invalid date '2021-04-31'"):
            _ = event.rows

    _single_event(mariadb_db, state, fails)


@pytest.mark.integration
@pytest.mark.mariadb
def test_decode_rows_uses_the_library_for_a_decoded_event(mariadb_db: dict[str, Any]) -> None:
    """An event whose packet the library already read is not read again: `decode_rows` returns the library's rows."""
    _run(mariadb_db, ["CREATE TABLE t_once (id INT PRIMARY KEY, v VARCHAR(5))"])
    state = _gtid_state(mariadb_db)
    _run(mariadb_db, ["INSERT INTO t_once VALUES (1, 'a'), (2, NULL)"])

    def check(event: Any) -> None:
        theirs = event.rows
        decoder = RowDecoder()
        assert decoder.rows(event) is None
        assert decode_rows(event, decoder) == theirs == [
            {"values": {"id": 1, "v": "a"}, "none_sources": {}},
            {"values": {"id": 2, "v": None}, "none_sources": {"v": "null"}}]

    _single_event(mariadb_db, state, check)


@pytest.mark.integration
@pytest.mark.mariadb
def test_decimal_and_temporal_values_are_exact(mariadb_db: dict[str, Any]) -> None:
    """Spot checks against known values (the differential tests compare with the library only)."""
    _run(mariadb_db, ["CREATE TABLE t_known (id INT PRIMARY KEY, m DECIMAL(12,2), t DATETIME(3), s SET('a','b'), "
                      "b BIT(9), ts TIMESTAMP(6) NULL)"])
    state = _gtid_state(mariadb_db)
    _run(mariadb_db, ["SET time_zone = '+00:00'",
                      "INSERT INTO t_known VALUES (1, -1234.5, '2024-05-06 07:08:09.123', '', 5, "
                      "'2024-01-02 03:04:05.000006')"])

    def check(event: Any) -> None:
        rows = RowDecoder().rows(event)
        assert rows == [{"values": {"id": 1, "m": decimal.Decimal("-1234.50"),
                                    "t": datetime.datetime(2024, 5, 6, 7, 8, 9, 123000), "s": None,
                                    "b": "000000101", "ts": datetime.datetime(2024, 1, 2, 3, 4, 5, 6)},
                         "none_sources": {"s": "empty set"}}]

    _single_event(mariadb_db, state, check)


def test_mysql_binary_json_is_read_by_the_library_parser() -> None:
    """MySQL's binary JSON (MariaDB has none: its JSON is text) goes through the library's parser;
    an empty value, which the library reports with a leftover reason, is left to it."""
    from pymysqlreplication.column import Column
    from pymysqlreplication.json_binary import parse_json

    plan = plan_column(Column(type=245, name="j", length_size=4, unsigned=False), "c0", False)
    read = compile_pattern([plan], [True], 0)
    doc = bytes.fromhex("00" "01000c000b00010005010061")  # {"a": 1}: a small object, one inline int16
    image = len(doc).to_bytes(4, "little") + doc
    assert read(image, 0) == ({"j": {b"a": 1}}, {}, len(image))
    assert read(image, 0)[0]["j"] == parse_json(doc[0], doc[1:])
    with pytest.raises(Unsupported):
        read(bytes(4), 0)
