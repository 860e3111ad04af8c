from __future__ import annotations

import pytest

from cdc_sources.mysql.converters import MySqlConverterSettings
from cdc_sources.spi import ConfigError


def test_defaults_are_debeziums() -> None:
    s = MySqlConverterSettings()
    assert (s.decimal_handling_mode, s.time_precision_mode, s.bigint_unsigned_handling_mode,
            s.binary_handling_mode, s.enable_time_adjuster, s.include_schema_comments,
            s.event_converting_failure_handling_mode) == (
        "precise", "adaptive_time_microseconds", "long", "bytes", True, False, "warn")


def test_adaptive_is_refused_like_debezium_does_for_mysql() -> None:
    with pytest.raises(ConfigError) as caught:
        MySqlConverterSettings(time_precision_mode="adaptive")  # type: ignore[arg-type]
    [problem] = caught.value.problems
    assert problem.path == "time.precision.mode"
    assert "no longer supported" in problem.message


def test_every_bad_option_is_reported() -> None:
    with pytest.raises(ConfigError) as caught:
        MySqlConverterSettings(decimal_handling_mode="exact", binary_handling_mode="b64",  # type: ignore[arg-type]
                               bigint_unsigned_handling_mode="short",  # type: ignore[arg-type]
                               enable_time_adjuster="yes")  # type: ignore[arg-type]
    paths = [p.path for p in caught.value.problems]
    assert paths == ["decimal.handling.mode", "bigint.unsigned.handling.mode", "binary.handling.mode",
                     "enable.time.adjuster"]
    assert "valid values: precise, double, string" in caught.value.problems[0].message
