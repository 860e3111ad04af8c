from __future__ import annotations

import pytest

from cdc_sources.postgres.converters import ValueConversionError
from cdc_sources.postgres.converters.temporal_text import (
    civil_from_days,
    days_from_civil,
    iso_date,
    iso_datetime,
    iso_time,
    parse_date,
    parse_time_nanos,
    parse_timestamp_micros,
    parse_timestamptz_nanos,
    parse_timetz_utc_nanos,
)


@pytest.mark.parametrize(("ymd", "days"), [
    ((1970, 1, 1), 0), ((2020, 1, 31), 18292), ((1900, 2, 28), -25509), ((1, 1, 1), -719162),
    ((-43, 3, 15), -735160), ((12345, 6, 7), 3789548), ((2000, 2, 29), 11016),
])
def test_proleptic_gregorian_round_trip(ymd: tuple[int, int, int], days: int) -> None:
    assert days_from_civil(*ymd) == days
    assert civil_from_days(days) == ymd


@pytest.mark.parametrize(("text", "days"), [
    ("2020-01-31", 18292), ("0044-03-15 BC", -735160), ("12345-06-07", 3789548), ("0001-01-01 BC", -719528),
])
def test_parse_date(text: str, days: int) -> None:
    assert parse_date(text) == days


def test_parse_date_rejects_other_datestyles() -> None:
    with pytest.raises(ValueConversionError, match="DateStyle=ISO"):
        parse_date("01/31/2020")


@pytest.mark.parametrize(("text", "nanos"), [
    ("04:05:06.789012", 14_706_789_012_000), ("24:00:00", 86_400_000_000_000), ("00:00:00", 0),
    ("23:59:59.999999999", 86_399_999_999_999), ("10:00:00.5", 36_000_500_000_000),
])
def test_parse_time(text: str, nanos: int) -> None:
    assert parse_time_nanos(text) == nanos


@pytest.mark.parametrize(("text", "micros"), [
    ("2018-06-20 15:13:16.945104", 1_529_507_596_945_104), ("1969-12-31 23:59:59.999999", -1),
    ("0044-03-15 12:00:00.5 BC", -63_517_780_799_500_000), ("12345-01-01 00:00:00", 327_403_382_400_000_000),
    ("1582-10-04 10:00:00", -12_220_207_200_000_000),
])
def test_parse_timestamp(text: str, micros: int) -> None:
    assert parse_timestamp_micros(text) == micros


def test_parse_timestamptz_applies_the_offset() -> None:
    assert parse_timestamptz_nanos("2020-01-01 10:00:00.5+02") == 1_577_865_600_500_000_000
    assert parse_timestamptz_nanos("2020-01-01 10:00:00-03:30") == 1_577_885_400_000_000_000
    assert parse_timestamptz_nanos("1900-01-01 00:00:00+00:53:28") == -2_208_992_008 * 10**9


def test_parse_timetz_shifts_to_utc() -> None:
    assert iso_time(parse_timetz_utc_nanos("04:05:06.789-08")) == "12:05:06.789"
    assert iso_time(parse_timetz_utc_nanos("23:30:00+05:30")) == "18:00:00"
    assert iso_time(parse_timetz_utc_nanos("12:00:00.1+14")) == "22:00:00.1"
    with pytest.raises(ValueConversionError, match="past 23:59:59"):
        parse_timetz_utc_nanos("24:00:00+00")
    assert parse_timetz_utc_nanos("24:00:00+00", allow_end_of_day=True) == 0


def test_iso_formatting() -> None:
    assert iso_date(12345, 1, 1) == "+12345-01-01"
    assert iso_date(-43, 3, 15) == "-0043-03-15"
    assert iso_date(5, 3, 15) == "0005-03-15"
    assert iso_time(3_723_400_000_000) == "01:02:03.4"
    assert iso_time(3_723_000_000_000, 3) == "01:02:03.000"
    assert iso_datetime(9_223_372_036_825_200_000) == "+294247-01-10T04:00:25.2"
    assert iso_datetime(-9_223_372_036_832_400_000) == "-290308-12-21T19:59:27.6"
