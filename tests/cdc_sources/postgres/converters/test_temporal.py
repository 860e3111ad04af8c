"""Expected values were produced by Debezium 3.6.3's own converters on the same text."""

from __future__ import annotations

import pytest

from cdc_sources.postgres.converters import ConverterSettings, ValueConversionError
from tests.cdc_sources.postgres.converters.pgtypes import conv, convert

DATES = ["2020-01-31", "infinity", "-infinity", "0044-03-15 BC", "12345-06-07", "1970-01-01", "0001-01-01"]


def _dates(origin: str, **settings: object) -> list[object]:
    c = conv("date", settings=ConverterSettings(**settings), origin=origin)  # type: ignore[arg-type]
    return [c.convert(text) for text in DATES]


def test_date_streamed_as_epoch_days() -> None:
    assert _dates("stream") == [18292, -2147472692, -2147472691, -735160, 3789548, 0, -719162]
    assert _dates("stream", time_precision_mode="connect") == _dates("stream")


def test_date_snapshot_goes_through_java_sql_date() -> None:
    assert _dates("snapshot") == [18292, -622191234, -625821272, -703383, 3789548, 0, -719162]


def test_date_isostring() -> None:
    assert _dates("stream", time_precision_mode="isostring") == [
        "2020-01-31Z", "-5877611-06-21Z", "-5877611-06-22Z", "-0043-03-15Z", "+12345-06-07Z", "1970-01-01Z",
        "0001-01-01Z"]
    assert _dates("snapshot", time_precision_mode="isostring")[1:4] == [
        "+292278994-08-16Z", "+292269055-12-02Z", "0044-03-15Z"]


@pytest.mark.parametrize(("mode", "name", "kind"), [
    ("adaptive", "io.debezium.time.Date", "int32"), ("connect", "org.apache.kafka.connect.data.Date", "int32"),
    ("isostring", "io.debezium.time.IsoDate", "string"), ("nanoseconds", "io.debezium.time.Date", "int32"),
])
def test_date_schema(mode: str, name: str, kind: str) -> None:
    schema = conv("date", settings=ConverterSettings(time_precision_mode=mode)).schema  # type: ignore[arg-type]
    assert schema == {"type": kind, "optional": True, "name": name, "version": 1, "field": "c"}


TIMES = ["04:05:06.789012", "24:00:00", "00:00:00", "23:59:59.999999"]


@pytest.mark.parametrize(("mode", "typmod", "name", "values"), [
    ("adaptive", -1, "io.debezium.time.MicroTime", [14706789012, 86400000000, 0, 86399999999]),
    ("adaptive", 3, "io.debezium.time.Time", [14706789, 86400000, 0, 86399999]),
    ("adaptive_time_microseconds", 3, "io.debezium.time.MicroTime", [14706789012, 86400000000, 0, 86399999999]),
    ("microseconds", 0, "io.debezium.time.MicroTime", [14706789012, 86400000000, 0, 86399999999]),
    ("nanoseconds", -1, "io.debezium.time.NanoTime", [14706789012000, 86400000000000, 0, 86399999999000]),
    ("connect", -1, "org.apache.kafka.connect.data.Time", [14706789, 86400000, 0, 86399999]),
    ("isostring", -1, "io.debezium.time.IsoTime", ["04:05:06.789012Z", "00:00:00Z", "00:00:00Z", "23:59:59.999999Z"]),
])
def test_time(mode: str, typmod: int, name: str, values: list[object]) -> None:
    c = conv("time", typmod, ConverterSettings(time_precision_mode=mode))  # type: ignore[arg-type]
    assert [c.convert(t) for t in TIMES] == values
    assert c.schema["name"] == name


TIMESTAMPS = ["2018-06-20 15:13:16.945104", "infinity", "-infinity", "0044-03-15 12:00:00.5 BC",
              "12345-01-01 00:00:00", "1969-12-31 23:59:59.999999", "1677-09-21 00:12:43.145224"]


