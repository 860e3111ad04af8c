"""cdc_sources.sqlserver.defaults against Debezium 3.6.3's SqlServerDefaultValueConverter.

SqlServerDefaultProbe.java builds Debezium's ``Column`` (the JDBC type Microsoft's driver
reports, the default constraint's text as ``COLUMN_DEF``), asks the converter for the default,
sets it on the field schema as ``TableSchemaBuilder`` does, and answers the schema's ``default``
and how JsonConverter writes a NULL of the field (the default, when there is one). Ours must give
the same for each text, under each ``decimal.handling.mode`` and ``binary.handling.mode``.
"""

from __future__ import annotations

import datetime as dt
import functools
import logging
from collections.abc import Iterator, Sequence
from decimal import Decimal
from typing import Any

import orjson
import pytest
from psycopg.conninfo import conninfo_to_dict

from cdc_sources.common.kschema import NO_DEFAULT
from cdc_sources.spi import ChangeRecord, SchemaVersion
from cdc_sources.sqlserver.config import build_sqlserver_config
from cdc_sources.sqlserver.converters import ConverterSettings, SqlServerColumn, column_converter
from cdc_sources.sqlserver.defaults import literal_default, schema_default
from cdc_sources.sqlserver.session import SqlServerCaptureSession
from tests.cdc_sources.sqlserver.java_probe import run_json
from tests.support.sqlserver_emulator import SqlServerEmulator
from tests.support.sqlserver_emulator.pipeline import SOURCE

NUMBER_NOISE = ["(abs((-3)))", "(NULL)", "(getdate())", "((1)+(2))", "(())", "('')", "((1.5))", "(( 7 ))", "((+5))",
                "('7')", "7"]
STRING_CASES = ["('abc')", "(N'abc')", "('')", "(N'')", "('it''s')", "('a(b)c')", "('NULL')", "(NULL)",
                "(getdate())", "('x", "(')", "(N'\u65e5\u672c')", "('  padded  ')", "(N'a)b')", "abc"]

# (type name, JDBC type, length, scale, modes, default texts)
CASES: list[tuple[str, int, int, int | None, str, Sequence[str]]] = [
    ("int", 4, 10, 0, "", ["((0))", "((2147483647))", "((-2147483648))", "((2147483648))", "((-1))", *NUMBER_NOISE]),
    ("bigint", -5, 19, 0, "", ["((3147483648.))", "((-9223372036854775808))", "((9223372036854775808))", "((12))",
                               "((1.))", "((.))", "(())", *NUMBER_NOISE]),
    ("smallint", 5, 5, 0, "", ["((32767))", "((32768))", "((-32768))", *NUMBER_NOISE]),
    ("tinyint", -6, 3, 0, "", ["((255))", "((300))", "((0))", "((-1))", *NUMBER_NOISE]),
    ("bit", -7, 1, None, "", ["((1))", "((0))", "(NULL)", "(('1'))", "((1) )", "1"]),
    ("decimal", 3, 9, 2, "decimal", ["((100.12))", "((1.5))", "((-0.5))", "((1e2))", "((1E-2))", "((7))", "((.5))",
                                     "((5.))", "(NULL)", "((-))", "((1.5)", "(getdate())", "((1,5))", "(())"]),
    ("decimal", 3, 5, 1, "decimal", ["((1.25))", "((1.2))"]),
    ("numeric", 2, 38, 0, "decimal", ["((12345678901234567890123456789012345678))", "((0))", "((-3))"]),
    ("numeric", 2, 38, 10, "decimal", ["((1234567890123456789012345678.1))", "((0.0000000001))"]),
    ("money", -148, 19, 4, "decimal", ["((922337203685477.58))", "((1))", "((-0.0001))"]),
    ("smallmoney", -146, 10, 4, "decimal", ["((214748.3647))", "((0.5))"]),
    ("float", 8, 53, None, "", ["((1.2345000000000000e+003))", "((1.5))", "((-0.0))", "((1e-320))", "((1.5d))",
                                "((1.5f))", "((.5))", "((5.))", "((1E5))", "(NULL)", "(getdate())", "((1,5))",
                                "((0x10))"]),
    ("real", 7, 24, None, "", ["((1.2345000000000000e+003))", "((0.1))", "((3.4028235e38))", "((1.4e-45))",
                               "((16777217))", "(NULL)"]),
    *[(t, j, n, None, "", STRING_CASES) for t, j, n in [
        ("char", 1, 10), ("varchar", 12, 255), ("text", -1, 2147483647), ("nchar", -15, 10), ("nvarchar", -9, 4000),
        ("ntext", -16, 1073741823)]],
    ("uniqueidentifier", 1, 36, None, "", ["('6F9619FF-8B86-D011-B42D-00C04FC964FF')",
                                           "('6f9619ff-8b86-d011-b42d-00c04fc964ff')", "('1-2-3-4-5')",
                                           "('1-2-3-4')", "('1-2-3-4-5-6')", "('x-2-3-4-5')", "(newid())",
                                           "(NULL)", "('')"]),
    ("binary", -2, 4, None, "binary", ["(0x0102FEff)", "(0x)", "(0x012)", "(0xZZ)", "(NULL)", "((0))", "(0x00)"]),
    ("varbinary", -3, 8000, None, "binary", ["(0x68656c6c6f)", "(0x)"]),
    ("image", -4, 2147483647, None, "binary", ["(0x89504e47)"]),
    # no server here: Debezium's PARSE fails and there is no default (the server-side path is tested end to end)
    ("date", 91, 10, 0, "", ["('2019-02-03')", "(getdate())"]),
    ("datetime", 93, 23, 3, "", ["('2019-01-01 00:00:00.000')"]),
    ("datetime2", 93, 27, 7, "", ["('2019-01-01 00:00:00.1234567')"]),
    ("datetimeoffset", -155, 34, 7, "", ["('2019-01-01 00:00:00.1234567+02:00')"]),
    ("smalldatetime", 93, 16, 0, "", ["('2019-01-01 00:00:00')"]),
    ("time", 92, 16, 7, "", ["('12:34:56.1234567')"]),
    # no mapper in Debezium: no default
    ("xml", 2009, 0, None, "", ["('<a/>')", "(NULL)"]),
    ("sysname", -9, 128, None, "", ["(N'abc')"]),
    ("timestamp", -2, 8, None, "binary", ["(0x01)"]),
    ("hierarchyid", -3, 892, None, "binary", ["(0x58)"]),
]


