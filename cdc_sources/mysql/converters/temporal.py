"""DATE, TIME, DATETIME, TIMESTAMP and YEAR under every ``time.precision.mode``.

* DATE: days since the epoch (``io.debezium.time.Date``, Kafka ``Date`` in ``connect`` mode) or
  ``IsoDate`` text (``2024-02-29Z``).
* TIME: a signed duration, not a time of day: ``MicroTime`` (``NanoTime`` in ``nanoseconds``
  mode) accepts -838:59:59 to 838:59:59; ``connect`` (Kafka ``Time``, ms) and ``isostring``
  accept only 00:00:00 to 24:00:00 and fail otherwise, as Debezium does.
* DATETIME: the wall-clock value read as UTC: ``Timestamp`` (ms) up to DATETIME(3),
  ``MicroTimestamp`` for DATETIME(4..6) (``adaptive_time_microseconds``); ``MicroTimestamp``,
  ``NanoTimestamp``, Kafka ``Timestamp`` or ``IsoTimestamp`` in the other modes.
* TIMESTAMP: always ``ZonedTimestamp`` text in UTC. Streamed values carry exactly the column's
  fractional digits (``...:03.500Z`` for TIMESTAMP(3)); snapshot values are written from a
  ``java.sql.Timestamp`` with the shortest fraction (``...:03.5Z``).
* YEAR: ``io.debezium.time.Year``, the year as an int.

Zero dates (``0000-00-00``, or a zero month or day) become null in a nullable column and the
epoch in a NOT NULL one (the schema default, when there is one): python-mysql-replication
delivers None for zero DATE/DATETIME values and 1970-01-01 00:00:00 for a zero TIMESTAMP; the
snapshot delivers the text. With ``enable.time.adjuster`` (default on), DATE and DATETIME years
0-99 are moved to 1970-2069.

Snapshot values are MySQL's text (see `SNAPSHOT_CONVERSIONS`), read on a session with
``time_zone='+00:00'``.
"""

from __future__ import annotations

import datetime
import re
from collections.abc import Callable
from typing import Any

from cdc_sources.common import kschema as ks
from cdc_sources.mysql.converters.model import (
    NO_DEFAULT,
    ColumnFacts,
    Convert,
    InvalidTemporalError,
    TypeMapping,
    ValueConversionError,
    fixed,
)
from cdc_sources.mysql.converters.temporal_values import (
    EPOCH,
    EPOCH_ORDINAL,
    MICROS_PER_DAY,
    MICROS_PER_SECOND,
    ONE_MICRO,
    InvalidDateTextError,
    TemporalTextError,
    adjusted_year,
    days_from_civil,
    fixed_fraction,
    iso_date,
    iso_datetime,
    iso_time_of_day,
    month_length,
    parse_date_text,
    parse_datetime_text,
    parse_time_text,
)

_TIME = "io.debezium.time."
ZONED_TIMESTAMP = ks.logical("string", _TIME + "ZonedTimestamp")
YEAR = ks.logical("int32", _TIME + "Year")
ONE_MILLI = datetime.timedelta(milliseconds=1)
_EPOCH_ISO = "1970-01-01T00:00:00Z"


def _schema(kind: str, name: str) -> ks.Schema:
    return ks.logical(kind, name if name.startswith("org.") else _TIME + name)


def _text_error(exc: Exception, kind: str) -> Exception:
    """A snapshot value that is not MySQL's text: a misconfigured reader (TypeError), or text Debezium
    cannot read either, such as an invalid date (`ValueConversionError`)."""
    if isinstance(exc, TypeError):
        return TypeError(f"a snapshot {kind} value must be MySQL's text ({exc}); read snapshots with "
                         "conv=cdc_sources.mysql.converters.SNAPSHOT_CONVERSIONS")
    return ValueConversionError(f"{exc}; Debezium cannot read this {kind} value either", kind=kind)


# -- DATE ----------------------------------------------------------------------------------------

def _date_output(facts: ColumnFacts) -> tuple[ks.Schema, Callable[[int], Any], Any]:
    """Schema, days -> rendered value, and the NOT NULL fallback, per mode."""
    mode = facts.settings.time_precision_mode
    if mode == "isostring":
        return _schema("string", "IsoDate"), lambda days: iso_date(days) + "Z", "1970-01-01Z"
    schema = _schema("int32", ks.CONNECT_DATE) if mode == "connect" else _schema("int32", "Date")
    return schema, _same_int, 0


