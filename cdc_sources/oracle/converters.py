"""Oracle column values (as LogMiner's SQL_REDO gives them) to Debezium 3.6.3's change-event values.

For each column, `field_schema` is the Kafka Connect schema Debezium's ``OracleValueConverters``
gives it and `convert` turns a value from `cdc_sources.oracle.redo` into what Kafka's
JsonConverter writes for it, under ``decimal.handling.mode``, ``time.precision.mode``,
``binary.handling.mode`` and ``interval.handling.mode`` (proved value by value against
Debezium's own class by ``tests/cdc_sources/oracle/test_converters.py``):

- ``NUMBER(P,S)``, S <= 0: INT8 when P - S < 3, INT16 < 5, INT32 < 10, INT64 < 19, else
  ``Decimal``; S > 0: ``Decimal``; ``NUMBER``/``FLOAT(P)``: ``VariableScaleDecimal`` (a struct of
  ``scale`` and ``value``). With ``decimal.handling.mode`` ``double`` or ``string``, ``NUMBER(P)``
  and ``NUMBER`` are FLOAT64 or STRING too (Debezium 3.x, not the 2.x rule).
- ``BINARY_FLOAT``/``BINARY_DOUBLE``: FLOAT32/FLOAT64.
- ``CHAR``, ``VARCHAR2``, ``NCHAR``, ``NVARCHAR2``, ``CLOB``, ``NCLOB``, ``ROWID``: STRING;
  ``UNISTR('\\XXXX')`` (joined by ``||``) decoded, ``EMPTY_CLOB()`` is null (or ``""`` when the
  column is NOT NULL).
- ``RAW``, ``BLOB``: bytes from ``HEXTORAW('..')`` per ``binary.handling.mode``; ``EMPTY_BLOB()``
  is null (or empty).
- ``DATE``, ``TIMESTAMP(P)``: ``Timestamp`` (P <= 3), ``MicroTimestamp`` (P <= 6) or
  ``NanoTimestamp`` in the adaptive modes, Connect ``Timestamp`` with ``connect``,
  ``MicroTimestamp``/``NanoTimestamp`` with ``microseconds``/``nanoseconds``, ``IsoTimestamp``
  with ``isostring``; from ``TO_DATE(..)``/``TO_TIMESTAMP(..)`` read as UTC.
- ``TIMESTAMP(P) WITH [LOCAL] TIME ZONE``: ``ZonedTimestamp`` text with P fraction digits.
- ``INTERVAL YEAR TO MONTH``/``DAY TO SECOND``: ``MicroDuration`` (months of 365.25/12 days) or,
  with ``interval.handling.mode=string``, ``Interval`` text (``P1Y2M3DT4H5M6.78S``).
- A LOB-like column that LogMiner left out (`UNAVAILABLE`) carries
  ``unavailable.value.placeholder`` (as text, or as bytes under the binary mode).

Values that are not in LogMiner's forms raise `OracleValueError` naming the column.
"""

from __future__ import annotations

import enum
import re
import struct
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, timezone
from decimal import Decimal, InvalidOperation
from typing import Any, Literal

from cdc_sources.common import kschema as ks
from cdc_sources.common.connect_values import BINARY_ENCODERS, BinaryMode, DecimalMode, binary_schema, decimal_bytes
from cdc_sources.oracle.redo import RedoValue, Unavailable

__all__ = [
    "IntervalMode",
    "OracleColumn",
    "OracleConverterSettings",
    "OracleType",
    "OracleValueError",
    "TimePrecisionMode",
    "convert",
    "field_schema",
]

TimePrecisionMode = Literal["adaptive", "adaptive_time_microseconds", "connect", "isostring", "microseconds",
                            "nanoseconds"]
IntervalMode = Literal["numeric", "string"]


_Present = str | Unavailable
"""A value that is not SQL NULL."""


class OracleValueError(ValueError):
    """A value that is not in any form LogMiner writes for its column's type."""


