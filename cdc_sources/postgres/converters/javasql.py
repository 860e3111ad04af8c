"""What ``java.sql.Date`` and ``java.sql.Timestamp`` do to dates on their way through pgjdbc.

Debezium reads a few temporal values through these legacy classes instead of text: DATE columns
in snapshots (``ResultSet.getObject``) and the elements of DATE, TIMESTAMP and TIMESTAMPTZ
arrays (``PgArray``). Their hybrid Julian/Gregorian calendar leaves marks that Debezium passes on:

* DATE and TIMESTAMPTZ elements keep their fields but lose the era: ``0044-03-15 BC`` becomes
  year 44 AD. ``infinity``/``-infinity`` become the far-future dates pgjdbc's magic milliseconds
  fall on (``+292278994-08-16`` and ``+292269055-12-02``).
* TIMESTAMP elements go through an instant, so dates before 1582-10-15 are read as Julian
  calendar dates: ``1582-10-04`` becomes ``1582-10-14``, ``0001-01-01`` becomes ``0000-12-30``.
"""

from __future__ import annotations

import re

from cdc_sources.postgres.converters.model import ValueConversionError
from cdc_sources.postgres.converters.temporal_text import days_from_civil, parse_date

DATE_POS_INF = days_from_civil(292_278_994, 8, 16)
DATE_NEG_INF = days_from_civil(292_269_055, 12, 2)
TIMESTAMPTZ_NEG_INF = "+292269055-12-02T23:00:00"
"""``-infinity`` in a TIMESTAMPTZ array, before the fraction and the ``Z``."""

_TS_RE = re.compile(r"(\d{4,})-(\d\d)-(\d\d) (\d\d):(\d\d):(\d\d)(?:\.(\d{1,6}))?( BC)?")
_GREGORIAN_START = (1582, 10, 15)


def int32(value: int) -> int:
    """Java's ``(int)`` cast of a long."""
    return (value + 2**31) % 2**32 - 2**31


def legacy_date_days(text: str) -> int:
    """Epoch days of the ``LocalDate`` Debezium derives from a ``java.sql.Date`` (not int-cast)."""
    if text == "infinity":
        return DATE_POS_INF
    if text == "-infinity":
        return DATE_NEG_INF
    return parse_date(text[:-3] if text.endswith(" BC") else text)


def julian_days_from_civil(year: int, month: int, day: int) -> int:
    """Days since 1970-01-01 of a Julian calendar date (astronomical year numbering)."""
    a = (14 - month) // 12
    y = year + 4800 - a
    m = month + 12 * a - 3
    return day + (153 * m + 2) // 5 + 365 * y + y // 4 - 32083 - 2_440_588


def legacy_timestamp_micros(text: str) -> int:
    """Epoch microseconds of a finite TIMESTAMP text read through ``java.sql.Timestamp``."""
    m = _TS_RE.fullmatch(text)
    if m is None:
        raise ValueConversionError(f"cannot parse {text!r} as a PostgreSQL timestamp", kind="timestamp")
    year, month, day = int(m[1]), int(m[2]), int(m[3])
    if m[8]:
        year = 1 - year
    if (year, month, day) < _GREGORIAN_START:
        days = julian_days_from_civil(year, month, day)
    else:
        days = days_from_civil(year, month, day)
    seconds = days * 86_400 + (int(m[4]) * 60 + int(m[5])) * 60 + int(m[6])
    return seconds * 1_000_000 + (int(m[7].ljust(6, "0")) if m[7] else 0)