def _same_int(value: int) -> int:
    return value


def date_mapping(facts: ColumnFacts) -> TypeMapping:
    """DATE."""
    schema, render, fallback = _date_output(facts)
    adjust = facts.settings.enable_time_adjuster
    plain = render is _same_int
    if facts.origin == "binlog":
        if adjust:
            def from_date(value: datetime.date) -> Any:
                if value.year < 100:
                    value = value.replace(year=adjusted_year(value.year))
                days = value.toordinal() - EPOCH_ORDINAL
                return days if plain else render(days)
        else:
            def from_date(value: datetime.date) -> Any:
                days = value.toordinal() - EPOCH_ORDINAL
                return days if plain else render(days)
        make = fixed(from_date)
    else:
        epoch_on_invalid = facts.settings.event_processing_failure_handling_mode != "fail"
        name = facts.column.name

        def make(null: Any) -> Convert:
            def from_text(text: str) -> Any:
                try:
                    parts = parse_date_text(text)
                except InvalidDateTextError:
                    if epoch_on_invalid:
                        return render(0)  # the epoch, as the stream reads it (`binlog_values`)
                    raise InvalidTemporalError(
                        f"column {name}: invalid date {text!r} (the server allows invalid dates: sql_mode "
                        "ALLOW_INVALID_DATES); Debezium's snapshot stops here too. Set "
                        "event.processing.failure.handling.mode=warn (or skip) to read such values as 1970-01-01"
                    ) from None
                except (TemporalTextError, TypeError) as exc:
                    raise _text_error(exc, "date") from None
                if parts is None:
                    return null
                year, month, day = parts
                return render(days_from_civil(adjusted_year(year) if adjust else year, month, day))
            return from_text
    return TypeMapping(schema, make, fallback, _date_default(facts, render), may_fail=facts.origin == "snapshot")


_ZERO_DATE = re.compile(r"\d{4}-\d{2}-00|\d{4}-00-\d{2}|0000-\d{2}-\d{2}")
_ZERO_DATETIME = re.compile(r"(\d{4}-\d{2}-00|\d{4}-00-\d{2}|0000-\d{2}-\d{2}) (00:00:00(\.\d{1,6})?)")
_DEFAULT_DATE = re.compile(r"(\d{4,10})-(\d{2})-(\d{2})(?: (\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{0,9}))?)?)?")


def _smart_day(year: int, month: int, day: int) -> int:
    """java.time's SMART resolver: a day of 29-31 past the month's end becomes its last day."""
    if not 1 <= month <= 12 or not 1 <= day <= 31:
        raise ValueError("out of range")
    return min(day, month_length(year, month))


def _date_default(facts: ColumnFacts, render: Callable[[int], Any]) -> Callable[[Any], Any]:
    """Debezium's ``convertToLocalDate`` and the DATE converter."""
    optional = facts.column.optional
    adjust = facts.settings.enable_time_adjuster

    def default_of(literal: Any) -> Any:
        text = str(literal)
        if _ZERO_DATE.fullmatch(text) or _ZERO_DATETIME.fullmatch(text) or text == "0":
            if optional:
                return NO_DEFAULT
            text = "1970-01-01"
        match = _DEFAULT_DATE.fullmatch(text)
        try:
            if match is None:
                raise ValueError(text)
            year, month = int(match[1]), int(match[2])
            day = _smart_day(year, month, int(match[3]))
        except ValueError:
            if optional:
                return NO_DEFAULT
            year, month, day = 1970, 1, 1
        return render(days_from_civil(adjusted_year(year) if adjust else year, month, day))
    return default_of


# -- DATETIME ------------------------------------------------------------------------------------

def _datetime_output(facts: ColumnFacts) -> tuple[ks.Schema, Callable[[int], Any] | None, Any]:
    """Schema, epoch micros -> rendered value (None: the micros themselves), NOT NULL fallback."""
    mode = facts.settings.time_precision_mode
    precision = facts.column.length if facts.column.length is not None else -1
    if mode == "isostring":
        return _schema("string", "IsoTimestamp"), lambda micros: iso_datetime(micros) + "Z", _EPOCH_ISO
    if mode == "connect":
        return _schema("int64", ks.CONNECT_TIMESTAMP), _millis, 0
    if mode == "nanoseconds" or (mode == "adaptive_time_microseconds" and precision > 6):
        return _schema("int64", "NanoTimestamp"), _epoch_nanos, 0
    if mode == "microseconds" or precision > 3:
        return _schema("int64", "MicroTimestamp"), None, 0
    return _schema("int64", "Timestamp"), _millis, 0


