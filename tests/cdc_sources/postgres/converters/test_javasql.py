from __future__ import annotations

from cdc_sources.postgres.converters.javasql import (
    int32,
    julian_days_from_civil,
    legacy_date_days,
    legacy_timestamp_micros,
)


def test_int32_wraps_like_a_java_cast() -> None:
    assert int32(106_751_991_166) == -622_191_234
    assert int32(2**31) == -(2**31)
    assert int32(-5) == -5


def test_legacy_dates_lose_the_era_and_map_infinity_to_far_dates() -> None:
    assert int32(legacy_date_days("infinity")) == -622_191_234
    assert int32(legacy_date_days("-infinity")) == -625_821_272
    assert legacy_date_days("0044-03-15 BC") == -703_383  # read as 0044-03-15 AD
    assert legacy_date_days("2020-01-01") == 18_262


def test_legacy_timestamps_before_1582_are_julian() -> None:
    assert julian_days_from_civil(1582, 10, 4) == -141_428  # = Gregorian 1582-10-14
    assert legacy_timestamp_micros("1582-10-04 10:00:00") == -12_219_343_200_000_000
    assert legacy_timestamp_micros("0001-01-01 00:00:00") == -62_135_769_600_000_000
    assert legacy_timestamp_micros("0044-03-15 12:00:00.5 BC") == -63_517_953_599_500_000
    assert legacy_timestamp_micros("2018-06-20 15:13:16.945104") == 1_529_507_596_945_104