class OracleType(enum.Enum):
    """How Debezium treats a column, by its Oracle type (``ALL_TAB_COLUMNS.DATA_TYPE`` family)."""

    NUMBER = "NUMBER"
    FLOAT = "FLOAT"
    BINARY_FLOAT = "BINARY_FLOAT"
    BINARY_DOUBLE = "BINARY_DOUBLE"
    CHAR = "CHAR"
    NCHAR = "NCHAR"
    VARCHAR2 = "VARCHAR2"
    NVARCHAR2 = "NVARCHAR2"
    CLOB = "CLOB"
    NCLOB = "NCLOB"
    ROWID = "ROWID"
    RAW = "RAW"
    BLOB = "BLOB"
    DATE = "DATE"
    TIMESTAMP = "TIMESTAMP"
    TIMESTAMP_TZ = "TIMESTAMP WITH TIME ZONE"
    TIMESTAMP_LTZ = "TIMESTAMP WITH LOCAL TIME ZONE"
    INTERVAL_YM = "INTERVAL YEAR TO MONTH"
    INTERVAL_DS = "INTERVAL DAY TO SECOND"


_STRINGS = {OracleType.CHAR, OracleType.NCHAR, OracleType.VARCHAR2, OracleType.NVARCHAR2, OracleType.CLOB,
            OracleType.NCLOB, OracleType.ROWID}


@dataclass(frozen=True, slots=True)
class OracleColumn:
    """A column as Debezium's table model holds it.

    Attributes:
        name: the column name.
        type: its type family.
        length: the precision (``NUMBER(P)``, ``FLOAT(P)``), the fraction digits of a
            ``TIMESTAMP(P)`` (``DATE``: 0) or the length of a character or RAW type.
        scale: the scale of ``NUMBER(P,S)``, None for ``NUMBER`` without one; the fraction digits of
            ``INTERVAL DAY TO SECOND(P)``.
        optional: the column is nullable.
    """

    name: str
    type: OracleType
    length: int = 0
    scale: int | None = None
    optional: bool = True


@dataclass(frozen=True, slots=True)
class OracleConverterSettings:
    decimal_mode: DecimalMode = "precise"
    time_precision_mode: TimePrecisionMode = "adaptive"
    binary_mode: BinaryMode = "bytes"
    interval_mode: IntervalMode = "numeric"
    unavailable_placeholder: str = "__debezium_unavailable_value"


_VSD = ks.struct("io.debezium.data.VariableScaleDecimal",
                 [("scale", ks.primitive("int32"), False), ("value", ks.primitive("bytes"), False)],
                 doc="Variable scaled decimal")


def _core_schema(column: OracleColumn, s: OracleConverterSettings) -> ks.Schema:
    t = column.type
    if t is OracleType.NUMBER:
        return _number_schema(column, s)
    if t is OracleType.FLOAT:
        return _variable_scale_schema(s)
    if t is OracleType.BINARY_FLOAT:
        return ks.primitive("float")
    if t is OracleType.BINARY_DOUBLE:
        return ks.primitive("double")
    if t in _STRINGS:
        return ks.primitive("string")
    if t in (OracleType.RAW, OracleType.BLOB):
        return binary_schema(s.binary_mode)
    if t in (OracleType.DATE, OracleType.TIMESTAMP):
        return _timestamp_schema(0 if t is OracleType.DATE else column.length, s)
    if t in (OracleType.TIMESTAMP_TZ, OracleType.TIMESTAMP_LTZ):
        return ks.logical("string", "io.debezium.time.ZonedTimestamp")
    if s.interval_mode == "string":
        return ks.logical("string", "io.debezium.time.Interval")
    return ks.logical("int64", "io.debezium.time.MicroDuration")


def _number_schema(column: OracleColumn, s: OracleConverterSettings) -> ks.Schema:
    scale = column.scale
    if scale is None:
        if column.length == 0 and s.decimal_mode != "precise":
            return _special_decimal(s)
        return _variable_scale_schema(s)
    if scale == 0 and s.decimal_mode != "precise":
        return _special_decimal(s)
    if scale <= 0:
        kind = _int_kind(column.length - scale)
        if kind is not None:
            return ks.primitive(kind)
    if s.decimal_mode == "precise":
        return ks.logical("bytes", ks.DECIMAL, params={"scale": str(scale),
                                                       ks.PRECISION_PARAM: str(column.length)})
    return _special_decimal(s)


