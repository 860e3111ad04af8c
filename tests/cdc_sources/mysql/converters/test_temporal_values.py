from __future__ import annotations

import datetime

import pytest

from cdc_sources.mysql.converters.temporal_values import (
    TemporalTextError,
    civil_from_days,
    days_from_civil,
    fixed_fraction,
    iso_date,
    iso_datetime,
    parse_date_text,
    parse_datetime_text,
    parse_time_text,
)


def test_civil_days_round_trip_including_year_zero() -> None:
    for days in (-719528, -719162, -1, 0, 1, 10957, 2932896):
        assert days_from_civil(*civil_from_days(days)) == days
    assert days_from_civil(1970, 1, 1) == 0
    assert days_from_civil(2024, 2, 29) == (datetime.date(2024, 2, 29) - datetime.date(1970, 1, 1)).days
    assert civil_from_days(-719528) == (0, 1, 1)
    assert days_from_civil(2020, 2, 30) == days_from_civil(2020, 3, 1)  # lenient, like java.sql.Timestamp


def test_time_text_follows_debeziums_string_to_duration() -> None:
    assert parse_time_text("838:59:59") == 3_020_399_000_000
    assert parse_time_text("-838:59:59.000000") == -3_020_399_000_000
    assert parse_time_text("-00:30:00.5") == -1_800_500_000
    assert parse_time_text("-00:00:00") == 0
    assert parse_time_text("12:34") == 45_240_000_000
    with pytest.raises(TemporalTextError):
        parse_time_text("noon")


def test_date_and_datetime_text() -> None:
    assert parse_date_text("2020-00-10") is None and parse_date_text("0000-00-00") is None
    assert parse_date_text("0000-01-01") == (0, 1, 1)
    with pytest.raises(TemporalTextError):
        parse_date_text("2021-02-29")
    assert parse_datetime_text("2020-01-02 03:04:05.25") == (2020, 1, 2, 11_045_250_000)
    assert parse_datetime_text("2020-01-00 00:00:00") is None


def test_java_iso_formats() -> None:
    assert iso_date(-719528) == "0000-01-01"
    assert iso_date(days_from_civil(10000, 1, 1)) == "+10000-01-01"
    assert iso_datetime(1_500_000) == "1970-01-01T00:00:01.5"
    assert iso_datetime(-1) == "1969-12-31T23:59:59.999999"
    assert fixed_fraction(500_000, 3) == ".500" and fixed_fraction(1, 7) == ".0000010"
