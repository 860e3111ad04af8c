"""Schema defaults; expected values were produced by Debezium 3.6.3 from the same expressions."""

from __future__ import annotations

import pytest

from cdc_sources.postgres.converters import ConverterSettings
from cdc_sources.postgres.converters.defaults import extract, extract_literal
from cdc_sources.postgres.types import PgType
from tests.cdc_sources.postgres.converters.pgtypes import (
    array_of,
    builtin,
    conv,
    domain,
    enum,
    extension,
    numeric_typmod,
    varchar_typmod,
)

NO = object()


def _default(t: PgType | str, expression: str, typmod: int = -1, **settings: object) -> object:
    s = ConverterSettings(**settings)  # type: ignore[arg-type]
    schema = conv(t, typmod, s, nullable=False, default=expression).schema
    return schema.get("default", NO)


@pytest.mark.parametrize(("t", "typmod", "expression", "default"), [
    ("int4", -1, "42", 42), ("int4", -1, "'-7'::integer", -7), ("int4", -1, "'5'::integer", 5),
    ("int8", -1, "'9223372036854775807'::bigint", 9223372036854775807), ("int2", -1, "3", 3),
    ("int4", -1, "nextval('t_id_seq'::regclass)", 0), ("int8", -1, "nextval('s'::regclass)", 0),
    ("int4", -1, "(1 + 2)", NO),
    ("text", -1, "'it''s'::text", "it's"), ("varchar", varchar_typmod(20), "'abc'::character varying", "abc"),
    ("varchar", varchar_typmod(20), "upper('x'::text)", ""),
    ("varchar", varchar_typmod(20), "('a'::text || 'b'::text)", "a"),
    ("bpchar", varchar_typmod(4), "'ab'::bpchar", "ab"), ("text", -1, "NULL::text", NO),
    ("timestamptz", -1, "now()", "1970-01-01T00:00:00.000000Z"),
    ("timestamptz", -1, "'2020-01-01 08:00:00.5+00'::timestamp with time zone", "2020-01-01T08:00:00.500000Z"),
    ("timestamptz", 3, "CURRENT_TIMESTAMP", "1970-01-01T00:00:00.000Z"),
    ("bool", -1, "true", True), ("bool", -1, "false", False),
    ("numeric", numeric_typmod(10, 2), "1.5", "AJY="), ("numeric", numeric_typmod(10, 2), "'-1.5'::numeric", "/2o="),
    ("numeric", -1, "1.50", NO),  # a VariableScaleDecimal struct cannot be a schema default
    ("numeric", numeric_typmod(10, 2), "1.555", NO), ("numeric", numeric_typmod(10, 2), "'NaN'::numeric", NO),
    ("date", -1, "CURRENT_DATE", 0), ("date", -1, "'2020-01-31'::date", 18292),
    ("date", -1, "'infinity'::date", 169560311), ("date", -1, "'-infinity'::date", -170999002),
    ("uuid", -1, "gen_random_uuid()", "00000000-0000-0000-0000-000000000000"),
    ("uuid", -1, "'A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11'::uuid", "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"),
    ("interval", -1, "'PT1H'::interval", 3600000000), ("interval", -1, "make_interval(days => 1)", 0),
    ("time", -1, "'10:00:00'::time without time zone", 36000000000),
    ("time", 3, "'10:00:00.123'::time without time zone", 36000123),
    ("time", -1, "LOCALTIME", 0), ("time", -1, "'24:00:00'::time without time zone", 86399999999),
    ("timestamp", -1, "'2020-01-01 10:00:00'::timestamp without time zone", 1577872800000000),
    ("timestamp", 3, "now()", 0), ("timestamp", -1, "'infinity'::timestamp without time zone", -9223372036853775810),
    ("timestamp", -1, "'-infinity'::timestamp without time zone", -9223372036854775808),
    ("timestamp", 3, "'infinity'::timestamp without time zone", NO),
    ("float8", -1, "1.5", 1.5), ("float4", -1, "0.1", 0.1), ("float8", -1, "'NaN'::double precision", "NaN"),
    ("bit", 3, "B'101'::\"bit\"", "BQ=="), ("bit", 1, "B'1'::\"bit\"", True),
    ("varbit", -1, "B'0011'::\"bit\"", "Aw=="),
    ("json", -1, "'{}'::json", "{}"), ("jsonb", -1, "'{\"a\": 1}'::jsonb", '{"a": 1}'),
    ("xml", -1, "'<a/>'::xml", "<a/>"),
    ("bytea", -1, "'\\x01'::bytea", NO), ("money", -1, "1", NO),
    ("timetz", -1, "'10:00:00+02'::time with time zone", NO),
    ("inet", -1, "'1.2.3.4'::inet", NO), ("name", -1, "'x'::name", NO), ("point", -1, "'(0,0)'::point", NO),
])
def test_defaults(t: str, typmod: int, expression: str, default: object) -> None:
    assert _default(t, expression, typmod) == default


def test_defaults_follow_the_modes() -> None:
    assert _default("numeric", "1.50", decimal_handling_mode="double") == 1.5
    assert _default("numeric", "1.5", numeric_typmod(10, 2), decimal_handling_mode="string") == "1.50"
    assert _default("numeric", "0.0", decimal_handling_mode="string") == "0.0"
    iso = "isostring"
    assert _default("date", "CURRENT_DATE", time_precision_mode=iso) == "1970-01-01Z"
    assert _default("date", "'infinity'::date", time_precision_mode=iso) == "+999999999-12-31Z"
    assert _default("timestamp", "'-infinity'::timestamp without time zone", time_precision_mode=iso) == (
        "-999999999-01-01T00:00:00Z")
    assert _default("time", "'10:00:00'::time without time zone", time_precision_mode=iso) == "10:00:00Z"


def test_enum_default_needs_a_matching_cast() -> None:
    mood = enum("mood", "sad", "ok")
    assert _default(mood, "'sad'::mood") == "sad"
    assert _default(mood, "'sad'::public.mood") == "sad"
    assert _default(mood, "'sad'::other") is NO


def test_no_default_for_domains_arrays_and_extensions() -> None:
    assert _default(domain("short_text", builtin("varchar"), varchar_typmod(5)), "'x'::character varying") is NO
    assert _default(array_of(builtin("int4")), "'{1}'::integer[]") is NO
    assert _default(extension("citext"), "'x'::citext") is NO
    assert _default(extension("hstore"), "''::hstore") is NO


def test_not_null_columns_fall_back_to_the_default() -> None:
    c = conv("int4", nullable=False, default="42")
    assert c.null_value == 42
    assert conv("int4", nullable=False).null_value == 0
    assert conv("int4", default="42").null_value is None


def test_extract() -> None:
    assert extract_literal("'a''b'::text") == "a'b"
    assert extract_literal("NULL::text") is None
    assert extract_literal("42") == "42"
    assert extract("nextval('s'::regclass)", "0") == "0"
    assert extract("CURRENT_TIMESTAMP", "x") == "x"
    assert extract("('a'::text || 'b'::text)", "x") == "a"
