"""Expected values were produced by Debezium 3.6.3's own converters on the same text."""

from __future__ import annotations

import pytest

from cdc_sources.postgres.converters import ConverterSettings, ValueConversionError
from cdc_sources.postgres.converters.decimals import parse_money, unscaled
from tests.cdc_sources.postgres.converters.pgtypes import conv, convert, numeric_typmod

UNCONSTRAINED = ["1.500", "0", "-0.001", "100", "12345678901234567890.123456789", "-0.50", "0.000",
                 "0.00000000000000000001"]


def test_unconstrained_numeric_is_a_variable_scale_decimal() -> None:
    c = conv("numeric")
    assert [c.convert(t) for t in UNCONSTRAINED] == [
        {"scale": 1, "value": "Dw=="}, {"scale": 0, "value": "AA=="}, {"scale": 3, "value": "/w=="},
        {"scale": 0, "value": "ZA=="}, {"scale": 9, "value": "J+QbMka+ybFuOYEV"}, {"scale": 1, "value": "+w=="},
        {"scale": 0, "value": "AA=="}, {"scale": 20, "value": "AQ=="}]
    assert c.schema == {
        "type": "struct",
        "fields": [{"type": "int32", "optional": False, "field": "scale"},
                   {"type": "bytes", "optional": False, "field": "value"}],
        "optional": True, "name": "io.debezium.data.VariableScaleDecimal", "version": 1,
        "doc": "Variable scaled decimal", "field": "c"}


def test_constrained_numeric_is_a_decimal() -> None:
    c = conv("numeric", numeric_typmod(10, 2))
    assert [c.convert(t) for t in ["1.50", "-99999999.99", "0.00", "0.01", "-0.01"]] == [
        "AJY=", "/av0HAE=", "AA==", "AQ==", "/w=="]
    assert c.schema == {"type": "bytes", "optional": True, "name": "org.apache.kafka.connect.data.Decimal",
                        "version": 1, "parameters": {"scale": "2", "connect.decimal.precision": "10"}, "field": "c"}
    assert convert("numeric", "1234567890123456789012345678.0123456789", numeric_typmod(38, 10)) == (
        "CUmw9vACMxPESZBOzGdFFQ==")


@pytest.mark.parametrize("text", ["NaN", "Infinity", "-Infinity"])
@pytest.mark.parametrize("typmod", [-1, numeric_typmod(10, 2)])
def test_special_values_fail_in_precise_mode(text: str, typmod: int) -> None:
    with pytest.raises(ValueConversionError, match=r"decimal\.handling\.mode"):
        convert("numeric", text, typmod)


def test_string_mode() -> None:
    s = ConverterSettings(decimal_handling_mode="string")
    c = conv("numeric", settings=s)
    assert [c.convert(t) for t in UNCONSTRAINED] == UNCONSTRAINED
    assert [c.convert(t) for t in ["NaN", "Infinity", "-Infinity"]] == ["NAN", "POSITIVE_INFINITY", "NEGATIVE_INFINITY"]
    assert c.schema == {"type": "string", "optional": True, "field": "c"}
    assert conv("numeric", numeric_typmod(10, 2), s, nullable=False).null_value == "0.00"
    assert conv("numeric", settings=s, nullable=False).null_value == "0"


def test_double_mode() -> None:
    c = conv("numeric", settings=ConverterSettings(decimal_handling_mode="double"))
    assert [c.convert(t) for t in ["1.500", "12345678901234567890.123456789", "NaN", "-Infinity"]] == [
        1.5, 1.2345678901234567e19, "NaN", "-Infinity"]
    assert c.schema == {"type": "double", "optional": True, "field": "c"}


def test_not_null_fallbacks() -> None:
    assert conv("numeric", nullable=False).null_value == {"scale": 0, "value": "AA=="}
    assert conv("numeric", numeric_typmod(5, 2), nullable=False).null_value == "AA=="


MONEY = ["$1,234.56", "-$1,234.56", "$0.00", "$92,233,720,368,547,758.07", "-$92,233,720,368,547,758.08"]


def test_money_precise_uses_the_fraction_digits_setting() -> None:
    c = conv("money")
    assert [c.convert(t) for t in MONEY] == ["AeJA", "/h3A", "AA==", "f/////////8=", "gAAAAAAAAAA="]
    assert c.schema == {"type": "bytes", "optional": True, "name": "org.apache.kafka.connect.data.Decimal",
                        "version": 1, "parameters": {"scale": "2"}, "field": "c"}
    one = conv("money", settings=ConverterSettings(money_fraction_digits=1))
    assert one.convert("$0.05") == "AQ=="  # 0.1, rounded half up
    assert one.schema["parameters"] == {"scale": "1"}


def test_money_double_and_string() -> None:
    assert [convert("money", t, decimal_handling_mode="double") for t in MONEY[:3]] == [1234.56, -1234.56, 0.0]
    assert [convert("money", t, decimal_handling_mode="string") for t in MONEY] == [
        "1234.56", "-1234.56", "0.00", "92233720368547758.07", "-92233720368547758.08"]
    s = ConverterSettings(decimal_handling_mode="string", money_fraction_digits=0)
    assert conv("money", settings=s, nullable=False).null_value == "0"


def test_parse_money_forms() -> None:
    assert str(parse_money("($5.00)")) == "-5.00"
    with pytest.raises(ValueConversionError, match="lc_monetary=C"):
        parse_money("1.234,56 EUR")


def test_unscaled() -> None:
    assert unscaled("1.5", 3) == 1500
    assert unscaled("-2", 2) == -200
    assert unscaled("1.500", 1) == 15
    with pytest.raises(ValueConversionError):
        unscaled("1.55", 1)