def _int_kind(width: int) -> str | None:
    return "int8" if width < 3 else "int16" if width < 5 else "int32" if width < 10 else \
        "int64" if width < 19 else None


def _special_decimal(s: OracleConverterSettings) -> ks.Schema:
    return ks.primitive("double" if s.decimal_mode == "double" else "string")


def _variable_scale_schema(s: OracleConverterSettings) -> ks.Schema:
    return _VSD if s.decimal_mode == "precise" else _special_decimal(s)


def _timestamp_schema(precision: int, s: OracleConverterSettings) -> ks.Schema:
    mode = s.time_precision_mode
    if mode == "connect":
        return ks.logical("int64", ks.CONNECT_TIMESTAMP)
    if mode == "isostring":
        return ks.logical("string", "io.debezium.time.IsoTimestamp")
    if mode == "microseconds" or (mode != "nanoseconds" and 3 < precision <= 6):
        return ks.logical("int64", "io.debezium.time.MicroTimestamp")
    if mode == "nanoseconds" or precision > 6:
        return ks.logical("int64", "io.debezium.time.NanoTimestamp")
    return ks.logical("int64", "io.debezium.time.Timestamp")


def field_schema(column: OracleColumn, settings: OracleConverterSettings) -> ks.Schema:
    """The column's schema as JsonConverter writes it (``schemas.enable=true``)."""
    return ks.complete(_core_schema(column, settings), optional=column.optional)


def convert(column: OracleColumn, value: RedoValue, settings: OracleConverterSettings) -> Any:
    """The column's value as JsonConverter writes it; None for SQL NULL."""
    if value is None:
        return None
    try:
        return _CONVERTERS[column.type](column, value, settings)
    except (ValueError, InvalidOperation, IndexError, OverflowError) as exc:
        if isinstance(exc, OracleValueError):
            raise
        raise OracleValueError(f"column {column.name} ({column.type.value}): cannot convert {value!r}") from exc


# -- numbers ----------------------------------------------------------------------------------


def _number_text(column: OracleColumn, value: _Present) -> str:
    if isinstance(value, Unavailable):
        raise OracleValueError(f"column {column.name}: no value logged for a {column.type.value} column")
    return value


def _decimal(text: str) -> Decimal:
    d = Decimal(text)
    if not d.is_finite():
        raise OracleValueError(f"not a finite number: {text!r}")
    return d


def _java_scale(d: Decimal) -> int:
    return -int(d.as_tuple().exponent)


def _unscaled(d: Decimal) -> int:
    sign, digits, _ = d.as_tuple()
    n = int("".join(map(str, digits)) or "0")
    return -n if sign else n


def _plain(d: Decimal) -> str:
    """``BigDecimal.toPlainString``."""
    scale = _java_scale(d)
    n = _unscaled(d)
    if scale <= 0:
        return str(n * 10 ** -scale)
    digits = str(abs(n)).rjust(scale + 1, "0")
    return ("-" if n < 0 else "") + digits[:-scale] + "." + digits[-scale:]


def _java_double(d: Decimal) -> float:
    return float(d)


def _convert_number(column: OracleColumn, value: _Present, s: OracleConverterSettings) -> Any:
    text = _number_text(column, value)
    scale = column.scale
    if scale is None or (scale == 0 and s.decimal_mode != "precise"):
        return _variable_scale(text, s)
    if scale <= 0:
        kind = _int_kind(column.length - scale)
        if kind is not None:
            return _integer(text, kind)
    d = _decimal(text)
    if scale != _java_scale(d):
        exact = d.quantize(Decimal(1).scaleb(-scale))
        if exact != d:  # BigDecimal.setScale without rounding: "Rounding necessary"
            raise OracleValueError(f"column {column.name}: {text} has more than {scale} decimal places")
        d = exact
    if s.decimal_mode == "precise":
        return decimal_bytes(_unscaled(d))
    return _java_double(d) if s.decimal_mode == "double" else _plain(d)


