"""Temporal codecs: Debezium ``io.debezium.time.*`` and Kafka Connect Date/Time/Timestamp.

Silver types:

* dates (``Date``, ``IsoDate``, Connect ``Date``) -> DATE;
* timestamps without time zone (``Timestamp`` ms, ``MicroTimestamp`` µs, ``NanoTimestamp`` ns,
  ``IsoTimestamp``, Connect ``Timestamp``) -> TIMESTAMP holding the wall-clock value as UTC
  (Debezium encodes them "as if UTC"); ``ZonedTimestamp`` (an ISO string in UTC) -> TIMESTAMP;
* times of day (``Time`` ms, ``MicroTime`` µs, ``NanoTime`` ns, Connect ``Time``) -> STRING
  ``HH:MM:SS.ffffff`` (Delta has no TIME type), ``-`` first and hours past 23 for MySQL
  ``TIME`` durations (-838:59:59 to 838:59:59); ``ZonedTime`` and ``IsoTime`` stay strings;
* ``MicroDuration`` -> BIGINT microseconds, ``Interval`` -> STRING (ISO-8601), ``Year`` -> INT.

PostgreSQL ``infinity``/``-infinity`` timestamps and dates (and anything else beyond Spark's
range, 0001-01-01 to 9999-12-31) become the largest/smallest representable value.
"""

from __future__ import annotations

from collections.abc import Callable

from pyspark.sql import Column
from pyspark.sql import functions as sf
from pyspark.sql.types import DataType, DateType, LongType, StringType, TimestampType

from silver.types.codec import Codec, LeafCodec

__all__ = ["TEMPORAL_CODECS"]

_MIN_US = -62135596800 * 1_000_000  # 0001-01-01T00:00:00
_MAX_US = 253402300799 * 1_000_000 + 999_999  # 9999-12-31T23:59:59.999999
_MIN_DAYS = -719162
_MAX_DAYS = 2932896


def _clamp(value: Column, low: int, high: int) -> Column:
    """``value`` limited to [low, high]; null stays null (least/greatest skip nulls)."""
    return sf.when(value.isNotNull(), sf.least(sf.greatest(value, sf.lit(low)), sf.lit(high)))


def _timestamp_from_micros(us: Column) -> Column:
    return sf.timestamp_micros(_clamp(us, _MIN_US, _MAX_US))


def _scaled_micros(unit_per_us: int, multiply: bool) -> Callable[[Column], Column]:
    def fn(raw: Column) -> Column:
        n = raw.try_cast("bigint")
        if multiply:
            # avoid bigint overflow for ±infinity in ms: clamp before scaling
            n = _clamp(n, _MIN_US // unit_per_us, _MAX_US // unit_per_us) * unit_per_us
        else:  # exact integer division (a double cannot hold every int64)
            n = sf.floor(n.cast("decimal(20,0)") / sf.lit(unit_per_us).cast("decimal(20,0)")).cast("bigint")
        return _timestamp_from_micros(n)
    return fn


def _date_from_days(raw: Column) -> Column:
    days = raw.try_cast("int")
    return sf.date_from_unix_date(_clamp(days, _MIN_DAYS, _MAX_DAYS))


def _time_text(unit_per_us: int, multiply: bool) -> Callable[[Column], Column]:
    """``[-]HH:MM:SS.ffffff``; hours may exceed 23 and the value may be negative (MySQL ``TIME``
    spans -838:59:59 to 838:59:59)."""
    def fn(raw: Column) -> Column:
        n = raw.try_cast("bigint")
        magnitude = sf.abs(n)
        us = magnitude * unit_per_us if multiply else sf.floor(magnitude / unit_per_us).cast("bigint")
        hours = sf.floor(us / 3_600_000_000).cast("bigint")
        minutes = sf.floor(sf.pmod(us, sf.lit(3_600_000_000)) / 60_000_000).cast("bigint")
        seconds = sf.floor(sf.pmod(us, sf.lit(60_000_000)) / 1_000_000).cast("bigint")
        frac = sf.pmod(us, sf.lit(1_000_000))
        text = sf.format_string("%02d:%02d:%02d.%06d", hours, minutes, seconds, frac)
        return sf.when(n < 0, sf.concat(sf.lit("-"), text)).when(n.isNotNull(), text)
    return fn


def _iso_date(raw: Column) -> Column:
    return sf.regexp_replace(raw, "Z$", "").try_cast(DateType())


def _iso_timestamp(raw: Column) -> Column:
    return (sf.when(raw == "infinity", sf.timestamp_micros(sf.lit(_MAX_US)))
            .when(raw == "-infinity", sf.timestamp_micros(sf.lit(_MIN_US)))
            .otherwise(raw.try_cast(TimestampType())))


def _leaf(target: DataType, name: str, fn: Callable[[Column], Column] | None) -> Codec:
    return LeafCodec(target, name, fn)


_TS = TimestampType()
_STR = StringType()

TEMPORAL_CODECS: dict[str, Codec] = {
    "io.debezium.time.Date": _leaf(DateType(), "date_days", _date_from_days),
    "org.apache.kafka.connect.data.Date": _leaf(DateType(), "date_days", _date_from_days),
    "io.debezium.time.Time": _leaf(_STR, "time_ms", _time_text(1000, True)),
    "org.apache.kafka.connect.data.Time": _leaf(_STR, "time_ms", _time_text(1000, True)),
    "io.debezium.time.MicroTime": _leaf(_STR, "time_us", _time_text(1, True)),
    "io.debezium.time.NanoTime": _leaf(_STR, "time_ns", _time_text(1000, False)),
    "io.debezium.time.Timestamp": _leaf(_TS, "ts_ms", _scaled_micros(1000, True)),
    "org.apache.kafka.connect.data.Timestamp": _leaf(_TS, "ts_ms", _scaled_micros(1000, True)),
    "io.debezium.time.MicroTimestamp": _leaf(_TS, "ts_us", _scaled_micros(1, True)),
    "io.debezium.time.NanoTimestamp": _leaf(_TS, "ts_ns", _scaled_micros(1000, False)),
    "io.debezium.time.ZonedTimestamp": _leaf(_TS, "ts_iso", _iso_timestamp),
    "io.debezium.time.IsoTimestamp": _leaf(_TS, "ts_iso", _iso_timestamp),
    "io.debezium.time.IsoDate": _leaf(DateType(), "date_iso", _iso_date),
    "io.debezium.time.ZonedTime": _leaf(_STR, "string", None),
    "io.debezium.time.IsoTime": _leaf(_STR, "string", None),
    "io.debezium.time.Interval": _leaf(_STR, "string", None),
    "io.debezium.time.MicroDuration": _leaf(LongType(), "bigint", lambda raw: raw.try_cast("bigint")),
}
"""Codecs keyed by Kafka Connect logical type name."""
