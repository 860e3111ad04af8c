"""SQL Server column values as Debezium 3.6.3's ``SqlServerValueConverters`` renders them.

Pure functions from a column (its SQL Server type, length and scale as the catalog reports
them) and the three type options (``decimal.handling.mode``, ``time.precision.mode``,
``binary.handling.mode``) to a Kafka Connect field schema and a value function. Values come
out as Kafka Connect's JsonConverter writes them (bytes and precise decimals as base64 text).
Checked value by value against the jar (tests/cdc_sources/sqlserver/test_converters.py).

Input values are what pyodbc returns (``bool``, ``int``, ``float``, ``Decimal``, ``str``,
``bytes``, ``uuid.UUID``, ``datetime.date``/``time``/``datetime``) and, for the types whose
100 ns digits Python's ``datetime`` cannot hold (``time(7)``, ``datetime2(7)``,
``datetimeoffset``), also SQL Server's own text form (``'15:13:16.9451049'``,
``'2018-06-20 15:13:16.9451049'``, ``'2018-06-20 15:13:16.9451049 +02:00'``).

Type rules (Debezium's): ``tinyint`` is INT16; ``real`` FLOAT32, ``float`` FLOAT64; ``decimal``,
``numeric``, ``money``, ``smallmoney`` follow ``decimal.handling.mode``; ``date``/``time``/
``datetime``/``datetime2``/``smalldatetime`` follow ``time.precision.mode``, the precision of
``time`` and ``datetime2`` being the column's scale (fractional digits); zone-less timestamps
are read as UTC; ``datetimeoffset`` is an ``io.debezium.time.ZonedTimestamp`` string in UTC
whatever the mode; ``xml`` is an ``io.debezium.data.Xml`` string; ``uniqueidentifier`` upper-case
text; ``binary``, ``varbinary``, ``image``, ``rowversion``/``timestamp`` and ``hierarchyid``
follow ``binary.handling.mode``. ``sql_variant``, ``geometry`` and ``geography`` have no
Debezium converter: the column is left out of events (`column_converter` returns None).
"""

from __future__ import annotations

import datetime as dt
import re
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Context, Decimal
from typing import Any, Final, Literal

from cdc_sources.common import kschema as ks
from cdc_sources.common.connect_values import BINARY_ENCODERS, BinaryMode, DecimalMode, binary_schema, decimal_bytes
from cdc_sources.common.javacompat import float32, float32_shortest

__all__ = [
    "UNSUPPORTED_TYPES",
    "ColumnConverter",
    "ConverterSettings",
    "SqlServerColumn",
    "TimePrecisionMode",
    "ValueConversionError",
    "column_converter",
]

TimePrecisionMode = Literal["adaptive", "adaptive_time_microseconds", "connect", "isostring", "microseconds",
                            "nanoseconds"]

UNSUPPORTED_TYPES: Final = frozenset({"sql_variant", "geometry", "geography"})
"""Types Debezium 3.6.3 has no converter for: such columns are left out of events."""

_EPOCH = dt.date(1970, 1, 1)
_EXACT = Context(prec=100)
_NANOS_PER_DAY = 86_400 * 10**9
_INTS = {"bit": "boolean", "tinyint": "int16", "smallint": "int16", "int": "int32", "bigint": "int64"}
_STRINGS = frozenset({"char", "varchar", "text", "nchar", "nvarchar", "ntext", "sysname"})
_BINARIES = frozenset({"binary", "varbinary", "image", "timestamp", "rowversion", "hierarchyid"})
_DECIMALS = {"decimal": None, "numeric": None, "money": (19, 4), "smallmoney": (10, 4)}
_TIMESTAMPS = frozenset({"datetime", "datetime2", "smalldatetime"})
_TEXT = re.compile(r"(?:(\d{4})-(\d\d)-(\d\d))?[ T]?(?:(\d\d):(\d\d)(?::(\d\d)(?:\.(\d{1,9}))?)?)?"
                   r"\s*(?:([+-])(\d\d):(\d\d)|(Z))?")


class ValueConversionError(ValueError):
    """A value the column's type cannot hold (names the column and the value's type)."""