_INT_BITS = {"int8": 8, "int16": 16, "int32": 32, "int64": 64}


def _integer(text: str, kind: str) -> int:
    n = int(text)  # Java's Byte/Short/Integer/Long.parseInt: plain integers only
    bits = _INT_BITS[kind]
    if not -(1 << (bits - 1)) <= n < (1 << (bits - 1)):
        raise OracleValueError(f"{text} does not fit {kind}")
    return n


def _variable_scale(text: str, s: OracleConverterSettings) -> Any:
    d = _decimal(text)
    if s.decimal_mode == "precise":
        return {"scale": _java_scale(d), "value": decimal_bytes(_unscaled(d))}
    return _java_double(d) if s.decimal_mode == "double" else _plain(d)


def _float32(f: float) -> float:
    """The float32 nearest ``f``, as the shortest decimal that reads back to it (Java's Float.toString)."""
    bits = struct.pack(">f", f)
    for digits in range(1, 10):
        shortest = float(f"{f:.{digits}g}")
        try:
            if struct.pack(">f", shortest) == bits:
                return shortest
        except OverflowError:  # a rounding above float32's largest value
            continue
    return float(struct.unpack(">f", bits)[0])


def _convert_float(column: OracleColumn, value: _Present, s: OracleConverterSettings) -> Any:
    f = float(_number_text(column, value))
    return _float32(f) if column.type is OracleType.BINARY_FLOAT else f


# -- strings and bytes ------------------------------------------------------------------------

_UNISTR_PART = re.compile(r"\s*UNISTR\('((?:[^']|'')*)'\)\s*")
_HEXTORAW = re.compile(r"HEXTORAW\('([0-9A-Fa-f]*)'\)")


def _unistr(text: str) -> str:
    units: list[str] = []
    for part in text.split("||"):
        m = _UNISTR_PART.fullmatch(part)
        if m is None:
            raise OracleValueError(f"not a UNISTR(..) expression: {text[:80]!r}")
        body = m.group(1).replace("''", "'")
        units.append(re.sub(r"\\([0-9A-Fa-f]{4})", lambda u: chr(int(u.group(1), 16)), body))
    return "".join(units).encode("utf-16", "surrogatepass").decode("utf-16")


def _convert_string(column: OracleColumn, value: _Present, s: OracleConverterSettings) -> Any:
    if isinstance(value, Unavailable):
        return s.unavailable_placeholder
    if type(value) is str:
        return value
    if value == "EMPTY_CLOB()":
        return None if column.optional else ""
    if value.startswith("UNISTR('"):
        return _unistr(value)
    raise OracleValueError(f"column {column.name}: unexpected expression {value[:80]!r}")


def _convert_binary(column: OracleColumn, value: _Present, s: OracleConverterSettings) -> Any:
    if isinstance(value, Unavailable):
        data = s.unavailable_placeholder.encode("utf-8")
    elif value == "EMPTY_BLOB()" and type(value) is not str:
        if column.optional:
            return None
        data = b""
    else:
        m = _HEXTORAW.fullmatch(value)
        if m is None or type(value) is str:
            raise OracleValueError(f"column {column.name}: expected HEXTORAW('..'), got {value[:80]!r}")
        data = bytes.fromhex(m.group(1))
    return BINARY_ENCODERS[s.binary_mode](data)


# -- time -------------------------------------------------------------------------------------

