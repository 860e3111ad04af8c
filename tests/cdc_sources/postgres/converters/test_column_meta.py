from __future__ import annotations

import pytest

from cdc_sources.postgres.converters.column_meta import (
    UNKNOWN_LENGTH,
    Origin,
    length_and_scale,
    source_type_name,
)
from cdc_sources.postgres.types import PgType
from tests.cdc_sources.postgres.converters.pgtypes import (
    array_of,
    builtin,
    column,
    domain,
    enum,
    numeric_typmod,
    varchar_typmod,
)


@pytest.mark.parametrize(("name", "typmod", "expected"), [
    ("int2", -1, (5, 0)), ("int4", -1, (10, 0)), ("int8", -1, (19, 0)), ("oid", -1, (10, 0)),
    ("bool", -1, (1, 0)), ("float4", -1, (8, 8)), ("float8", -1, (17, 17)),
    ("numeric", -1, (0, None)), ("numeric", numeric_typmod(10, 2), (10, 2)), ("numeric", numeric_typmod(5, 0), (5, 0)),
    ("varchar", varchar_typmod(10), (10, 0)), ("varchar", -1, (UNKNOWN_LENGTH, 0)), ("text", -1, (UNKNOWN_LENGTH, 0)),
    ("bpchar", varchar_typmod(5), (5, 0)), ("char", -1, (1, 0)), ("name", -1, (UNKNOWN_LENGTH, 0)),
    ("date", -1, (13, 0)), ("time", -1, (15, 6)), ("time", 3, (12, 3)), ("time", 0, (8, 0)), ("time", 1, (11, 1)),
    ("timetz", -1, (21, 6)), ("timestamp", -1, (29, 6)), ("timestamp", 3, (26, 3)), ("timestamp", 0, (22, 0)),
    ("timestamptz", -1, (35, 6)), ("interval", -1, (49, 6)), ("interval", (0x7FFF << 16) | 3, (49, 3)),
    ("bit", 10, (10, 0)), ("varbit", -1, (UNKNOWN_LENGTH, 0)), ("varbit", 5, (5, 0)),
    ("bytea", -1, (UNKNOWN_LENGTH, 0)), ("money", -1, (UNKNOWN_LENGTH, 0)), ("uuid", -1, (UNKNOWN_LENGTH, 0)),
])
def test_snapshot_length_and_scale_follow_pgjdbc(name: str, typmod: int, expected: tuple[int, int | None]) -> None:
    assert length_and_scale(column(name, typmod), "snapshot") == expected


def test_stream_reports_unconstrained_numeric_as_display_size() -> None:
    assert length_and_scale(column("numeric"), "stream") == (131089, 0)
    assert length_and_scale(column("numeric", numeric_typmod(10, 2)), "stream") == (10, 2)
    assert length_and_scale(column("timestamp", 3), "stream") == (26, 3)
    assert length_and_scale(column("text"), "stream") == (UNKNOWN_LENGTH, 0)


def test_arrays_use_the_element_rules() -> None:
    assert length_and_scale(column(array_of(builtin("numeric"))), "snapshot") == (131089, 0)
    assert length_and_scale(column(array_of(builtin("numeric")), numeric_typmod(6, 2)), "snapshot") == (6, 2)
    assert length_and_scale(column(array_of(builtin("timestamp")), 3), "snapshot") == (26, 3)


def test_domains_take_their_length_from_the_type_hierarchy() -> None:
    short = domain("short_text", builtin("varchar"), varchar_typmod(5))
    price = domain("price", builtin("numeric"), numeric_typmod(8, 3))
    anynum = domain("anynum", builtin("numeric"))
    outer = domain("outer_price", price, oid=92_001)
    sources: list[Origin] = ["snapshot", "stream"]
    for source in sources:
        assert length_and_scale(column(short), source) == (5, 0)
        assert length_and_scale(column(price), source) == (8, 3)
        assert length_and_scale(column(anynum), source) == (131089, 0)
        assert length_and_scale(column(outer), source) == (8, 3)


def test_type_names() -> None:
    serial = column("int4", default="nextval('t_id_seq'::regclass)")
    assert source_type_name(serial, "snapshot") == "serial"
    assert source_type_name(serial, "stream") == "int4"
    big = column("int8", default="nextval('s'::regclass)")
    assert source_type_name(big, "snapshot") == "bigserial"
    assert source_type_name(column("int2", default="nextval('s'::regclass)"), "snapshot") == "smallserial"
    assert source_type_name(column(array_of(builtin("int4"))), "snapshot") == "_int4"
    mood = enum("mood", "sad")
    assert source_type_name(column(mood), "snapshot") == "mood"
    other = PgType(91_500, "mood", "app", "e", "E", enum_values=("sad",))
    assert source_type_name(column(other), "snapshot") == '"app"."mood"'
    assert source_type_name(column(other), "stream") == "mood"