@dataclass(frozen=True)
class SqlServerColumn:
    """A captured column as the catalog describes it.

    Attributes:
        name: the column name.
        type_name: SQL Server's type name, lower-case (``datetime2``, ``nvarchar``).
        length: the precision of ``decimal``/``numeric``, the length of character and binary
            types (None when not given).
        scale: the scale of ``decimal``/``numeric``, the fractional-second digits of ``time``,
            ``datetime2`` and ``datetimeoffset`` (SQL Server's default 7 when None).
        optional: whether the column is nullable.
    """

    name: str
    type_name: str
    length: int | None = None
    scale: int | None = None
    optional: bool = True


@dataclass(frozen=True)
class ConverterSettings:
    """The three options that shape values."""

    decimal_mode: DecimalMode = "precise"
    time_precision_mode: TimePrecisionMode = "adaptive"
    binary_mode: BinaryMode = "bytes"


@dataclass(frozen=True)
class ColumnConverter:
    """A column's field schema (JsonConverter form, without ``optional``/``field``) and value function."""

    schema: ks.Schema
    convert: Callable[[Any], Any]


def column_converter(column: SqlServerColumn, settings: ConverterSettings) -> ColumnConverter | None:
    """The converter of ``column``, or None for the types Debezium cannot convert."""
    kind = column.type_name.lower()
    if kind in UNSUPPORTED_TYPES:
        return None
    if kind in _INTS:
        return _integer(column, _INTS[kind])
    if kind == "real":
        return ColumnConverter(ks.primitive("float"), _checked(column, _is_number, lambda v: float32_shortest(
            float32(float(v)))))
    if kind == "float":
        return ColumnConverter(ks.primitive("double"), _checked(column, _is_number, float))
    if kind in _DECIMALS:
        fixed = _DECIMALS[kind]
        precision, scale = fixed if fixed else (column.length or 18, column.scale or 0)
        return _decimal(column, precision, scale, settings.decimal_mode)
    if kind in _STRINGS:
        return ColumnConverter(ks.primitive("string"), _checked(column, _is_text, str))
    if kind == "uniqueidentifier":
        return ColumnConverter(ks.primitive("string"), _checked(column, _is_uuid, lambda v: str(v).upper()))
    if kind == "xml":
        return ColumnConverter(ks.logical("string", "io.debezium.data.Xml"), _checked(column, _is_text, str))
    if kind in _BINARIES:
        encode = BINARY_ENCODERS[settings.binary_mode]
        return ColumnConverter(binary_schema(settings.binary_mode),
                               _checked(column, _is_bytes, lambda v: encode(bytes(v))))
    if kind == "date":
        return _date(column, settings.time_precision_mode)
    if kind == "time":
        return _time(column, _digits(column), settings.time_precision_mode)
    if kind in _TIMESTAMPS:
        digits = {"datetime": 3, "smalldatetime": 0}.get(kind, _digits(column))
        return _timestamp(column, digits, settings.time_precision_mode)
    if kind == "datetimeoffset":
        return ColumnConverter(ks.logical("string", "io.debezium.time.ZonedTimestamp"),
                               _checked(column, _is_temporal, _zoned))
    raise ValueConversionError(f"column {column.name}: SQL Server type {column.type_name!r} is not known")


# -- checks ---------------------------------------------------------------------------------


def _checked(column: SqlServerColumn, accepts: Callable[[Any], bool], fn: Callable[[Any], Any]) -> Callable[[Any], Any]:
    def convert(value: Any) -> Any:
        if value is None:
            return None
        if not accepts(value):
            raise ValueConversionError(f"column {column.name} ({column.type_name}): cannot convert a "
                                       f"{type(value).__name__} value")
        return fn(value)
    return convert


def _is_number(v: Any) -> bool:
    return isinstance(v, int | float | Decimal) and not isinstance(v, bool)


def _is_text(v: Any) -> bool:
    return isinstance(v, str)


def _is_uuid(v: Any) -> bool:
    return isinstance(v, str | uuid.UUID)


def _is_bytes(v: Any) -> bool:
    return isinstance(v, bytes | bytearray | memoryview)


def _is_temporal(v: Any) -> bool:
    return isinstance(v, str | dt.date | dt.time)


# -- numbers --------------------------------------------------------------------------------


