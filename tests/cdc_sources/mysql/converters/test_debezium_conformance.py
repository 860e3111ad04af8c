"""cdc_sources.mysql.converters against the real Debezium 3.6.3 MySQL converter classes.

Every case is one column (declared in DDL that Debezium's own parser reads) under one set of
options, with edge values as both paths deliver them (see `samples`). MySqlConverterProbe.java
builds the table schema with ``TableSchemaBuilder`` + ``MySqlValueConverters`` +
``MySqlDefaultValueConverter`` and renders the rows with Kafka's JsonConverter; the test checks
our field schema (text-exact) and every value, streamed and snapshotted, against it.
Floats compare as exact decimals: Java writes ``1.0E10`` where orjson writes ``10000000000.0``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import orjson
import pytest

from cdc_sources.mysql.converters import ValueConversionError, converter_for
from tests.cdc_sources.mysql.converters import samples as s
from tests.cdc_sources.mysql.converters.dbz import (
    column_def,
    comparable,
    debezium_value,
    propagates,
    render,
    run_probe,
    settings_of,
)

pytestmark = pytest.mark.conformance


@dataclass(frozen=True)
class Case:
    """One column under one configuration, with its sample values."""

    config: tuple[tuple[str, str], ...]
    ddl: str
    values: tuple[s.Sample, ...]

    @property
    def id(self) -> str:
        opts = ",".join(f"{k.split('.')[0]}={v}" for k, v in self.config) or "defaults"
        return f"{opts}|{self.ddl}"

    def request(self) -> dict[str, Any]:
        rows = [[v.binlog_java] for v in self.values] + [[v.snapshot_java] for v in self.values]
        return {"config": dict(self.config), "ddl": f"CREATE TABLE t (c {self.ddl}) DEFAULT CHARSET=utf8mb4",
                "rows": rows}


def cases(configs: Sequence[dict[str, str]], ddls: Sequence[str], values: Sequence[s.Sample]) -> list[Case]:
    return [Case(tuple(sorted(c.items())), d, (s.NULL, *values)) for c in configs for d in ddls]


DEFAULT: list[dict[str, str]] = [{}]
TIME_MODES = [{"time.precision.mode": m} for m in
              ("adaptive_time_microseconds", "connect", "microseconds", "nanoseconds", "isostring")]
TIME_MODES_NO_ADJUST = [{**m, "enable.time.adjuster": "false"} for m in TIME_MODES]
DECIMAL_MODES = [{"decimal.handling.mode": m} for m in ("precise", "double", "string")]
BINARY_MODES = [{"binary.handling.mode": m} for m in ("bytes", "base64", "base64-url-safe", "hex")]
PROPAGATE = [{"column.propagate.source.type": "db.t.c"}, {"datatype.propagate.source.type": ".+\\.DECIMAL"}]

ENUM_MEMBERS = ("a", "b,c", "d'e", "ü")
SET_MEMBERS = ("x", "y", "z")

CASES: list[Case] = [
    # integers
    *cases(DEFAULT, ["TINYINT", "TINYINT(1)", "INT1", "TINYINT NOT NULL DEFAULT '-7'"],
           [s.integer(-128, 8), s.integer(127, 8), s.integer(0, 8)]),
    *cases(DEFAULT, ["TINYINT UNSIGNED", "TINYINT UNSIGNED ZEROFILL NOT NULL"],
           [s.integer(255, 8, unsigned=True), s.integer(128, 8, unsigned=True), s.integer(0, 8, unsigned=True)]),
    *cases(DEFAULT, ["SMALLINT", "SMALLINT DEFAULT 12"], [s.integer(-32768, 16), s.integer(32767, 16)]),
    *cases(DEFAULT, ["SMALLINT UNSIGNED", "SMALLINT UNSIGNED NOT NULL DEFAULT '65535'"],
           [s.integer(65535, 16, unsigned=True), s.integer(40000, 16, unsigned=True)]),
    *cases(DEFAULT, ["MEDIUMINT", "MIDDLEINT"], [s.integer(-8388608, 24), s.integer(8388607, 24)]),
    *cases(DEFAULT, ["MEDIUMINT UNSIGNED"], [s.integer(16777215, 24, unsigned=True)]),
    *cases(DEFAULT, ["INT", "INTEGER NOT NULL", "INT(11) DEFAULT '2.5'", "INT DEFAULT '-2.5'", "INT DEFAULT TRUE"],
           [s.integer(-(2**31), 32), s.integer(2**31 - 1, 32)]),
    *cases(DEFAULT, ["INT UNSIGNED", "INTEGER UNSIGNED ZEROFILL DEFAULT 4294967295"],
           [s.integer(2**32 - 1, 32, unsigned=True), s.integer(2**31, 32, unsigned=True)]),
    *cases(DEFAULT, ["BIGINT", "BIGINT NOT NULL DEFAULT 9007199254740993"],
           [s.integer(-(2**63), 64), s.integer(2**63 - 1, 64)]),
    *cases([{}, {"bigint.unsigned.handling.mode": "precise"}],
           ["BIGINT UNSIGNED", "SERIAL", "BIGINT UNSIGNED NOT NULL DEFAULT 18446744073709551615",
            "BIGINT UNSIGNED DEFAULT FALSE"],
           [s.integer(2**64 - 1, 64, unsigned=True), s.integer(2**63, 64, unsigned=True),
            s.integer(2**63 - 1, 64, unsigned=True), s.integer(0, 64, unsigned=True)]),
    *cases(DEFAULT, ["BOOLEAN", "BOOL NOT NULL DEFAULT TRUE", "BOOLEAN DEFAULT 0"],
           [s.boolean(0), s.boolean(1), s.boolean(-3)]),
    # floating point
    *cases(DEFAULT, ["FLOAT", "FLOAT(10)", "FLOAT UNSIGNED", "FLOAT NOT NULL DEFAULT 1.1"],
           [s.float4(1.1, "1.1"), s.float4(3.14159274, "3.14159"), s.float4(-1e10, "-1e10"),
            s.float4(16777217.0, "1.67772e7"), s.float4(1.4e-45, "1.4013e-45"), s.float4(0.0, "0")]),
    *cases(DEFAULT, ["FLOAT(7,3)", "FLOAT(7,3) DEFAULT '1.1'"],
           [s.float4(1.1, "1.100"), s.float4(-2.5, "-2.500"), s.float4(1234.567, "1234.567")]),
    *cases(DEFAULT, ["DOUBLE", "FLOAT(30)", "DOUBLE PRECISION", "DOUBLE(10,2) DEFAULT 2.5"],
           [s.float8(1.1), s.float8(-1e300), s.float8(5e-324), s.float8(1e16), s.float8(0.1 + 0.2)]),
    *cases(DEFAULT, ["REAL", "REAL DEFAULT 0.3"], [s.float8(1.1), s.float8(3.141592653589793)]),
    # decimals
    *cases(DECIMAL_MODES + PROPAGATE, ["DECIMAL(10,2)", "NUMERIC(10,2) NOT NULL", "DEC(10,2) DEFAULT 1.005",
                                       "DECIMAL(10,2) UNSIGNED DEFAULT TRUE", "FIXED(10,2) NOT NULL DEFAULT '-3'"],
           [s.decimal("0.00"), s.decimal("-12345678.90"), s.decimal("99999999.99"), s.decimal("0.01"),
            s.decimal("-0.50")]),
    *cases(DECIMAL_MODES, ["DECIMAL", "DECIMAL(10)", "DECIMAL(3,0) DEFAULT 7"],
           [s.decimal("0"), s.decimal("-128"), s.decimal("999")]),
    *cases(DECIMAL_MODES, ["DECIMAL(65,30)"],
           [s.decimal("12345678901234567890123456789012345.123456789012345678901234567890"),
            s.decimal("-0.000000000000000000000000000001"), s.decimal("0.000000000000000000000000000000")]),
    *cases(DECIMAL_MODES, ["DECIMAL(20,20)"], [s.decimal("0.12345678901234567890")]),
    # strings, ENUM, SET
    *cases(DEFAULT + PROPAGATE[:1], ["VARCHAR(20)", "CHAR(5) NOT NULL", "TEXT", "LONGTEXT", "NATIONAL CHAR(3)",
                                     "TINYTEXT", "VARCHAR(10) DEFAULT 'abc'", "CHAR(3) NOT NULL DEFAULT _utf8mb4'x y'"],
           [s.string(""), s.string("héllo wörld"), s.string("emoji 😀 \"quoted\" \\ \n\t"),
            s.string("\x00\x01 control")]),
    *cases(DEFAULT, ["VARCHAR(20) CHARACTER SET latin1", "TEXT CHARSET latin1 NOT NULL DEFAULT 'é'"],
           [s.string("héllo wörld €", "cp1252"), s.string("")]),
    *cases(DEFAULT, ["MEDIUMTEXT CHARACTER SET ascii"], [s.string("plain ascii ~", "ascii")]),
    *cases(DEFAULT, ["ENUM('a','b,c','d''e','ü')", "ENUM('a','b,c','d''e','ü') NOT NULL DEFAULT 'b,c'"],
           [s.enum(i, ENUM_MEMBERS) for i in range(5)]),
    *cases(DEFAULT, ["SET('x','y','z')", "SET('x','y','z') NOT NULL DEFAULT 'x,z'"],
           [s.set_of(c, SET_MEMBERS) for c in [(), ("x",), ("z", "x"), ("x", "y", "z")]]),
    # binary
    *cases(BINARY_MODES, ["VARBINARY(10)", "BLOB", "LONGBLOB", "TINYBLOB NOT NULL", "VARBINARY(4) DEFAULT 'ab'"],
           [s.binary(b""), s.binary(b"\x00\xff\x10abc"), s.binary(bytes(range(256)))]),
    *cases(BINARY_MODES, ["BINARY(4)", "BINARY", "BINARY(4) NOT NULL DEFAULT 'ab'"],
           [s.binary(b"a\x00\x00\x00", b"a"), s.binary(b"\x00\x00\x00\x00", b""), s.binary(b"\xfb\xff\xbf\x01")]),
    # BIT
    *cases(DEFAULT, ["BIT", "BIT(1) NOT NULL DEFAULT b'1'", "BIT(1) DEFAULT 0"], [s.bits("0"), s.bits("1")]),
    *cases(DEFAULT, ["BIT(10)", "BIT(10) DEFAULT b'101'", "BIT(10) NOT NULL DEFAULT b'1000000001'"],
           [s.bits("0000000000"), s.bits("1000000001"), s.bits("1111111111"), s.bits("0000000101")]),
    *cases(DEFAULT, ["BIT(64)"], [s.bits("1" + "0" * 63), s.bits("0" * 64), s.bits("1" * 64)]),
    *cases(DEFAULT, ["BIT(8)", "BIT(16) DEFAULT b'1'"], [s.bits("10000000"), s.bits("00000001")]),
    # temporal
    *cases(DEFAULT, ["YEAR", "YEAR(4) NOT NULL DEFAULT '2021'", "YEAR DEFAULT '69'", "YEAR DEFAULT '70'"],
           [s.year(1901), s.year(2155), s.year(2000)]),
    *cases(TIME_MODES + TIME_MODES_NO_ADJUST, ["DATE", "DATE NOT NULL", "DATE DEFAULT '2020-02-29'",
                                               "DATE NOT NULL DEFAULT '0000-00-00'", "DATE DEFAULT '0000-00-00'"],
           [s.date("2024-02-29"), s.date("1969-12-31"), s.date("9999-12-31"), s.date("1000-01-01"),
            s.date("0001-01-01"), s.date("0069-06-30"), s.date("0070-01-01"), s.date("0000-00-00"),
            s.date("2020-00-15"), s.date("0000-01-01")]),
    *cases(TIME_MODES, ["TIME", "TIME(6)", "TIME(3) NOT NULL", "TIME DEFAULT '-12:00:00'",
                        "TIME(2) DEFAULT '2020-01-01 10:11:12.5'"],
           [s.time("00:00:00"), s.time("23:59:59.999999"), s.time("24:00:00"), s.time("838:59:59"),
            s.time("-838:59:59"), s.time("-00:00:01.5"), s.time("-01:30:00.25"), s.time("12:34:56.5")]),
    *cases(TIME_MODES + TIME_MODES_NO_ADJUST,
           ["DATETIME", "DATETIME(3)", "DATETIME(4)", "DATETIME(6) NOT NULL",
            "DATETIME(6) DEFAULT CURRENT_TIMESTAMP(6)", "DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP",
            "DATETIME DEFAULT '2020-01-01'", "DATETIME(2) DEFAULT '2020-01-31 10:11:12.345'",
            "DATETIME NOT NULL DEFAULT '0000-00-00 00:00:00'"],
           [s.datetime_value("2024-02-29 23:59:59.999999"), s.datetime_value("1969-12-31 23:59:59.500000"),
            s.datetime_value("1000-01-01 00:00:00"), s.datetime_value("9999-12-31 23:59:59.999999"),
            s.datetime_value("0050-01-01 10:00:00.123000"), s.datetime_value("0099-12-31 00:00:00"),
            s.datetime_value("0000-00-00 00:00:00"), s.datetime_value("2021-00-01 00:00:00"),
            s.datetime_value("1970-01-01 00:00:00.000001")]),
    *cases(TIME_MODES[:2], ["TIMESTAMP", "TIMESTAMP(1)", "TIMESTAMP(3)", "TIMESTAMP(6) NOT NULL",
                            "TIMESTAMP NULL DEFAULT '2020-01-01 10:00:00'",
                            "TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3)",
                            "TIMESTAMP(2) NULL DEFAULT '2020-01-01 10:00:00.5'", "TIMESTAMP NOT NULL DEFAULT 0"],
           [s.timestamp("2024-02-29 23:59:59.999999"), s.timestamp("1970-01-01 00:00:01"),
            s.timestamp("2038-01-19 03:14:07.500000"), s.timestamp("2020-06-01 12:00:00.100000"),
            s.timestamp("0000-00-00 00:00:00")]),
    # JSON (MySQL's binary form in the binlog). Not a top-level JSON null: python-mysql-replication
    # delivers it as None, like SQL NULL, where Debezium writes "null".
    *cases(DEFAULT, ["JSON", "JSON NOT NULL"],
           [s.json_document(v) for v in (
               {}, [], {"a": 1, "bb": [1, 2.5, "x\n", None, True, False], "c": {"d": 70000}},
               {"k": "quote \" backslash \\ tab \t ctrl \x01 é 😀 \u2028"}, [-32768, 32767, -(2**31), 2**31 - 1],
               [-(2**63), 2**64 - 1, 1e20, 0.1, -1.5e-7, 1.0, 123456789.125, 5e-324], "top-level", 42, 3.5, True,
               [[[]], {"x": {}}])]),
    # spatial
    *cases(DEFAULT, ["GEOMETRY", "LINESTRING", "GEOMETRYCOLLECTION", "MULTIPOLYGON NOT NULL"],
           [s.geometry(0, s.LINE_WKB), s.geometry(4326, s.POINT_WKB)]),
    *cases(DEFAULT, ["POINT", "POINT NOT NULL"], [s.geometry(0, s.POINT_WKB), s.geometry(3857, s.POINT_WKB)]),
    # event.converting.failure.handling.mode
    *cases([{"time.precision.mode": "connect", "event.converting.failure.handling.mode": m} for m in
            ("fail", "warn", "skip")] + [{"time.precision.mode": "nanoseconds",
                                          "event.converting.failure.handling.mode": "fail"}],
           ["TIME", "TIME NOT NULL", "TIME NOT NULL DEFAULT '01:00:00'"],
           [s.time("10:00:00"), s.time("-00:00:01"), s.time("25:00:00")]),
    # comments
    *cases([{"include.schema.comments": "true"}, {"include.schema.comments": "true", **PROPAGATE[0]}],
           ["INT COMMENT 'the id'", "POINT COMMENT 'where'"], [s.integer(1, 32)]),
]

NULL_DEBEZIUM_CANNOT_WRITE = {"bigint=precise|SERIAL", "defaults|POINT NOT NULL"}
"""Case ids where Debezium cannot write a NULL (in a NOT NULL column: a key-only image) and we
write the type's zero value: Debezium's fallback for BIGINT UNSIGNED (precise) is a Long and
for POINT a struct without x and y, both of which its own schema refuses."""


@pytest.fixture(scope="module")
def answers() -> dict[str, dict[str, Any]]:
    replies = run_probe([case.request() for case in CASES])
    return {case.id: reply for case, reply in zip(CASES, replies, strict=True)}


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_same_as_debezium(case: Case, answers: dict[str, dict[str, Any]]) -> None:
    answer = answers[case.id]
    assert "error" not in answer, answer.get("error")
    column = column_def(answer["columns"][0])
    settings = settings_of(dict(case.config))
    propagate = propagates(dict(case.config), column)
    if "schemaError" in answer:  # Debezium cannot build the table; neither can we
        with pytest.raises(ValueConversionError):
            converter_for(column, settings, origin="binlog", propagate_source_type=propagate)
        return
    streamed = converter_for(column, settings, origin="binlog", propagate_source_type=propagate)
    snapshotted = converter_for(column, settings, origin="snapshot", propagate_source_type=propagate)
    [expected_schema] = answer["schema"]["fields"]
    assert streamed is not None and snapshotted is not None
    assert orjson.dumps(streamed.schema) == orjson.dumps(expected_schema)
    assert snapshotted.schema == streamed.schema
    rows = answer["rows"]
    n = len(case.values)
    for converter, value in [(streamed, v.binlog_py) for v in case.values] + [
            (snapshotted, v.snapshot_py) for v in case.values]:
        if converter.identity and value is not None:
            assert converter.convert(value) is value
    for i, sample in enumerate(case.values):
        if sample.binlog_py is None and case.id in NULL_DEBEZIUM_CANNOT_WRITE:
            assert rows[i]["error"] and rows[n + i]["error"]
            continue
        assert comparable(render(streamed, sample.binlog_py)) == debezium_value(rows[i], "c"), \
            f"binlog value {sample.binlog_py!r}: Debezium {rows[i]}"
        assert comparable(render(snapshotted, sample.snapshot_py)) == debezium_value(rows[n + i], "c"), \
            f"snapshot value {sample.snapshot_py!r}: Debezium {rows[n + i]}"