def _millis(micros: int) -> int:
    return micros // 1000


def _nanos(micros: int) -> int:
    return micros * 1000


_LONG_MIN, _LONG_MAX = -(2**63), 2**63 - 1


def _epoch_nanos(micros: int) -> int:
    """``NanoTimestamp``: exact ``long`` arithmetic; values outside about 1677-09-21..2262-04-11
    overflow, which Debezium reports as a conversion failure."""
    days, micros_of_day = divmod(micros, MICROS_PER_DAY)
    whole_days = days * 86_400_000_000_000
    total = whole_days + micros_of_day * 1000
    if not _LONG_MIN <= whole_days <= _LONG_MAX or not _LONG_MIN <= total <= _LONG_MAX:
        raise ValueConversionError(
            "the DATETIME value is outside the range of INT64 epoch nanoseconds (about 1677-09-21 to "
            "2262-04-11); use time.precision.mode=microseconds or isostring", kind="datetime")
    return total


def datetime_mapping(facts: ColumnFacts) -> TypeMapping:
    """DATETIME."""
    schema, render, fallback = _datetime_output(facts)
    adjust = facts.settings.enable_time_adjuster
    if facts.origin == "binlog":
        make = fixed(_datetime_from_value(render, adjust))
    else:
        def make(null: Any) -> Convert:
            return _datetime_from_text(render, adjust, null)
    out = render if render is not None else _same_int
    return TypeMapping(schema, make, fallback, _datetime_default(facts, out),
                       may_fail=facts.origin == "snapshot" or render is _epoch_nanos)


