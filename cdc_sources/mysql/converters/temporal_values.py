"""Calendar arithmetic, MySQL temporal text and Java's ISO formats, for `temporal`.

Everything here works on plain numbers, so that dates Python's ``datetime`` cannot hold (year 0,
which Debezium's snapshot accepts and its time adjuster turns into 2000) still convert.
"""

from __future__ import annotations

import datetime
import re
from typing import Final

EPOCH: Final = datetime.datetime(1970, 1, 1)
EPOCH_ORDINAL: Final = EPOCH.toordinal()
ONE_MICRO: Final = datetime.timedelta(microseconds=1)
MICROS_PER_DAY: Final = 86_400_000_000
MICROS_PER_SECOND: Final = 1_000_000


def days_from_civil(year: int, month: int, day: int) -> int:
    """Days since 1970-01-01 of a proleptic Gregorian date (any year; days past the month's end
    roll over into the next month, like Java's lenient ``Timestamp``)."""
    y = year - (1 if month <= 2 else 0)
    era = y // 400
    yoe = y - era * 400
    doy = (153 * (month + (-3 if month > 2 else 9)) + 2) // 5 + day - 1
    return era * 146_097 + yoe * 365 + yoe // 4 - yoe // 100 + doy - 719_468


def civil_from_days(days: int) -> tuple[int, int, int]:
    """(year, month, day) of a day count since 1970-01-01."""
    z = days + 719_468
    era = z // 146_097
    doe = z - era * 146_097
    yoe = (doe - doe // 1460 + doe // 36_524 - doe // 146_096) // 365
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    day = doy - (153 * mp + 2) // 5 + 1
    month = mp + (3 if mp < 10 else -9)
    return yoe + era * 400 + (1 if month <= 2 else 0), month, day


def is_leap(year: int) -> bool:
    """Proleptic Gregorian leap year."""
    return year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)


def month_length(year: int, month: int) -> int:
    """Days in a month."""
    if month == 2:
        return 29 if is_leap(year) else 28
    return 30 if month in (4, 6, 9, 11) else 31


def adjusted_year(year: int) -> int:
    """Debezium's time adjuster (``enable.time.adjuster``): 0-69 -> 2000-2069, 70-99 -> 1970-1999."""
    if 0 <= year <= 69:
        return year + 2000
    if 70 <= year <= 99:
        return year + 1900
    return year


# -- ISO text, as java.time's ISO formatters write it -------------------------------------------

def iso_year(year: int) -> str:
    """``ISO_LOCAL_DATE``'s year: at least 4 digits, ``+`` above 9999, ``-`` below 0."""
    if year > 9999:
        return f"+{year}"
    if year < 0:
        return f"-{-year:04d}"
    return f"{year:04d}"


def iso_date(days: int) -> str:
    """``yyyy-MM-dd`` of a day count."""
    year, month, day = civil_from_days(days)
    return f"{iso_year(year)}-{month:02d}-{day:02d}"


def minimal_fraction(micros: int) -> str:
    """``ISO_LOCAL_TIME``'s fraction: as many digits as needed, none for zero."""
    return f".{micros:06d}".rstrip("0") if micros else ""


def fixed_fraction(micros: int, width: int) -> str:
    """``appendFraction(NANO_OF_SECOND, width, width, true)``: exactly ``width`` digits."""
    return "." + f"{micros:06d}000"[:width]


def iso_time_of_day(micros_of_day: int, fraction: str | None = None) -> str:
    """``HH:mm:ss`` plus a fraction (default: the minimal one)."""
    seconds, micros = divmod(micros_of_day, MICROS_PER_SECOND)
    minutes, second = divmod(seconds, 60)
    hour, minute = divmod(minutes, 60)
    return f"{hour:02d}:{minute:02d}:{second:02d}{minimal_fraction(micros) if fraction is None else fraction}"


def iso_datetime(epoch_micros: int) -> str:
    """``ISO_LOCAL_DATE_TIME`` of microseconds since the epoch (minimal fraction)."""
    days, micros_of_day = divmod(epoch_micros, MICROS_PER_DAY)
    return f"{iso_date(days)}T{iso_time_of_day(micros_of_day)}"


# -- MySQL text ---------------------------------------------------------------------------------

_DATE_TEXT = re.compile(r"([0-9]*)-([0-9]*)-([0-9]*)")
_DATETIME_TEXT = re.compile(r"([0-9]*)-([0-9]*)-([0-9]*) ([0-9]+):([0-9]+):([0-9]+)(?:\.([0-9]*))?")
_TIME_TEXT = re.compile(r"(-?[0-9]*):([0-9]*)(:([0-9]*))?(\.([0-9]*))?")


class TemporalTextError(ValueError):
    """A temporal value's text is not in the form MySQL prints it."""


class InvalidDateTextError(TemporalTextError):
    """A DATE text in MySQL's form that names no date (``2020-02-30``: ``ALLOW_INVALID_DATES``)."""


def parse_date_text(text: str) -> tuple[int, int, int] | None:
    """A DATE text -> (year, month, day); None for a zero month or day (Debezium's
    ``stringToLocalDate``)."""
    match = _DATE_TEXT.fullmatch(text)
    if match is None:
        raise TemporalTextError(f"Unexpected format for DATE column: {text!r}")
    year, month, day = (int(g) for g in match.groups())
    if month == 0 or day == 0:
        return None
    if month > 12 or day > month_length(year, month):
        raise InvalidDateTextError(f"invalid date {text!r}")
    return year, month, day


def parse_datetime_text(text: str) -> tuple[int, int, int, int] | None:
    """A DATETIME/TIMESTAMP text -> (year, month, day, microseconds of the day); None for a zero
    month or day (Debezium's ``containsZeroValuesInDatePart``)."""
    match = _DATETIME_TEXT.fullmatch(text)
    if match is None:
        raise TemporalTextError(f"Unexpected format for DATETIME column: {text!r}")
    year, month, day, hour, minute, second = (int(g) for g in match.groups()[:6])
    if month == 0 or day == 0:
        return None
    fraction = match.group(7) or ""
    micros = int((fraction + "000000")[:6])
    return year, month, day, ((hour * 60 + minute) * 60 + second) * MICROS_PER_SECOND + micros


def parse_time_text(text: str) -> int:
    """A TIME text (``-838:59:59.000000``) -> microseconds, as Debezium's ``stringToDuration``."""
    match = _TIME_TEXT.fullmatch(text)
    if match is None:
        raise TemporalTextError(f"Unexpected format for TIME column: {text!r}")
    hours = int(match.group(1))
    minutes = int(match.group(2))
    seconds = int(match.group(4)) if match.group(4) is not None else 0
    fraction = match.group(6) if match.group(4) is not None and match.group(6) is not None else ""
    micros = int((fraction + "000000")[:6]) if fraction else 0
    rest = (minutes * 60 + seconds) * MICROS_PER_SECOND + micros
    total = hours * 3_600_000_000 + rest if hours >= 0 else hours * 3_600_000_000 - rest
    return -total if text[:1] == "-" and total > 0 else total