def settings_for(modes: str) -> list[ConverterSettings]:
    if modes == "decimal":
        return [ConverterSettings(decimal_mode=m) for m in ("precise", "double", "string")]
    if modes == "binary":
        return [ConverterSettings(binary_mode=m) for m in ("bytes", "base64", "base64-url-safe", "hex")]
    return [ConverterSettings()]


def _requests() -> list[tuple[tuple[str, int, int, int | None, str, Sequence[str]], ConverterSettings]]:
    return [(case, s) for case in CASES for s in settings_for(case[4])]


@functools.cache
def debezium() -> list[dict[str, Any]]:
    requests = [{"jdbcType": j, "typeName": t, "length": n, "scale": sc, "decimal": s.decimal_mode,
                 "time": s.time_precision_mode, "binary": s.binary_mode, "expressions": list(texts)}
                for (t, j, n, sc, _, texts), s in _requests()]
    return run_json("io.debezium.connector.sqlserver.SqlServerDefaultProbe", requests)


def column(type_name: str, length: int, scale: int | None) -> SqlServerColumn:
    if type_name in ("decimal", "numeric"):
        return SqlServerColumn("v", type_name, length, scale)
    if type_name in ("time", "datetime2", "datetimeoffset"):
        return SqlServerColumn("v", type_name, None, scale)
    return SqlServerColumn("v", type_name, length, None)


def test_every_default_text_reads_like_debezium() -> None:
    answers = debezium()
    checked = 0
    mismatches = []
    for (((type_name, _, length, scale, _, texts), settings), answer) in zip(_requests(), answers, strict=True):
        converter = column_converter(column(type_name, length, scale), settings)
        assert converter is not None
        for text, theirs in zip(texts, answer["answers"], strict=True):
            ours = schema_default("v", type_name, text, converter)
            if isinstance(theirs, str):
                # Debezium sets the default, then cannot write a record: here there is no default
                assert theirs.startswith("ERR:DataException:Decimal value has mismatching scale"), theirs
                assert ours is NO_DEFAULT, (type_name, text, ours)
                checked += 1
                continue
            expected = theirs.get("default", NO_DEFAULT)
            if ours != expected or type(ours) is not type(expected):
                mismatches.append((type_name, settings, text, ours, expected))
            # a NULL is written as the default (JsonConverter's replace.null.with.default)
            assert theirs["null"] == (None if expected is NO_DEFAULT else expected)
            checked += 1
    assert not mismatches, "\n".join(map(str, mismatches))
    assert checked == sum(len(c[5]) * len(settings_for(c[4])) for c in CASES) > 300


