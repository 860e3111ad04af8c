from __future__ import annotations

import pytest

from cdc_sources.postgres.converters import ConverterSettings
from cdc_sources.spi import ConfigError


def test_defaults_are_debeziums() -> None:
    s = ConverterSettings()
    assert (s.decimal_handling_mode, s.time_precision_mode, s.binary_handling_mode) == ("precise", "adaptive", "bytes")
    assert (s.hstore_handling_mode, s.interval_handling_mode, s.money_fraction_digits) == ("json", "numeric", 2)
    assert s.unavailable_value_placeholder == "__debezium_unavailable_value"
    assert s.include_unknown_datatypes is False


def test_every_bad_option_is_reported_at_once() -> None:
    with pytest.raises(ConfigError) as info:
        ConverterSettings(decimal_handling_mode="exact", time_precision_mode="millis",  # type: ignore[arg-type]
                          money_fraction_digits=-1)
    paths = [p.path for p in info.value.attrs["problems"]]
    assert paths == ["decimal.handling.mode", "time.precision.mode", "money.fraction.digits"]
    assert "valid values: precise, double, string" in str(info.value)


def test_placeholder_text_and_bytes() -> None:
    s = ConverterSettings()
    assert s.placeholder_bytes == b"__debezium_unavailable_value"
    assert s.placeholder_text == "__debezium_unavailable_value"


def test_hex_placeholder_is_decoded_to_bytes() -> None:
    s = ConverterSettings(unavailable_value_placeholder="hex:c3a9ff")
    assert s.placeholder_bytes == b"\xc3\xa9\xff"
    assert s.placeholder_text == "é\ufffd"


def test_bad_hex_placeholder_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="not an even number of hex digits"):
        ConverterSettings(unavailable_value_placeholder="hex:abc")
