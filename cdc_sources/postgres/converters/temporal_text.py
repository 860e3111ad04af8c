"""PostgreSQL temporal text (``DateStyle=ISO``, ``TimeZone=UTC``) to numbers, and Java ISO strings.

Dates use the proleptic Gregorian calendar with astronomical years (1 BC is year 0), as both
PostgreSQL and ``java.time`` do. The common case (years 1..9999, AD) goes through the C-coded
``datetime`` parsers; everything else (BC, five-digit years) through exact integer arithmetic.
"""

from __future__ import annotations

import re
from datetime import date, datetime

from cdc_sources.postgres.converters.model import ValueConversionError

MICROS_PER_DAY = 86_400_000_000
NANOS_PER_DAY = 86_400_000_000_000
_EPOCH_ORDINAL = date(1970, 1, 1).toordinal()
_EPOCH = datetime(1970, 1, 1)

_DATE_RE = re.compile(r"(\d{4,})-(\d\d)-(\d\d)( BC)?")
_TIME_RE = re.compile(r"(\d+):(\d\d):(\d\d)(?:\.(\d{1,9}))?")
_TS_RE = re.compile(r"(\d{4,})-(\d\d)-(\d\d) (\d\d):(\d\d):(\d\d)(?:\.(\d{1,9}))?"
                    r"(?:([+-])(\d\d)(?::(\d\d))?(?::(\d\d))?)?( BC)?")


def days_from_civil(year: int, month: int, day: int) -> int:
    """Days since 1970-01-01 of a proleptic Gregorian date (astronomical year numbering)."""
    y = year - (1 if month <= 2 else 0)
    era = y // 400
    yoe = y - era * 400
    doy = (153 * (month + (-3 if month > 2 else 9)) + 2) // 5 + day - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146097 + doe - 719468


