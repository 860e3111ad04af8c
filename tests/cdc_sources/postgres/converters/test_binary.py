from __future__ import annotations

import pytest

from cdc_sources.postgres.converters import ConverterSettings, ValueConversionError, converter_for
from tests.cdc_sources.postgres.converters.pgtypes import column, conv

PLACEHOLDER_B64 = "X19kZWJleml1bV91bmF2YWlsYWJsZV92YWx1ZQ=="


@pytest.mark.parametrize(("mode", "kind", "values", "unavailable"), [
    ("bytes", "bytes", ["Cgv/", "", "YWJj"], PLACEHOLDER_B64),
    ("base64", "string", ["Cgv/", "", "YWJj"], None),
    ("base64-url-safe", "string", ["Cgv_", "", "YWJj"], None),
    ("hex", "string", ["0a0bff", "", "616263"], "__debezium_unavailable_value"),
])
def test_bytea_modes(mode: str, kind: str, values: list[str], unavailable: object) -> None:
    c = conv("bytea", settings=ConverterSettings(binary_handling_mode=mode), nullable=False)  # type: ignore[arg-type]
    assert [c.convert(t) for t in ["\\x0a0bff", "\\x", "\\x616263"]] == values
    assert c.schema == {"type": kind, "optional": False, "field": "c"}
    assert c.unavailable == unavailable
    assert c.null_value == ""


def test_hex_placeholder_bytes() -> None:
    s = ConverterSettings(unavailable_value_placeholder="hex:00ff41")
    assert conv("bytea", settings=s).unavailable == "AP9B"
    assert conv("text", settings=s).unavailable == "\x00\ufffdA"


def test_escape_format_is_rejected() -> None:
    with pytest.raises(ValueConversionError, match="bytea_output=hex"):
        conv("bytea").convert("abc")
    with pytest.raises(ValueConversionError, match="bytea_output=hex"):
        conv("bytea", settings=ConverterSettings(binary_handling_mode="hex")).convert("abc")


def test_unknown_types_are_left_out_unless_asked_for() -> None:
    assert converter_for(column("tsquery"), ConverterSettings()) is None
    c = conv("tsquery", settings=ConverterSettings(include_unknown_datatypes=True))
    assert c.schema == {"type": "bytes", "optional": True, "field": "c"}
    assert c.convert("'fat' & 'rat'") == "J2ZhdCcgJiAncmF0Jw=="
    hexed = conv("tsquery", settings=ConverterSettings(include_unknown_datatypes=True, binary_handling_mode="hex"))
    assert hexed.convert("'a'") == "276127"
