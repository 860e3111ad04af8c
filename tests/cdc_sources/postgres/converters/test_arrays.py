"""Expected values were produced by Debezium 3.6.3's own converters on the same text."""

from __future__ import annotations

import pytest

from cdc_sources.postgres.converters import ConverterSettings, ValueConversionError, converter_for
from cdc_sources.postgres.converters.arrays import parse_array
from tests.cdc_sources.postgres.converters.pgtypes import (
    array_of,
    builtin,
    column,
    conv,
    domain,
    enum,
    extension,
    numeric_typmod,
    varchar_typmod,
)

PLACEHOLDER_BYTES = [95, 95, 100, 101, 98, 101, 122, 105, 117, 109, 95, 117, 110, 97, 118, 97, 105, 108, 97, 98,
                     108, 101, 95, 118, 97, 108, 117, 101]


@pytest.mark.parametrize(("text", "elements"), [
    ("{}", []), ("{1,NULL,3}", ["1", None, "3"]), ("[0:1]={7,8}", ["7", "8"]),
    ('{a,"b c",NULL,"NULL","q\\"x","back\\\\slash",""}', ["a", "b c", None, "NULL", 'q"x', "back\\slash", ""]),
    ("{{1,2},{3,4}}", [["1", "2"], ["3", "4"]]), ('{"{\\"a\\": 1}"}', ['{"a": 1}']),
])
def test_parse_array(text: str, elements: list[object]) -> None:
    assert parse_array(text) == elements


def test_parse_array_rejects_non_arrays() -> None:
    with pytest.raises(ValueConversionError):
        parse_array("1,2")


def test_int_array() -> None:
    c = conv(array_of(builtin("int4")))
    assert [c.convert(t) for t in ["{1,NULL,3}", "{}", "{{1,2},{3,4}}", "[0:1]={7,8}"]] == [
        [1, None, 3], [], [None, None], [7, 8]]
    assert c.schema == {"type": "array", "items": {"type": "int32", "optional": True}, "optional": True, "field": "c"}
    assert c.unavailable == PLACEHOLDER_BYTES
    assert conv(array_of(builtin("int4")), nullable=False).null_value == []


def test_text_array() -> None:
    c = conv(array_of(builtin("text")))
    assert c.convert('{a,"b c",NULL,"NULL","q\\"x","back\\\\slash",""}') == [
        "a", "b c", None, "NULL", 'q"x', "back\\slash", ""]
    assert c.unavailable == ["__debezium_unavailable_value"]


@pytest.mark.parametrize(("element", "typmod", "text", "items", "value"), [
    ("numeric", -1, "{1.50,NULL,-2}", "io.debezium.data.VariableScaleDecimal",
     [{"scale": 1, "value": "Dw=="}, None, {"scale": 0, "value": "/g=="}]),
    ("numeric", numeric_typmod(6, 2), "{1.50,NULL}", "org.apache.kafka.connect.data.Decimal", ["AJY=", None]),
    ("date", -1, "{2020-01-01,NULL}", "io.debezium.time.Date", [18262, None]),
    ("time", -1, "{04:05:06.789012,NULL}", "io.debezium.time.MicroTime", [14706789000, None]),
    ("timestamp", 3, '{"2018-06-20 15:13:16.945"}', "io.debezium.time.Timestamp", [1529507596945]),
    ("timestamptz", -1, '{"2018-06-20 13:13:16.9451+00"}', "io.debezium.time.ZonedTimestamp",
     ["2018-06-20T13:13:16.945100Z"]),
    ("uuid", -1, "{a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11}", "io.debezium.data.Uuid",
     ["a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"]),
    ("jsonb", -1, '{"{\\"a\\": 1}"}', "io.debezium.data.Json", ['{"a": 1}']),
])
def test_typed_arrays_have_optional_named_items(element: str, typmod: int, text: str, items: str,
                                               value: list[object]) -> None:
    c = conv(array_of(builtin(element)), typmod)
    assert c.convert(text) == value
    assert c.schema["items"]["name"] == items
    assert c.schema["items"]["optional"] is True