def civil_from_days(days: int) -> tuple[int, int, int]:
    """The (year, month, day) of a day count since 1970-01-01."""
    z = days + 719468
    era = z // 146097
    doe = z - era * 146097
    yoe = (doe - doe // 1460 + doe // 36524 - doe // 146096) // 365
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    day = doy - (153 * mp + 2) // 5 + 1
    month = mp + 3 if mp < 10 else mp - 9
    return yoe + era * 400 + (1 if month <= 2 else 0), month, day


def iso_date(year: int, month: int, day: int) -> str:
    """``DateTimeFormatter.ISO_LOCAL_DATE``: four-digit years, ``+`` beyond 9999."""
    if year > 9999:
        return f"+{year}-{month:02d}-{day:02d}"
    if year < 0:
        return f"-{-year:04d}-{month:02d}-{day:02d}"
    return f"{year:04d}-{month:02d}-{day:02d}"


def iso_time(nanos_of_day: int, width: int | None = None) -> str:
    """``HH:mm:ss`` plus a fraction: minimal digits (``ISO_LOCAL_TIME``) or exactly ``width``."""
    seconds, nanos = divmod(nanos_of_day, 1_000_000_000)
    minutes, second = divmod(seconds, 60)
    hour, minute = divmod(minutes, 60)
    text = f"{hour:02d}:{minute:02d}:{second:02d}"
    if width:
        return f"{text}.{nanos:09d}"[: len(text) + 1 + width]
    if nanos:
        return f"{text}.{nanos:09d}".rstrip("0")
    return text


def iso_datetime(micros: int, width: int | None = None) -> str:
    """``yyyy-MM-ddTHH:mm:ss[.f]`` of epoch microseconds (no zone suffix)."""
    days, micros_of_day = divmod(micros, MICROS_PER_DAY)
    return iso_date(*civil_from_days(days)) + "T" + iso_time(micros_of_day * 1000, width)


def _fraction_nanos(digits: str | None) -> int:
    return int(digits.ljust(9, "0")) if digits else 0


def _bad(kind: str, text: str) -> ValueConversionError:
    return ValueConversionError(
        f"cannot parse {text!r} as a PostgreSQL {kind} (expected DateStyle=ISO output); "
        "check the session settings of the capture connections", kind=kind)


def parse_date(text: str) -> int:
    """Epoch days of a ``date`` text such as ``2020-01-31`` or ``0044-03-15 BC``."""
    if len(text) == 10:
        try:
            return date.fromisoformat(text).toordinal() - _EPOCH_ORDINAL
        except ValueError:
            pass
    m = _DATE_RE.fullmatch(text)
    if m is None:
        raise _bad("date", text)
    year = int(m[1])
    return days_from_civil(1 - year if m[4] else year, int(m[2]), int(m[3]))


def parse_time_nanos(text: str) -> int:
    """Nanoseconds of a ``time`` text (``HH:MM:SS[.ffffff]``; ``24:00:00`` is allowed)."""
    if len(text) == 8 or (len(text) > 9 and text[8] == "."):
        try:
            seconds = int(text[:2]) * 3600 + int(text[3:5]) * 60 + int(text[6:8])
            fraction = text[9:]
            if text[2] == ":" and text[5] == ":" and (not fraction or (len(fraction) <= 9 and fraction.isdigit())):
                return seconds * 1_000_000_000 + (int(fraction.ljust(9, "0")) if fraction else 0)
        except ValueError:
            pass
    m = _TIME_RE.fullmatch(text)
    if m is None:
        raise _bad("time", text)
    return ((int(m[1]) * 60 + int(m[2])) * 60 + int(m[3])) * 1_000_000_000 + _fraction_nanos(m[4])


def parse_timestamp_micros(text: str) -> int:
    """Epoch microseconds of a ``timestamp`` text, read as UTC."""
    if len(text) >= 19 and text[4] == "-" and not text.endswith("C"):
        try:
            delta = datetime.fromisoformat(text) - _EPOCH
        except ValueError:
            pass
        else:
            return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds
    return _parse_full(text, "timestamp")[0] // 1000


def parse_timestamptz_nanos(text: str) -> int:
    """Epoch nanoseconds (UTC) of a ``timestamptz`` text such as ``2020-01-01 10:00:00.5+02``."""
    return _parse_full(text, "timestamp with time zone")[0]


def _parse_full(text: str, kind: str) -> tuple[int, bool]:
    """(epoch nanoseconds, had an offset) of any timestamp text, offset applied."""
    m = _TS_RE.fullmatch(text)
    if m is None:
        raise _bad(kind, text)
    year = int(m[1])
    days = days_from_civil(1 - year if m[12] else year, int(m[2]), int(m[3]))
    seconds = days * 86_400 + (int(m[4]) * 60 + int(m[5])) * 60 + int(m[6])
    if m[8]:
        offset = int(m[9]) * 3600 + int(m[10] or 0) * 60 + int(m[11] or 0)
        seconds -= offset if m[8] == "+" else -offset
    return seconds * 1_000_000_000 + _fraction_nanos(m[7]), bool(m[8])


def parse_timetz_utc_nanos(text: str, *, allow_end_of_day: bool = False) -> int:
    """Nanoseconds of day, shifted to UTC, of a ``timetz`` text such as ``04:05:06.789-08``."""
    cut = max(text.rfind("+"), text.rfind("-"))
    if cut < 8:
        raise _bad("time with time zone", text)
    nanos = parse_time_nanos(text[:cut])
    if nanos >= NANOS_PER_DAY and not allow_end_of_day:
        raise ValueConversionError(
            f"the time with time zone {text!r} is past 23:59:59.999999, which Debezium cannot convert "
            "(it fails the connector on such values)", kind="time with time zone")
    parts = text[cut + 1:].split(":")
    offset = int(parts[0]) * 3600 + (int(parts[1]) * 60 if len(parts) > 1 else 0)
    offset += int(parts[2]) if len(parts) > 2 else 0
    offset = offset if text[cut] == "+" else -offset
    return (nanos - offset * 1_000_000_000) % NANOS_PER_DAY