def _datetime_from_value(render: Callable[[int], Any] | None, adjust: bool) -> Convert:
    if render is _millis and not adjust:
        def millis(value: datetime.datetime) -> int:
            return (value - EPOCH) // ONE_MILLI
        return millis
    if render is _millis:
        def adjusted_millis(value: datetime.datetime) -> int:
            if value.year < 100:
                value = value.replace(year=adjusted_year(value.year))
            return (value - EPOCH) // ONE_MILLI
        return adjusted_millis
    if render is None and not adjust:
        def micros(value: datetime.datetime) -> int:
            return (value - EPOCH) // ONE_MICRO
        return micros
    if render is None:
        def adjusted_micros(value: datetime.datetime) -> int:
            if value.year < 100:
                value = value.replace(year=adjusted_year(value.year))
            return (value - EPOCH) // ONE_MICRO
        return adjusted_micros

    def rendered(value: datetime.datetime) -> Any:
        if adjust and value.year < 100:
            value = value.replace(year=adjusted_year(value.year))
        return render((value - EPOCH) // ONE_MICRO)
    return rendered


def _datetime_from_text(render: Callable[[int], Any] | None, adjust: bool, null: Any) -> Convert:
    out = render if render is not None else _same_int

    def from_text(text: str) -> Any:
        try:
            value = datetime.datetime.fromisoformat(text)
        except (ValueError, TypeError):
            value = None
        if value is not None and not (adjust and value.year < 100):
            return out((value - EPOCH) // ONE_MICRO)
        try:
            parts = parse_datetime_text(text)
        except (TemporalTextError, TypeError) as exc:
            raise _text_error(exc, "datetime") from None
        if parts is None:
            return null
        year, month, day, micros_of_day = parts
        days = days_from_civil(adjusted_year(year) if adjust else year, month, day)
        return out(days * MICROS_PER_DAY + micros_of_day)
    return from_text


def _datetime_default(facts: ColumnFacts, render: Callable[[int], Any]) -> Callable[[Any], Any]:
    """Debezium's ``convertToLocalDateTime`` and the DATETIME converter."""
    optional = facts.column.optional
    adjust = facts.settings.enable_time_adjuster

    def default_of(literal: Any) -> Any:
        text = str(literal)
        if _ZERO_DATETIME.fullmatch(text) or text == "0":
            if optional:
                return NO_DEFAULT
            text = "1970-01-01 00:00:00"
        match = _DEFAULT_DATE.fullmatch(text)
        try:
            if match is None or len(match[1]) < 4:
                raise ValueError(text)
            year, month = int(match[1]), int(match[2])
            if year == 0:
                raise ValueError(text)  # "yyyy" is the year of the era: 0 is invalid
            day = _smart_day(year, month, int(match[3]))
            hour, minute, second = (int(match[i] or 0) for i in (4, 5, 6))
            if hour > 23 or minute > 59 or second > 59:
                raise ValueError(text)
            micros = int(((match[7] or "") + "000000")[:6])
        except ValueError:
            if optional:
                return NO_DEFAULT
            year, month, day, hour, minute, second, micros = 1970, 1, 1, 0, 0, 0, 0
        days = days_from_civil(adjusted_year(year) if adjust else year, month, day)
        return render((days * 86_400 + (hour * 60 + minute) * 60 + second) * 1_000_000 + micros)
    return default_of


# -- TIMESTAMP -----------------------------------------------------------------------------------

def _zoned_fraction(facts: ColumnFacts) -> int:
    """The fraction width Debezium's ``ZonedTimestamp`` formatter uses (0: the shortest)."""
    width = facts.column.length if facts.column.length is not None else -1
    return width if 0 < width <= 9 else 0


def timestamp_mapping(facts: ColumnFacts) -> TypeMapping:
    """TIMESTAMP: ``ZonedTimestamp`` in UTC."""
    width = _zoned_fraction(facts)
    if facts.origin == "binlog":
        def make(null: Any) -> Convert:
            return _zoned_from_value(width, null)
    else:
        def make(null: Any) -> Convert:
            def from_text(text: str) -> Any:
                try:
                    parts = parse_datetime_text(text)
                except (TemporalTextError, TypeError) as exc:
                    raise _text_error(exc, "timestamp") from None
                if parts is None:
                    return null
                year, month, day, micros_of_day = parts
                return iso_datetime(days_from_civil(year, month, day) * MICROS_PER_DAY + micros_of_day) + "Z"
            return from_text
    return TypeMapping(ZONED_TIMESTAMP, make, _EPOCH_ISO, _timestamp_default(facts, width),
                       may_fail=facts.origin == "snapshot")


def _zoned_from_value(width: int, null: Any) -> Convert:
    """A binlog TIMESTAMP: a naive UTC ``datetime``; 1970-01-01 00:00:00 is MySQL's zero value."""
    if width == 0:
        def shortest(value: datetime.datetime) -> Any:
            if value == EPOCH:
                return null
            if value.microsecond:
                return value.isoformat().rstrip("0") + "Z"
            return value.isoformat() + "Z"
        return shortest

    zeros = "." + "0" * width + "Z"
    cut = 20 + min(width, 6)
    pad = "0" * (width - 6) + "Z" if width > 6 else "Z"

    def fixed_width(value: datetime.datetime) -> Any:
        if value == EPOCH:
            return null
        if value.microsecond:
            return value.isoformat()[:cut] + pad  # isoformat writes 6 fraction digits
        return value.isoformat() + zeros
    return fixed_width


_DEFAULT_TIMESTAMP = re.compile(r"(\d+)\D+(\d+)\D+(\d+)(?:\D+(\d+)(?:\D+(\d+)(?:\D+(\d+)(?:\.(\d+))?)?)?)?")


def _timestamp_default(facts: ColumnFacts, width: int) -> Callable[[Any], Any]:
    """Debezium's ``convertToTimestamp``: the literal is read in the JVM's zone (UTC here, as
    Debezium's images run) and written with the column's fraction width."""
    optional = facts.column.optional

    def default_of(literal: Any) -> Any:
        text = str(literal).strip()
        if _ZERO_DATETIME.fullmatch(text) or text in ("0", "1970-01-01 00:00:00"):
            return NO_DEFAULT if optional else _EPOCH_ISO
        match = _DEFAULT_TIMESTAMP.fullmatch(text)
        if match is None or not 1 <= int(match[2]) <= 12 or not 1 <= int(match[3]) <= 31:
            raise ValueConversionError(f"cannot parse the TIMESTAMP default {literal!r} (Debezium fails too)",
                                       kind="default")
        year, month, day, hour, minute, second = (int(match[i] or 0) for i in range(1, 7))
        micros = int(((match[7] or "") + "000000")[:6])
        epoch_micros = (days_from_civil(year, month, day) * 86_400 + (hour * 60 + minute) * 60 + second) \
            * 1_000_000 + micros
        days, micros_of_day = divmod(epoch_micros, MICROS_PER_DAY)
        fraction = fixed_fraction(micros_of_day % 1_000_000, width) if width else None
        return f"{iso_date(days)}T{iso_time_of_day(micros_of_day, fraction)}Z"
    return default_of


# -- TIME ----------------------------------------------------------------------------------------

_DEFAULT_TIME_WITH_DATE = re.compile(r"[0-9]*-[0-9]*-[0-9]* ([0-9]*:[0-9]*:[0-9]*(\.[0-9]*)?)")


def _time_output(facts: ColumnFacts) -> tuple[ks.Schema, Callable[[int], Any] | None, Any]:
    """Schema, micros -> rendered value (None: the micros themselves), NOT NULL fallback."""
    mode = facts.settings.time_precision_mode
    if mode == "connect":
        return _schema("int32", ks.CONNECT_TIME), _time_millis, 0
    if mode == "isostring":
        return _schema("string", "IsoTime"), _iso_time, "00:00:00Z"
    if mode == "nanoseconds":
        return _schema("int64", "NanoTime"), _nanos, 0
    return _schema("int64", "MicroTime"), None, 0


def binlog_time_micros(value: datetime.timedelta) -> int:
    """Microseconds of a TIME as python-mysql-replication 1.0.17 decodes it.

    For a negative TIME with a fraction it borrows wrongly: it negates the integer part and the
    fraction separately, so -00:00:00.000001 arrives as -0.999999 s and -12:34:56.789012 as
    -12:34:56.210988 (one second more, minus the fraction). That is undone here; Debezium's
    binlog client decodes these values correctly.
    """
    micros = value // ONE_MICRO
    if micros < 0:
        borrowed = -micros % MICROS_PER_SECOND
        if borrowed:
            return -(-micros - borrowed + MICROS_PER_SECOND - borrowed)
    return micros


def _within_day(micros: int) -> None:
    if micros < 0 or micros > MICROS_PER_DAY:
        raise ValueConversionError(
            f"the TIME value {micros / 1e6:.6f}s is outside 00:00:00-24:00:00; Debezium fails on it with "
            "this time.precision.mode (use adaptive_time_microseconds)", kind="time")


def _time_millis(micros: int) -> int:
    _within_day(micros)
    return micros // 1000


def _iso_time(micros: int) -> str:
    _within_day(micros)
    return iso_time_of_day(micros % MICROS_PER_DAY) + "Z"


def time_mapping(facts: ColumnFacts) -> TypeMapping:
    """TIME."""
    schema, render, fallback = _time_output(facts)
    out = render if render is not None else _same_int
    convert: Convert
    if facts.origin == "snapshot":
        def from_text(text: str) -> Any:
            try:
                return out(parse_time_text(text))
            except (TemporalTextError, TypeError) as exc:
                raise _text_error(exc, "time") from None
        convert = from_text
    elif render is None:
        convert = binlog_time_micros
    else:
        def rendered(value: datetime.timedelta) -> Any:
            return out(binlog_time_micros(value))
        convert = rendered

    def default_of(literal: Any) -> Any:
        text = str(literal)
        with_date = _DEFAULT_TIME_WITH_DATE.fullmatch(text)
        if with_date is not None:
            text = with_date[1]
        try:
            return out(parse_time_text(text))
        except TemporalTextError:
            raise ValueConversionError(f"Unexpected format for TIME column default {literal!r} (Debezium fails "
                                       "too)", kind="default") from None
    return TypeMapping(schema, fixed(convert), fallback, default_of,
                       may_fail=facts.origin == "snapshot" or render in (_time_millis, _iso_time))


# -- YEAR ----------------------------------------------------------------------------------------

def _snapshot_year(value: int) -> int:
    return adjusted_year(value)


def year_mapping(facts: ColumnFacts) -> TypeMapping:
    """YEAR: both libraries deliver the year as an int. The binlog stores 1900 + a byte, so YEAR
    0000 streams as 1900; Connector/J reads it as 0, which Debezium's YEAR converter always (even
    with ``enable.time.adjuster=false``) moves to 2000."""
    def default_of(literal: Any) -> Any:
        text = str(literal)
        if not re.fullmatch(r"[+-]?[0-9]+", text):
            raise ValueConversionError(f"the YEAR default {literal!r} is not an integer (Debezium fails too)",
                                       kind="default")
        return adjusted_year(int(text))
    if facts.origin == "snapshot":
        return TypeMapping(YEAR, fixed(_snapshot_year), 0, default_of)
    return TypeMapping(YEAR, fixed(_same_int), 0, default_of, identity=True)

