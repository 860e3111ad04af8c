from __future__ import annotations

import pytest

from cdc_sources.postgres.converters import ConverterSettings, ValueConversionError
from cdc_sources.postgres.converters.interval import duration_micros, iso_string, parse_interval
from tests.cdc_sources.postgres.converters.pgtypes import conv, convert

# (iso_8601 text, MicroDuration, Interval string), as Debezium 3.6.3 renders the same values.
CASES = [
    ("P1Y2M3DT4H5M6.78S", 37091106780000, "P1Y2M3DT4H5M6.78S"),
    ("P-1Y-2M3DT-4H-5M-6.78S", -36572706780000, "P-1Y-2M3DT-4H-5M-6.78S"),
    ("PT0S", 0, "P0Y0M0DT0H0M0S"),
    ("PT0.000001S", 1, "P0Y0M0DT0H0M0.000001S"),
    ("P-178000000Y", -9223372036854775808, "P-178000000Y0M0DT0H0M0S"),
    ("PT1000000H", 3600000000000000, "P0Y0M0DT1000000H0M0S"),
    ("P1DT-1S", 86399000000, "P0Y0M1DT0H0M-1S"),
    ("PT-0.5S", -500000, "P0Y0M0DT0H0M-0.5S"),
    ("PT1M40S", 100000000, "P0Y0M0DT0H1M40S"),
    ("PT1.123456S", 1123456, "P0Y0M0DT0H0M1.123456S"),
    ("P1Y1M", 34187400000000, "P1Y1M0DT0H0M0S"),
]


@pytest.mark.parametrize(("text", "micros", "iso"), CASES)
def test_interval_modes(text: str, micros: int, iso: str) -> None:
    assert convert("interval", text) == micros
    assert convert("interval", text, interval_handling_mode="string") == iso


def test_schemas_and_fallbacks() -> None:
    numeric = conv("interval", nullable=False)
    assert numeric.schema == {"type": "int64", "optional": False, "name": "io.debezium.time.MicroDuration",
                              "version": 1, "field": "c"}
    assert numeric.null_value == 0
    string = conv("interval", settings=ConverterSettings(interval_handling_mode="string"), nullable=False)
    assert string.schema["name"] == "io.debezium.time.Interval"
    assert string.null_value == "P0Y0M0DT0H0M0S"


def test_parse_fields_like_pginterval() -> None:
    assert parse_interval("P-1Y-2M3DT-4H-5M-6.78S") == (-1, -2, 3, -4, -5, -6.78)
    assert parse_interval("epoch") == (0, 0, 0, 0, 0, 0.0)
    assert duration_micros((0, 1, 0, 0, 0, 0.0)) == 2629800000000  # 365.25 / 12 days
    assert iso_string((0, 0, 0, 0, 0, 1e-10)) == "P0Y0M0DT0H0M0S"


def test_postgres_style_is_rejected() -> None:
    with pytest.raises(ValueConversionError, match="IntervalStyle=iso_8601"):
        convert("interval", "1 year 2 mons")
