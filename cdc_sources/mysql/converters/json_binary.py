"""MySQL binary JSON, as python-mysql-replication decodes it, rendered as Debezium renders it.

MySQL writes JSON columns to the binlog in its binary format; Debezium turns them into text
with the binlog client's ``JsonBinary.parseAsString`` (``JsonStringFormatter``): no spaces,
members in stored order (MySQL sorts object keys by length, then bytes), Jackson-style string
escapes, ``Double.toString`` numbers (the exact ``BigDecimal`` expansion when that would use an
exponent), and opaque temporal values as quoted ``yyyy-MM-dd HH:mm:ss[.ffffff]`` strings.

python-mysql-replication decodes the binary format into Python objects (``bytes`` for keys
and strings, ``Decimal``, ``datetime``, ``time``); this module writes them back the same way.
Lossy spots of the library that cannot be undone: the sign of a negative opaque TIME, DATE
versus DATETIME opaques (both arrive as ``datetime``), other opaque types (arrive as decoded
text where Debezium writes base64) and a top-level JSON ``null`` (arrives as None, like SQL
NULL). MariaDB stores JSON as text and never takes this path.
"""

from __future__ import annotations

import datetime
from decimal import Decimal
from typing import Any

from cdc_sources.common.javacompat import double_to_string, jackson_string


def _micros(value: int) -> str:
    return f".{value:06d}".rstrip("0") if value else ""


def _double(value: float) -> str:
    text = double_to_string(value)
    return format(Decimal(value), "f") if "E" in text else text


def render_binary_json(value: Any) -> str:
    """The JSON text Debezium writes for a decoded binary JSON document."""
    if isinstance(value, dict):
        return "{" + ",".join(jackson_string(_text(k)) + ":" + render_binary_json(v) for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ",".join(render_binary_json(v) for v in value) + "]"
    if isinstance(value, (bytes, str)):
        return jackson_string(_text(value))
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return _double(value)
    if isinstance(value, Decimal):
        return format(value, "f")
    if isinstance(value, datetime.datetime):
        return (f'"{value.year:04d}-{value.month:02d}-{value.day:02d} {value.hour:02d}:{value.minute:02d}:'
                f'{value.second:02d}{_micros(value.microsecond)}"')
    if isinstance(value, datetime.time):
        return f'"{value.hour:02d}:{value.minute:02d}:{value.second:02d}{_micros(value.microsecond)}"'
    return jackson_string(str(value))


def _text(value: bytes | str) -> str:
    return value.decode("utf-8", errors="replace") if isinstance(value, bytes) else value