def test_temporal_elements_go_through_java_sql_types() -> None:
    dates = conv(array_of(builtin("date")), origin="stream")
    assert dates.convert("{0044-03-15 BC,infinity,-infinity,0001-01-01,1582-10-04,12345-06-07}") == [
        -703383, -622191234, -625821272, -719162, -141438, 3789548]
    stamps = conv(array_of(builtin("timestamp")))
    assert stamps.convert('{"0044-03-15 12:00:00.5 BC","1582-10-04 10:00:00",infinity,-infinity,'
                          '"0001-01-01 00:00:00","12345-01-01 00:00:00","1969-12-31 23:59:59.999999"}') == [
        -63517953599500000, -12219343200000000, 9223372036825200000, -9223372036832400000, -62135769600000000,
        327403382400000000, -1]
    zoned = conv(array_of(builtin("timestamptz")))
    assert zoned.convert('{"0044-03-15 12:00:00.5+00 BC","1582-10-04 10:00:00+00",infinity,-infinity}') == [
        "0044-03-15T12:00:00.500000Z", "1582-10-04T10:00:00.000000Z", "infinity", "+292269055-12-02T23:00:00.000000Z"]
    times = conv(array_of(builtin("timetz")))
    assert times.convert("{23:59:59.999-08,00:00:00.5+00,12:00:00+05:30,NULL,24:00:00+00}") == [
        "07:59:59Z", "00:00:00Z", "06:30:00Z", None, "00:00:00Z"]


def test_bytea_uuid_and_bigint_array_placeholders() -> None:
    assert conv(array_of(builtin("bytea"))).convert('{"\\\\x0a0b",NULL}') == ["Cgs=", None]
    assert conv(array_of(builtin("bytea"))).unavailable == ["X19kZWJleml1bV91bmF2YWlsYWJsZV92YWx1ZQ=="]
    assert conv(array_of(builtin("uuid"))).unavailable == ["b68a35a7-17ad-35b3-af2a-ae46edb4545a"]
    assert conv(array_of(builtin("int8"))).unavailable == PLACEHOLDER_BYTES
    assert conv(array_of(builtin("date"))).unavailable == PLACEHOLDER_BYTES
    assert conv(array_of(builtin("float8"))).unavailable == ["__debezium_unavailable_value"]


def test_generic_arrays_have_required_items() -> None:
    moods = conv(array_of(enum("mood", "ok", "sad")))
    assert moods.schema["items"] == {"type": "string", "optional": False, "name": "io.debezium.data.Enum",
                                     "version": 1, "parameters": {"allowed": "ok,sad"}}
    assert moods.convert("{ok,sad}") == ["ok", "sad"]
    tsv = conv(array_of(builtin("tsvector")))
    assert tsv.schema["items"]["optional"] is False
    citext = conv(array_of(extension("citext")))
    assert citext.schema["items"] == {"type": "string", "optional": True}
    hstores = conv(array_of(extension("hstore")))
    assert hstores.convert('{"\\"a\\"=>\\"1\\""}') == ['{"a":"1"}']


def test_varchar_and_char_arrays() -> None:
    assert conv(array_of(builtin("varchar")), varchar_typmod(5)).convert("{ab,cd}") == ["ab", "cd"]
    assert conv(array_of(builtin("bpchar")), varchar_typmod(3)).convert('{"a  ",bcd}') == ["a  ", "bcd"]


@pytest.mark.parametrize("element", ["money", "name", "interval", "varbit", "xml", "point", "bit", "refcursor"])
def test_arrays_debezium_leaves_out(element: str) -> None:
    s = ConverterSettings(include_unknown_datatypes=True)
    assert converter_for(column(array_of(builtin(element))), s) is None


def test_arrays_of_unknown_elements_need_include_unknown_datatypes() -> None:
    short = domain("short_text", builtin("varchar"), varchar_typmod(5))
    assert converter_for(column(array_of(short)), ConverterSettings()) is None
    c = conv(array_of(short), settings=ConverterSettings(include_unknown_datatypes=True))
    assert c.schema["items"] == {"type": "bytes", "optional": False}
    assert c.convert("{ab}") == ["YWI="]
    boxes = conv(array_of(builtin("box")), settings=ConverterSettings(include_unknown_datatypes=True))
    assert boxes.convert("{(3,4),(1,2);(7,8),(5,6)}") == [
        "KDMuMCw0LjApLCgxLjAsMi4wKQ==", "KDcuMCw4LjApLCg1LjAsNi4wKQ=="]