def _integer(column: SqlServerColumn, kind: str) -> ColumnConverter:
    if kind == "boolean":
        return ColumnConverter(ks.primitive("boolean"),
                               _checked(column, lambda v: isinstance(v, bool | int), bool))
    return ColumnConverter(ks.primitive(kind),
                           _checked(column, lambda v: isinstance(v, int) and not isinstance(v, bool), int))


def _decimal(column: SqlServerColumn, precision: int, scale: int, mode: DecimalMode) -> ColumnConverter:
    if mode == "double":
        return ColumnConverter(ks.primitive("double"), _checked(column, _is_number, float))
    if mode == "string":
        return ColumnConverter(ks.primitive("string"),
                               _checked(column, _is_number, lambda v: _plain(Decimal(v))))
    params = {"scale": str(scale), ks.PRECISION_PARAM: str(precision)}

    def precise(value: Any) -> str:
        exact = Decimal(value).scaleb(scale, _EXACT)
        if exact != exact.to_integral_value():  # more digits than the scale: Java's setScale(UNNECESSARY)
            raise ValueConversionError(f"column {column.name}: {value} has more than {scale} decimal digits")
        return decimal_bytes(int(exact))
    return ColumnConverter(ks.logical("bytes", ks.DECIMAL, params=params), _checked(column, _is_number, precise))


def _plain(value: Decimal) -> str:
    """``BigDecimal.toPlainString``: no exponent, the value's own scale kept."""
    return format(value, "f")


# -- temporal -------------------------------------------------------------------------------


def _digits(column: SqlServerColumn) -> int:
    return 7 if column.scale is None else column.scale


@dataclass(frozen=True)
class _Parts:
    """A temporal value taken apart: days since the epoch, nanoseconds of the day, offset minutes."""

    days: int
    nanos: int
    offset: int | None


