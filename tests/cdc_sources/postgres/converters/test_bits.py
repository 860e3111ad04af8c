from __future__ import annotations

import pytest

from tests.cdc_sources.postgres.converters.pgtypes import conv, convert


def test_boolean() -> None:
    c = conv("bool", nullable=False)
    assert (c.convert("t"), c.convert("f")) == (True, False)
    assert c.schema == {"type": "boolean", "optional": False, "field": "c"}
    assert c.null_value is False


@pytest.mark.parametrize("name", ["bit", "varbit"])
def test_one_bit_is_a_boolean(name: str) -> None:
    c = conv(name, 1)
    assert c.schema == {"type": "boolean", "optional": True, "field": "c"}
    assert (c.convert("1"), c.convert("0")) == (True, False)


@pytest.mark.parametrize(("text", "value"), [
    ("1010000001", "gQI="), ("0000000000", ""), ("0000000001", "AQ=="), ("1111111111", "/wM="),
])
def test_bits_are_little_endian_and_sized_by_content(text: str, value: str) -> None:
    assert convert("bit", text, 10) == value


def test_bits_schema_carries_the_length() -> None:
    assert conv("bit", 10).schema == {"type": "bytes", "optional": True, "name": "io.debezium.data.Bits",
                                      "version": 1, "parameters": {"length": "10"}, "field": "c"}
    assert conv("varbit").schema["parameters"] == {"length": "2147483647"}
    assert conv("varbit", 5).schema["parameters"] == {"length": "5"}


@pytest.mark.parametrize(("text", "value"), [("101", "BQ=="), ("", ""), ("1", "AQ=="), ("0000000010000", "EA==")])
def test_varbit(text: str, value: str) -> None:
    assert convert("varbit", text) == value