@pytest.mark.parametrize(("mode", "typmod", "name", "values"), [
    ("adaptive", -1, "io.debezium.time.MicroTimestamp", [
        1529507596945104, 9223372036825200000, -9223372036832400000, -63517780799500000, 327403382400000000, -1,
        -9223372036854776]),
    ("adaptive", 3, "io.debezium.time.Timestamp", [
        1529507596945, 9223372036825200, -9223372036832400, -63517780799500, 327403382400000, -1, -9223372036855]),
    ("connect", -1, "org.apache.kafka.connect.data.Timestamp", [
        1529507596945, 9223372036825200, -9223372036832400, -63517780799500, 327403382400000, -1, -9223372036855]),
    ("nanoseconds", -1, "io.debezium.time.NanoTimestamp", [
        1529507596945104000, 9223372036854775807, -9223372036854775808, None, None, -1000, None]),
    ("isostring", -1, "io.debezium.time.IsoTimestamp", [
        "2018-06-20T15:13:16.945104Z", "+294247-01-10T04:00:25.2Z", "-290308-12-21T19:59:27.6Z",
        "-0043-03-15T12:00:00.5Z", "+12345-01-01T00:00:00Z", "1969-12-31T23:59:59.999999Z",
        "1677-09-21T00:12:43.145224Z"]),
])
def test_timestamp(mode: str, typmod: int, name: str, values: list[object]) -> None:
    c = conv("timestamp", typmod, ConverterSettings(time_precision_mode=mode))  # type: ignore[arg-type]
    assert [c.convert(t) for t in TIMESTAMPS] == values
    assert (c.schema["name"], c.schema["version"]) == (name, 1)


def test_nanosecond_timestamps_keep_null_in_not_null_columns() -> None:
    c = conv("timestamp", settings=ConverterSettings(time_precision_mode="nanoseconds"), nullable=False)
    assert c.null_value is None
    assert conv("timestamp", nullable=False).null_value == 0


@pytest.mark.parametrize(("typmod", "values"), [
    (-1, ["2018-06-20T13:13:16.945100Z", "infinity", "-infinity", "2018-06-20T15:13:16.000000Z",
          "-0043-03-15T12:00:00.000000Z", "+12345-01-01T00:00:00.000000Z", "1900-01-01T00:00:00.000000Z"]),
    (3, ["2018-06-20T13:13:16.945Z", "infinity", "-infinity", "2018-06-20T15:13:16.000Z",
         "-0043-03-15T12:00:00.000Z", "+12345-01-01T00:00:00.000Z", "1900-01-01T00:00:00.000Z"]),
    (0, ["2018-06-20T13:13:16.9451Z", "infinity", "-infinity", "2018-06-20T15:13:16Z", "-0043-03-15T12:00:00Z",
         "+12345-01-01T00:00:00Z", "1900-01-01T00:00:00Z"]),
])
def test_timestamptz_has_exactly_the_column_precision_in_fraction_digits(typmod: int, values: list[str]) -> None:
    texts = ["2018-06-20 15:13:16.9451+02", "infinity", "-infinity", "2018-06-20 15:13:16+00",
             "0044-03-15 12:00:00+00 BC", "12345-01-01 00:00:00+00", "1900-01-01 00:00:00+00"]
    c = conv("timestamptz", typmod)
    assert [c.convert(t) for t in texts] == values
    assert c.schema == {"type": "string", "optional": True, "name": "io.debezium.time.ZonedTimestamp",
                        "version": 1, "field": "c"}


def test_timestamptz_ignores_time_precision_mode() -> None:
    assert convert("timestamptz", "2018-06-20 15:13:16.5+00", time_precision_mode="connect") == (
        "2018-06-20T15:13:16.500000Z")


def test_timetz() -> None:
    c = conv("timetz")
    assert [c.convert(t) for t in ["04:05:06.789-08", "23:30:00+05:30", "00:00:00+00", "12:00:00.1+14"]] == [
        "12:05:06.789Z", "18:00:00Z", "00:00:00Z", "22:00:00.1Z"]
    assert c.schema["name"] == "io.debezium.time.ZonedTime"
    with pytest.raises(ValueConversionError):
        c.convert("24:00:00+00")


def test_fallbacks_for_not_null_columns() -> None:
    assert conv("timestamptz", nullable=False).null_value == "1970-01-01T00:00:00Z"
    assert conv("timetz", nullable=False).null_value == "00:00:00Z"
    iso = ConverterSettings(time_precision_mode="isostring")
    assert conv("date", settings=iso, nullable=False).null_value == "1970-01-01Z"
    assert conv("time", settings=iso, nullable=False).null_value == "00:00:00Z"
    assert conv("timestamp", settings=iso, nullable=False).null_value == "1970-01-01T00:00:00Z"
