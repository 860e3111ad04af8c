"""DATE, TIME, TIMETZ, TIMESTAMP and TIMESTAMPTZ under every ``time.precision.mode``.

TIMESTAMP is read as UTC, TIMESTAMPTZ becomes an ``io.debezium.time.ZonedTimestamp`` string in
UTC with exactly as many fraction digits as the column's precision, and the infinities become
pgjdbc's magic values (see each factory). Values Debezium reads through ``java.sql`` classes
(snapshot DATEs, temporal array elements) take the ``legacy`` variants, see `javasql`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from cdc_sources.common import kschema as ks
from cdc_sources.postgres.converters import javasql
from cdc_sources.postgres.converters.model import ColumnType, Convert, TypeMapping
from cdc_sources.postgres.converters.settings import ConverterSettings
from cdc_sources.postgres.converters.temporal_text import (
    NANOS_PER_DAY,
    iso_date,
    iso_datetime,
    iso_time,
    parse_date,
    parse_time_nanos,
    parse_timestamp_micros,
    parse_timestamptz_nanos,
    parse_timetz_utc_nanos,
)
from cdc_sources.postgres.converters.temporal_text import civil_from_days as _civil

# PGStatement.DATE_POSITIVE/NEGATIVE_INFINITY read as microseconds (Debezium's streaming path).
TS_POS_INF_MICROS = 9_223_372_036_825_200_000
TS_NEG_INF_MICROS = -9_223_372_036_832_400_000
# Debezium maps 'infinity'/'-infinity' dates to LocalDate -5877611-06-21 / -5877611-06-22.
DATE_POS_INF_DAYS = -2_147_472_692
DATE_NEG_INF_DAYS = -2_147_472_691
_LONG_MIN, _LONG_MAX = -(2**63), 2**63 - 1

_DEBEZIUM_TIME = "io.debezium.time."


def _dbz(kind: str, name: str) -> ks.Schema:
    return ks.logical(kind, _DEBEZIUM_TIME + name)


def _with_infinity(finite: Convert, pos: Any, neg: Any) -> Convert:
    def convert(text: str) -> Any:
        if text[-1] == "y":  # 'infinity' / '-infinity'
            if text == "infinity":
                return pos
            if text == "-infinity":
                return neg
        return finite(text)
    return convert


def date_mapping(col: ColumnType, settings: ConverterSettings, *, legacy: bool = False) -> TypeMapping:
    """DATE: epoch days (``Date`` / Kafka ``Date``) or ``IsoDate`` ``yyyy-MM-ddZ``.

    ``legacy``: the value goes through ``java.sql.Date`` (snapshots and array elements), see
    `javasql`; otherwise the infinities map to Debezium's streaming constants.
    """
    mode = settings.time_precision_mode
    if legacy:
        if mode == "isostring":
            return TypeMapping(_dbz("string", "IsoDate"),
                               lambda text: iso_date(*_civil(javasql.legacy_date_days(text))) + "Z", "1970-01-01Z")
        schema = ks.logical("int32", ks.CONNECT_DATE) if mode == "connect" else _dbz("int32", "Date")
        return TypeMapping(schema, lambda text: javasql.int32(javasql.legacy_date_days(text)), 0)
    if mode == "isostring":
        def iso(text: str) -> str:
            if len(text) == 10:  # yyyy-MM-dd, AD: already ISO
                return text + "Z"
            return iso_date(*_civil(parse_date(text))) + "Z"
        pos, neg = (iso_date(*_civil(d)) + "Z" for d in (DATE_POS_INF_DAYS, DATE_NEG_INF_DAYS))
        return TypeMapping(_dbz("string", "IsoDate"), _with_infinity(iso, pos, neg), "1970-01-01Z")
    schema = ks.logical("int32", ks.CONNECT_DATE) if mode == "connect" else _dbz("int32", "Date")
    return TypeMapping(schema, _with_infinity(parse_date, DATE_POS_INF_DAYS, DATE_NEG_INF_DAYS), 0)


def time_mapping(col: ColumnType, settings: ConverterSettings, *, millis_only: bool = False) -> TypeMapping:
    """TIME: milli/micro/nanoseconds past midnight, or ``IsoTime`` ``HH:mm:ss[.f]Z``.

    ``millis_only`` drops sub-millisecond digits first, as Debezium does for elements of TIME
    arrays (they pass through ``java.sql.Time``).
    """
    mode, precision = settings.time_precision_mode, col.time_precision
    nanos: Callable[[str], int] = _time_nanos_millis if millis_only else parse_time_nanos
    if mode == "isostring":
        def iso(text: str) -> str:
            return iso_time(nanos(text) % NANOS_PER_DAY) + "Z"
        return TypeMapping(_dbz("string", "IsoTime"), iso, "00:00:00Z")
    if mode == "connect" or (mode == "adaptive" and precision <= 3):
        schema = ks.logical("int32", ks.CONNECT_TIME) if mode == "connect" else _dbz("int32", "Time")
        return TypeMapping(schema, lambda text: nanos(text) // 1_000_000, 0)
    if mode == "nanoseconds":
        return TypeMapping(_dbz("int64", "NanoTime"), nanos, 0)
    return TypeMapping(_dbz("int64", "MicroTime"), lambda text: nanos(text) // 1000, 0)


def _time_nanos_millis(text: str) -> int:
    return parse_time_nanos(text) // 1_000_000 * 1_000_000


def timestamp_mapping(col: ColumnType, settings: ConverterSettings, *, legacy: bool = False) -> TypeMapping:
    """TIMESTAMP (read as UTC): epoch milli/micro/nanoseconds, or ``IsoTimestamp``.

    ``legacy``: the value goes through ``java.sql.Timestamp`` (array elements), see `javasql`.
    """
    mode, precision = settings.time_precision_mode, col.time_precision
    micros: Callable[[str], int] = javasql.legacy_timestamp_micros if legacy else parse_timestamp_micros
    if mode == "isostring":
        return TypeMapping(_dbz("string", "IsoTimestamp"), _iso_timestamp(micros, legacy), "1970-01-01T00:00:00Z")
    if mode == "nanoseconds":
        return TypeMapping(_dbz("int64", "NanoTimestamp"), _nano_timestamp(micros), 0, null_passthrough=True)
    millis = mode == "connect" or (mode in ("adaptive", "adaptive_time_microseconds") and precision <= 3)
    if millis:
        schema = ks.logical("int64", ks.CONNECT_TIMESTAMP) if mode == "connect" else _dbz("int64", "Timestamp")
        return TypeMapping(schema, _with_infinity(
            lambda text: micros(text) // 1000, TS_POS_INF_MICROS // 1000, TS_NEG_INF_MICROS // 1000), 0)
    return TypeMapping(_dbz("int64", "MicroTimestamp"),
                       _with_infinity(micros, TS_POS_INF_MICROS, TS_NEG_INF_MICROS), 0)


def _iso_timestamp(micros: Callable[[str], int], legacy: bool) -> Convert:
    def convert(text: str) -> str:
        if text == "infinity":
            return iso_datetime(TS_POS_INF_MICROS) + "Z"
        if text == "-infinity":
            return iso_datetime(TS_NEG_INF_MICROS) + "Z"
        if not legacy and text[4] == "-" and text[-1] != "C":
            return text[:10] + "T" + text[11:] + "Z"  # PostgreSQL already strips trailing zeros
        return iso_datetime(micros(text)) + "Z"
    return convert


def _nano_timestamp(micros: Callable[[str], int]) -> Convert:
    def convert(text: str) -> int | None:
        nanos = micros(text) * 1000
        if _LONG_MIN <= nanos <= _LONG_MAX:
            return nanos
        return None  # Debezium logs "outside the representable range" and emits null
    return _with_infinity(convert, _LONG_MAX, _LONG_MIN)


def timestamptz_mapping(col: ColumnType, settings: ConverterSettings, *, legacy: bool = False) -> TypeMapping:
    """TIMESTAMPTZ: ``ZonedTimestamp`` in UTC, ``infinity``/``-infinity`` kept as words.

    The fraction has exactly as many digits as the column's precision (Debezium formats with
    the column scale); precision 0 prints none. ``legacy``: array elements, which go through
    ``java.sql.Timestamp`` (the era is lost, see `javasql`).
    """
    width = col.scale if col.scale is not None else col.length
    width = width if 0 < width <= 9 else 0
    convert = _zoned_timestamp(width)
    if legacy:
        negative_infinity = javasql.TIMESTAMPTZ_NEG_INF + ("." + "0" * width if width else "") + "Z"
        modern = convert

        def convert(text: str) -> str:
            if text == "-infinity":
                return negative_infinity
            result: str = modern(text[:-3] if text.endswith(" BC") else text)
            return result
    return TypeMapping(_dbz("string", "ZonedTimestamp"), convert, "1970-01-01T00:00:00Z")


def _zoned_timestamp(width: int) -> Convert:
    zeros = "0" * width

    def slow(text: str) -> str:
        nanos = parse_timestamptz_nanos(text)
        return iso_datetime(nanos // 1000, width or None) + "Z"

    def convert(text: str) -> str:
        if text[-3:] == "+00" and text[4] == "-":
            if not width:
                return text[:10] + "T" + text[11:-3] + "Z"
            fraction = text[20:-3] if len(text) > 22 else ""
            return text[:10] + "T" + text[11:19] + "." + (fraction + zeros)[:width] + "Z"
        if text in ("infinity", "-infinity"):
            return text
        return slow(text)
    return convert


def timetz_mapping(col: ColumnType, settings: ConverterSettings, *, whole_seconds: bool = False) -> TypeMapping:
    """TIMETZ: ``ZonedTime`` ``HH:mm:ss[.f]Z``, shifted to UTC (the column precision is ignored).

    ``whole_seconds``: for TIMETZ array elements, which Debezium reads through ``java.sql.Time``:
    the fraction is dropped and ``24:00:00`` wraps to midnight.
    """
    if whole_seconds:
        def element(text: str) -> str:
            nanos = parse_timetz_utc_nanos(text, allow_end_of_day=True)
            return iso_time(nanos // 1_000_000_000 * 1_000_000_000) + "Z"
        return TypeMapping(_dbz("string", "ZonedTime"), element, "00:00:00Z")

    def convert(text: str) -> str:
        return iso_time(parse_timetz_utc_nanos(text)) + "Z"
    return TypeMapping(_dbz("string", "ZonedTime"), convert, "00:00:00Z")