def test_date_and_time_defaults_are_read_by_the_server() -> None:
    asked: list[tuple[str, str]] = []

    def parse(type_name: str, text: str) -> Any:
        asked.append((type_name, text))
        return dt.date(2019, 2, 3)

    assert literal_default("date", "('2019-02-03')", parse) == dt.date(2019, 2, 3)
    assert asked == [("date", "2019-02-03")]
    converter = column_converter(SqlServerColumn("d", "date"), ConverterSettings())
    assert converter is not None
    assert schema_default("d", "date", "('2019-02-03')", converter, parse) == 17930  # days since 1970-01-01


def test_an_unreadable_default_is_logged_and_left_out(caplog: pytest.LogCaptureFixture) -> None:
    converter = column_converter(SqlServerColumn("qty", "int"), ConverterSettings())
    assert converter is not None
    with caplog.at_level(logging.WARNING, logger="cdc_sources.sqlserver.defaults"):
        assert schema_default("qty", "int", "(abs(-3)+(1))", converter) is NO_DEFAULT
    assert "column qty" in caplog.text and "(abs(-3)+(1))" in caplog.text
    assert schema_default("qty", "int", None, converter) is NO_DEFAULT
    assert literal_default("decimal", "((1.50))") == Decimal("1.50")


@pytest.fixture
def emulator(pg_db: str) -> Iterator[SqlServerEmulator]:
    emu = SqlServerEmulator.install(pg_db)
    emu.execute("CREATE TABLE dbo.items (id int PRIMARY KEY DEFAULT 0, qty int DEFAULT 7, "
                "label varchar(20) DEFAULT 'none', price numeric(9, 2) DEFAULT 1.5, born date DEFAULT '2019-02-03', "
                "at timestamp(3) DEFAULT now(), plain int)")
    emu.execute("INSERT INTO dbo.items VALUES (1, NULL, NULL, NULL, NULL, NULL, NULL), "
                "(2, 3, 'x', 2.25, '2020-01-01', '2020-01-01 00:00:01', 4)")
    emu.enable_db()
    emu.enable_table("dbo", "items")
    yield emu


def test_defaults_reach_the_schemas_and_replace_nulls(emulator: SqlServerEmulator) -> None:
    """Through the session on the emulator: the field schemas carry the defaults (a date one read
    by the server), a NULL in such a column is written as the default (snapshot and stream), and
    the CREATE schema change event carries each column's default text."""
    database = str(conninfo_to_dict(emulator.dsn)["dbname"])
    config, problems = build_sqlserver_config(name=SOURCE, connection={"user": "u", "database": database},
                                              options={"poll.interval.ms": "1", "decimal.handling.mode": "string"},
                                              path="sources[0]")
    assert config is not None, problems
    steps = iter([lambda: (emulator.execute("INSERT INTO dbo.items VALUES (3, NULL, NULL, NULL, NULL, NULL, NULL)"),
                           emulator.agent().sync())])

    def sleep(_seconds: float) -> bool:
        step = next(steps, None)
        if step is None:
            return True
        step()
        return False

    session = SqlServerCaptureSession(config, emulator.gateway(), None, sleep=sleep)
    try:
        items = [*session.snapshot(), *session.stream(until_idle=False)]
    finally:
        session.close()
    records = [r for i in items for r in (i if isinstance(i, list) else [i]) if isinstance(r, ChangeRecord)]
    topic = f"{SOURCE}.{database}.dbo.items"
    (version,) = {i.schema_id: i for i in items if isinstance(i, SchemaVersion) and i.topic == topic}.values()
    after = next(f for f in orjson.loads(version.value_schema)["fields"] if f["field"] == "after")
    assert {f["field"]: f.get("default", "-") for f in after["fields"]} == {
        "id": 0, "qty": 7, "label": "none", "price": "1.5", "born": 17930, "at": "-", "plain": "-"}
    assert [f.get("default") for f in orjson.loads(version.key_schema)["fields"]] == [0]

    rows = {orjson.loads(r.key)["id"]: orjson.loads(r.value)["after"] for r in records if r.topic == topic}
    assert rows == {
        1: {"id": 1, "qty": 7, "label": "none", "price": "1.5", "born": 17930, "at": None, "plain": None},
        2: {"id": 2, "qty": 3, "label": "x", "price": "2.25", "born": 18262, "at": 1577836801000, "plain": 4},
        3: {"id": 3, "qty": 7, "label": "none", "price": "1.5", "born": 17930, "at": None, "plain": None}}

    (create,) = [orjson.loads(r.value) for r in records if r.topic == SOURCE]
    columns = create["tableChanges"][0]["table"]["columns"]
    assert {c["name"]: c["defaultValueExpression"] for c in columns} == {
        "id": "((0))", "qty": "((7))", "label": "('none')", "price": "((1.5))", "born": "('2019-02-03')",
        "at": "(getdate())", "plain": None}
