from __future__ import annotations

import pytest

from cdc_sources.postgres.converters import ConverterSettings
from tests.cdc_sources.postgres.converters.pgtypes import conv, enum, extension, varchar_typmod


@pytest.mark.parametrize(("name", "text"), [
    ("bpchar", "ab   "), ("varchar", "héllo"), ("text", 'a"b\\c\nd'), ("char", "x"), ("inet", "192.168.0.1/24"),
    ("cidr", "10.0.0.0/8"), ("macaddr", "08:00:2b:01:02:03"), ("macaddr8", "08:00:2b:01:02:03:04:05"),
    ("int4range", "[1,5)"), ("int8range", "empty"), ("numrange", "(1.5,2.5]"),
    ("tsrange", '["2020-01-01 00:00:00","2020-01-02 00:00:00")'), ("tstzrange", '["2019-12-31 22:00:00+00",)'),
    ("daterange", "[2020-01-01,2020-02-02)"),
])
def test_plain_strings_pass_through(name: str, text: str) -> None:
    c = conv(name, nullable=False)
    assert c.convert(text) == text
    assert c.schema == {"type": "string", "optional": False, "field": "c"}
    assert c.null_value == ""
    assert c.unavailable == "__debezium_unavailable_value"


@pytest.mark.parametrize(("name", "logical", "text"), [
    ("json", "io.debezium.data.Json", '{"a": 1,  "b":[1,2]}'), ("jsonb", "io.debezium.data.Json", '{"a": [1, 2]}'),
    ("xml", "io.debezium.data.Xml", "<a>b</a>"),
    ("uuid", "io.debezium.data.Uuid", "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"),
    ("tsvector", "io.debezium.data.Tsvector", "'a' 'cat' 'fat'"),
])
def test_named_strings(name: str, logical: str, text: str) -> None:
    c = conv(name)
    assert c.convert(text) == text
    assert c.schema == {"type": "string", "optional": True, "name": logical, "version": 1, "field": "c"}


def test_extension_strings() -> None:
    assert conv(extension("citext")).schema == {"type": "string", "optional": True, "field": "c"}
    assert conv(extension("isbn")).convert("978-0-393-04002-9") == "978-0-393-04002-9"
    ltree = conv(extension("ltree"))
    assert ltree.schema["name"] == "io.debezium.data.Ltree"
    assert ltree.convert("Top.Science") == "Top.Science"


def test_enum_lists_its_labels() -> None:
    c = conv(enum("mood", "sad", "ok", "happy"))
    assert c.schema == {"type": "string", "optional": True, "name": "io.debezium.data.Enum", "version": 1,
                        "parameters": {"allowed": "sad,ok,happy"}, "field": "c"}
    assert c.convert("ok") == "ok"


def test_name_is_lost_when_streamed() -> None:
    assert conv("name").convert("n") == "n"
    assert conv("name", origin="stream").convert("n") is None
    assert conv("name", origin="stream", nullable=False).convert("n") == ""
    unknown = ConverterSettings(include_unknown_datatypes=True)
    assert conv("name", settings=unknown, origin="stream").convert("n") == "n"


def test_varchar_length_is_not_in_the_schema() -> None:
    assert conv("varchar", varchar_typmod(10)).schema == {"type": "string", "optional": True, "field": "c"}
