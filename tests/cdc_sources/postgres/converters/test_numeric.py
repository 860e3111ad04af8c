from __future__ import annotations

import pytest

from tests.cdc_sources.postgres.converters.pgtypes import conv, convert


@pytest.mark.parametrize(("name", "kind", "text", "value"), [
    ("int2", "int16", "-32768", -32768), ("int4", "int32", "2147483647", 2147483647),
    ("int8", "int64", "-9223372036854775808", -9223372036854775808), ("oid", "int64", "4294967295", 4294967295),
])
def test_integers(name: str, kind: str, text: str, value: int) -> None:
    c = conv(name)
    assert c.convert(text) == value
    assert c.schema == {"type": kind, "optional": True, "field": "c"}


@pytest.mark.parametrize(("text", "value"), [
    ("3.14", 3.14), ("NaN", "NaN"), ("Infinity", "Infinity"), ("-Infinity", "-Infinity"), ("1e+30", 1e30),
    ("-0", -0.0),
])
def test_real(text: str, value: object) -> None:
    assert convert("float4", text) == value


@pytest.mark.parametrize(("text", "value"), [
    ("0.1", 0.1), ("NaN", "NaN"), ("1e+300", 1e300), ("5e-324", 5e-324), ("-Infinity", "-Infinity"),
    ("123456789.125", 123456789.125),
])
def test_double(text: str, value: object) -> None:
    assert convert("float8", text) == value


def test_float_schemas_and_fallbacks() -> None:
    assert conv("float4", nullable=False).schema == {"type": "float", "optional": False, "field": "c"}
    assert conv("float8").schema == {"type": "double", "optional": True, "field": "c"}
    assert conv("float8", nullable=False).null_value == 0.0
    assert conv("int2", nullable=False).null_value == 0
