"""INTERVAL as ``io.debezium.time.MicroDuration`` (numeric mode) or ``io.debezium.time.Interval``.

Input is PostgreSQL's ``IntervalStyle=iso_8601`` output (``P1Y2M3DT4H5M6.78S``, each field
with its own sign). Debezium reads the same fields through pgjdbc's ``PGInterval`` (seconds as a
double) and computes the microseconds in double arithmetic with 365.25/12 days per month;
both are reproduced operation for operation, so large intervals round exactly as Debezium's do.
"""

from __future__ import annotations

import math
import re
from decimal import ROUND_DOWN, Decimal

from cdc_sources.common import kschema as ks
from cdc_sources.postgres.converters.model import ColumnType, TypeMapping, ValueConversionError
from cdc_sources.postgres.converters.settings import ConverterSettings

DAYS_PER_MONTH_AVG = 365.25 / 12.0
_LONG_MIN, _LONG_MAX = -(2**63), 2**63 - 1
_NANO = Decimal("1e-9")

_ISO_RE = re.compile(
    r"P(?:(-?\d+)Y)?(?:(-?\d+)M)?(?:(-?\d+)D)?"
    r"(?:T(?:(-?\d+)H)?(?:(-?\d+)M)?(?:(-?)(\d+)(?:\.(\d{1,6}))?S)?)?"
)

Fields = tuple[int, int, int, int, int, float]


def parse_interval(text: str) -> Fields:
    """(years, months, days, hours, minutes, seconds) as ``PGInterval`` holds them."""
    m = _ISO_RE.fullmatch(text)
    if m is None:
        if text == "epoch":  # Debezium's placeholder for function defaults
            return 0, 0, 0, 0, 0, 0.0
        raise ValueConversionError(
            f"cannot parse {text!r} as a PostgreSQL interval; the capture sessions must use "
            "IntervalStyle=iso_8601", kind="interval")
    years, months, days, hours, minutes = (int(g) if g else 0 for g in m.groups()[:5])
    whole = int(m[7]) if m[7] else 0
    micros = int(m[8].ljust(6, "0")) if m[8] else 0
    if m[6]:
        whole, micros = -whole, -micros
    return years, months, days, hours, minutes, whole + micros / 1_000_000


def duration_micros(fields: Fields) -> int:
    """``MicroDuration.durationMicros``: double arithmetic, truncated and saturated like ``(long)``."""
    years, months, days, hours, minutes, seconds = fields
    number_of_days = (years * 12 + months) * DAYS_PER_MONTH_AVG + days
    number_of_seconds = (((number_of_days * 24 + hours) * 60) + minutes) * 60 + seconds
    value = number_of_seconds * 1e6
    if math.isnan(value):
        return 0
    if value >= 9.223372036854775807e18:
        return _LONG_MAX
    if value <= -9.223372036854775808e18:
        return _LONG_MIN
    return int(value)


def iso_string(fields: Fields) -> str:
    """``Interval.toIsoString``: ``P<y>Y<m>M<d>DT<h>H<m>M<s>S``, seconds without trailing zeros."""
    years, months, days, hours, minutes, seconds = fields
    sec = Decimal(repr(seconds))
    exponent = sec.as_tuple().exponent
    if isinstance(exponent, int) and exponent < -9:
        sec = sec.quantize(_NANO, rounding=ROUND_DOWN)
    sec_text = format(sec.normalize(), "f") if sec else "0"
    return f"P{years}Y{months}M{days}DT{hours}H{minutes}M{sec_text}S"


def interval_mapping(col: ColumnType, settings: ConverterSettings) -> TypeMapping:
    """INTERVAL under ``interval.handling.mode``."""
    if settings.interval_handling_mode == "string":
        return TypeMapping(ks.logical("string", "io.debezium.time.Interval"),
                           lambda text: iso_string(parse_interval(text)), "P0Y0M0DT0H0M0S")
    return TypeMapping(ks.logical("int64", "io.debezium.time.MicroDuration"),
                       lambda text: duration_micros(parse_interval(text)), 0)