_TO_DATE = re.compile(r"TO_DATE\('(.*)',\s*'(.*)'\)", re.IGNORECASE | re.S)
_TO_TIMESTAMP = re.compile(r"TO_TIMESTAMP\('(.*)'\)", re.IGNORECASE | re.S)
_TO_TIMESTAMP_TZ = re.compile(r"TO_TIMESTAMP_TZ\('(.*)'\)", re.IGNORECASE | re.S)
_LOCAL = re.compile(r"(\d{4})-(\d{2})-(\d{2}) (\d{2}):(\d{2}):(\d{2})(?:\.(\d{0,9}))?")
_ZONED = re.compile(r"(\d{4})-(\d{2})-(\d{2}) (\d{2}):(\d{2}):(\d{2})(?:\.(\d{0,9}))? ?(?:([+-])(\d{2}):(\d{2}))?")
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def _local_nanos(column: OracleColumn, value: _Present) -> int:
    """Nanoseconds since the epoch of a TO_DATE/TO_TIMESTAMP value, read as UTC."""
    text = _number_text(column, value)
    m = _TO_TIMESTAMP.fullmatch(text) or _TO_DATE.fullmatch(text)
    if m is None:
        raise OracleValueError(f"column {column.name}: expected TO_DATE(..) or TO_TIMESTAMP(..), got {text[:80]!r}")
    t = _LOCAL.fullmatch(m.group(1).strip())
    if t is None:
        raise OracleValueError(f"column {column.name}: not a timestamp: {m.group(1)!r}")
    y, mo, d, h, mi, sec = (int(g) for g in t.groups()[:6])
    stamp = datetime(y, mo, d, h, mi, sec, tzinfo=UTC)
    delta = stamp - _EPOCH
    fraction = int((t.group(7) or "").ljust(9, "0") or 0)
    return (delta.days * 86400 + delta.seconds) * 1_000_000_000 + fraction


def _iso_instant(nanos: int) -> str:
    """``io.debezium.time.IsoTimestamp`` text: UTC, fraction digits as needed."""
    seconds, frac = divmod(nanos, 1_000_000_000)
    t = _EPOCH + timedelta(seconds=seconds)
    text = f"{t.year:04d}-{t.month:02d}-{t.day:02d}T{t.hour:02d}:{t.minute:02d}:{t.second:02d}"
    if frac:
        text += "." + f"{frac:09d}".rstrip("0")
    return text + "Z"


def _convert_timestamp(column: OracleColumn, value: _Present, s: OracleConverterSettings) -> Any:
    nanos = _local_nanos(column, value)
    precision = 0 if column.type is OracleType.DATE else column.length
    mode = s.time_precision_mode
    if mode == "isostring":
        return _iso_instant(nanos)
    if mode == "connect":
        return nanos // 1_000_000
    if mode == "microseconds" or (mode != "nanoseconds" and 3 < precision <= 6):
        return nanos // 1_000
    if mode == "nanoseconds" or precision > 6:
        if not -(1 << 63) <= nanos < (1 << 63):  # Debezium's conversion overflows: no value
            if column.optional:
                return None
            raise OracleValueError(f"column {column.name}: {value} does not fit nanoseconds since 1970")
        return nanos
    return nanos // 1_000_000


