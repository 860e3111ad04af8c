"""The pymysql conversion table the snapshot reads with (``pymysql.connect(conv=...)``).

It is pymysql's default table except that DECIMAL, DATE, TIME, DATETIME and TIMESTAMP values
stay the server's text. Text is what Debezium's JDBC snapshot parses too (zero dates, year 0,
TIME beyond 24 hours), so the converters reproduce it exactly, and it spares building
``Decimal``/``datetime`` objects: DECIMAL text becomes Connect bytes with integer arithmetic
only. Read on a session with ``time_zone='+00:00'`` so TIMESTAMP text is UTC.

Other types keep pymysql's defaults: integers and YEAR as ``int``, FLOAT/DOUBLE as ``float``,
character data (and ENUM, SET, JSON) as ``str``, BINARY/BLOB/BIT/GEOMETRY as ``bytes``.
"""

from __future__ import annotations

from types import MappingProxyType
from typing import Any

from pymysql import converters
from pymysql.constants import FIELD_TYPE

_AS_TEXT = (FIELD_TYPE.DECIMAL, FIELD_TYPE.NEWDECIMAL, FIELD_TYPE.DATE, FIELD_TYPE.NEWDATE, FIELD_TYPE.TIME,
            FIELD_TYPE.DATETIME, FIELD_TYPE.TIMESTAMP)


def _conversions() -> dict[Any, Any]:
    table: dict[Any, Any] = dict(converters.conversions)
    for code in _AS_TEXT:
        table[code] = converters.through
    return table


SNAPSHOT_CONVERSIONS: MappingProxyType[Any, Any] = MappingProxyType(_conversions())
"""Pass ``dict(SNAPSHOT_CONVERSIONS)`` as pymysql's ``conv`` (it needs a real dict)."""