def _parts(value: Any) -> _Parts:
    if isinstance(value, str):
        match = _TEXT.fullmatch(value.strip())
        if match is None or not value.strip():
            raise ValueConversionError(f"not a SQL Server date/time text: {value!r}")
        y, mo, d, h, mi, s, frac, sign, oh, om, zulu = match.groups()
        try:
            days = (dt.date(int(y), int(mo), int(d)) - _EPOCH).days if y else 0
        except ValueError as exc:
            raise ValueConversionError(f"not a SQL Server date/time text: {value!r} ({exc})") from None
        nanos = ((int(h or 0) * 60 + int(mi or 0)) * 60 + int(s or 0)) * 10**9 + int((frac or "0").ljust(9, "0"))
        offset = 0 if zulu else (None if sign is None else (1 if sign == "+" else -1) * (int(oh) * 60 + int(om)))
        return _Parts(days, nanos, offset)
    if isinstance(value, dt.datetime):
        off = value.utcoffset()
        offset = None if off is None else int(off.total_seconds()) // 60
        return _Parts((value.date() - _EPOCH).days, _time_nanos(value.time()), offset)
    if isinstance(value, dt.date):
        return _Parts((value - _EPOCH).days, 0, None)
    if isinstance(value, dt.time):
        off = value.utcoffset()
        return _Parts(0, _time_nanos(value), None if off is None else int(off.total_seconds()) // 60)
    raise ValueConversionError(f"not a date/time value: {type(value).__name__}")


def _time_nanos(t: dt.time) -> int:
    return ((t.hour * 60 + t.minute) * 60 + t.second) * 10**9 + t.microsecond * 1000


def _epoch_nanos(p: _Parts) -> int:
    return p.days * _NANOS_PER_DAY + p.nanos


def _date(column: SqlServerColumn, mode: TimePrecisionMode) -> ColumnConverter:
    if mode == "connect":
        schema = ks.logical("int32", ks.CONNECT_DATE)
    elif mode == "isostring":
        schema = ks.logical("string", "io.debezium.time.IsoDate")
        return ColumnConverter(schema, _checked(column, _is_temporal, lambda v: _iso_date(_parts(v).days)))
    else:
        schema = ks.logical("int32", "io.debezium.time.Date")
    return ColumnConverter(schema, _checked(column, _is_temporal, lambda v: _parts(v).days))


def _time(column: SqlServerColumn, digits: int, mode: TimePrecisionMode) -> ColumnConverter:
    def nanos(v: Any) -> int:
        return _parts(v).nanos
    if mode == "connect":
        return ColumnConverter(ks.logical("int32", ks.CONNECT_TIME), _checked(column, _is_temporal,
                                                                               lambda v: nanos(v) // 10**6))
    if mode == "isostring":
        return ColumnConverter(ks.logical("string", "io.debezium.time.IsoTime"),
                               _checked(column, _is_temporal, lambda v: _iso_time(nanos(v))))
    unit = {"adaptive": "milli" if digits <= 3 else "micro" if digits <= 6 else "nano",
            "adaptive_time_microseconds": "micro", "microseconds": "micro", "nanoseconds": "nano"}[mode]
    if unit == "milli":
        return ColumnConverter(ks.logical("int32", "io.debezium.time.Time"),
                               _checked(column, _is_temporal, lambda v: nanos(v) // 10**6))
    if unit == "micro":
        return ColumnConverter(ks.logical("int64", "io.debezium.time.MicroTime"),
                               _checked(column, _is_temporal, lambda v: nanos(v) // 1000))
    return ColumnConverter(ks.logical("int64", "io.debezium.time.NanoTime"), _checked(column, _is_temporal, nanos))


def _timestamp(column: SqlServerColumn, digits: int, mode: TimePrecisionMode) -> ColumnConverter:
    def nanos(v: Any) -> int:
        return _epoch_nanos(_parts(v))
    if mode == "connect":
        return ColumnConverter(ks.logical("int64", ks.CONNECT_TIMESTAMP),
                               _checked(column, _is_temporal, lambda v: nanos(v) // 10**6))
    if mode == "isostring":
        return ColumnConverter(ks.logical("string", "io.debezium.time.IsoTimestamp"),
                               _checked(column, _is_temporal, lambda v: _iso_timestamp(_parts(v))))
    unit = {"adaptive": "milli" if digits <= 3 else "micro" if digits <= 6 else "nano",
            "adaptive_time_microseconds": "milli" if digits <= 3 else "micro" if digits <= 6 else "nano",
            "microseconds": "micro", "nanoseconds": "nano"}[mode]
    name = {"milli": "io.debezium.time.Timestamp", "micro": "io.debezium.time.MicroTimestamp",
            "nano": "io.debezium.time.NanoTimestamp"}[unit]
    divisor = {"milli": 10**6, "micro": 1000, "nano": 1}[unit]
    return ColumnConverter(ks.logical("int64", name),
                           _checked(column, _is_temporal, lambda v: _long_or_none(nanos(v) // divisor)))


def _long_or_none(value: int) -> int | None:
    """Debezium's value, or null when it does not fit a Java long (nanoseconds past 2262 or
    before 1677: Debezium's converter answers null instead of failing)."""
    return value if -(2**63) <= value < 2**63 else None


def _fraction(nanos: int) -> str:
    """ISO fractional seconds as Debezium writes them: trailing zeros dropped, none when zero."""
    frac = nanos % 10**9
    return "" if frac == 0 else "." + f"{frac:09d}".rstrip("0")


def _calendar(days: int) -> str:
    return (_EPOCH + dt.timedelta(days=days)).isoformat()


def _iso_date(days: int) -> str:
    return _calendar(days) + "Z"


def _hms(nanos: int) -> str:
    seconds = nanos // 10**9
    return f"{seconds // 3600:02d}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"


def _iso_time(nanos: int) -> str:
    return _hms(nanos) + _fraction(nanos) + "Z"


def _iso_timestamp(p: _Parts) -> str:
    return f"{_calendar(p.days)}T{_hms(p.nanos)}{_fraction(p.nanos)}Z"


def _zoned(value: Any) -> str:
    """``ZonedTimestamp``: the local date-time with its offset (``Z`` for +00:00), as Java's
    ``ISO_OFFSET_DATE_TIME`` writes it with the fraction's trailing zeros dropped."""
    p = _parts(value)
    if p.offset is None:
        raise ValueConversionError(f"a datetimeoffset value needs an offset: {value!r}")
    sign = "+" if p.offset >= 0 else "-"
    zone = "Z" if p.offset == 0 else f"{sign}{abs(p.offset) // 60:02d}:{abs(p.offset) % 60:02d}"
    return f"{_calendar(p.days)}T{_hms(p.nanos)}{_fraction(p.nanos)}{zone}"