def _convert_zoned(column: OracleColumn, value: _Present, s: OracleConverterSettings) -> Any:
    text = _number_text(column, value)
    m = _TO_TIMESTAMP_TZ.fullmatch(text)
    t = _ZONED.fullmatch(m.group(1).strip()) if m else None
    if t is None:
        raise OracleValueError(f"column {column.name}: expected TO_TIMESTAMP_TZ(..), got {text[:80]!r}")
    y, mo, d, h, mi, sec = (int(g) for g in t.groups()[:6])
    nanos = int((t.group(7) or "").ljust(9, "0") or 0)
    offset = 0 if t.group(8) is None else (1 if t.group(8) == "+" else -1) * (int(t.group(9)) * 60 + int(t.group(10)))
    zone = timezone(timedelta(minutes=offset))
    stamp = datetime(y, mo, d, h, mi, sec, tzinfo=zone)  # the offset LogMiner wrote is kept (LTZ too)
    digits = column.scale if column.scale is not None else column.length
    out = f"{y:04d}-{mo:02d}-{d:02d}T{h:02d}:{mi:02d}:{sec:02d}"
    if digits > 0:
        out += "." + f"{nanos:09d}"[:digits]
    elif nanos:  # no precision known: as many digits as needed (java.time's ISO format)
        out += "." + f"{nanos:09d}".rstrip("0")
    if stamp.utcoffset() == timedelta(0):
        return out + "Z"
    off = int(stamp.utcoffset().total_seconds() // 60)  # type: ignore[union-attr]
    return out + f"{'+' if off > 0 else '-'}{abs(off) // 60:02d}:{abs(off) % 60:02d}"


_YM = re.compile(r"TO_YMINTERVAL\('([+-]?)(\d+)-(\d+)'\)")
_DS = re.compile(r"TO_DSINTERVAL\('([+-]?)(\d+) (\d+):(\d+):(\d+)\.(\d+)'\)")
_DAYS_PER_MONTH = 365.25 / 12.0


def _micro_duration(years: int, months: int, days: int, hours: int, minutes: int, seconds: int,
                    micros: int) -> int:
    """``io.debezium.time.MicroDuration.durationMicros`` (a month is 365.25/12 days)."""
    total_days = (years * 12 + months) * _DAYS_PER_MONTH + days
    total = (((total_days * 24 + hours) * 60 + minutes) * 60 + seconds) * 1_000_000 + micros
    return int(total)


def _interval_text(years: int, months: int, days: int, hours: int, minutes: int, seconds: Decimal) -> str:
    """``io.debezium.time.Interval.toIsoString``."""
    text = format(seconds.normalize(), "f") if seconds != 0 else "0"
    return f"P{years}Y{months}M{days}DT{hours}H{minutes}M{text}S"


def _convert_interval(column: OracleColumn, value: _Present, s: OracleConverterSettings) -> Any:
    text = _number_text(column, value)
    if column.type is OracleType.INTERVAL_YM:
        m = _YM.fullmatch(text)
        if m is None:
            raise OracleValueError(f"column {column.name}: expected TO_YMINTERVAL(..), got {text[:80]!r}")
        sign = -1 if m.group(1) == "-" else 1
        years, months = sign * int(m.group(2)), sign * int(m.group(3))
        if s.interval_mode == "string":
            return _interval_text(years, months, 0, 0, 0, Decimal(0))
        return _micro_duration(years, months, 0, 0, 0, 0, 0)
    m = _DS.fullmatch(text)
    if m is None:
        raise OracleValueError(f"column {column.name}: expected TO_DSINTERVAL(..), got {text[:80]!r}")
    sign = -1 if m.group(1) == "-" else 1
    days, hours, minutes, secs = (sign * int(g) for g in m.groups()[1:5])
    micros = sign * int(m.group(6)[:6].ljust(6, "0"))
    if s.interval_mode == "string":
        seconds = Decimal(repr(sign * (int(m.group(5)) + int(m.group(6)[:6].ljust(6, "0")) / 1_000_000)))
        return _interval_text(0, 0, days, hours, minutes, seconds)
    return _micro_duration(0, 0, days, hours, minutes, secs, micros)


_Converter = Callable[[OracleColumn, _Present, OracleConverterSettings], Any]
_CONVERTERS: dict[OracleType, _Converter] = {
    OracleType.NUMBER: _convert_number,
    OracleType.FLOAT: lambda c, v, s: _variable_scale(_number_text(c, v), s),
    OracleType.BINARY_FLOAT: _convert_float,
    OracleType.BINARY_DOUBLE: _convert_float,
    **dict.fromkeys(_STRINGS, _convert_string),
    OracleType.RAW: _convert_binary,
    OracleType.BLOB: _convert_binary,
    OracleType.DATE: _convert_timestamp,
    OracleType.TIMESTAMP: _convert_timestamp,
    OracleType.TIMESTAMP_TZ: _convert_zoned,
    OracleType.TIMESTAMP_LTZ: _convert_zoned,
    OracleType.INTERVAL_YM: _convert_interval,
    OracleType.INTERVAL_DS: _convert_interval,
}

