"""The canonical text of a value, row and key: the same on the source (in SQL) and on silver.

`verify` compares a source table and its silver table by hashing a canonical text of every row
on both sides. A column takes part only when its source type and its silver type are a pair
whose texts are proven equal (`ColumnKind`); anything else is listed as unchecked.

The canonical text of a row is its fields joined by ``,``; a field is ``-`` for null, else
``<number of characters>:<text>``, so no value can imitate a field boundary. A key's text is
built the same way from the key columns. The row hash is the MD5 of the row text (UTF-8); the
bucket of a key is the first 8 hex digits of the MD5 of the key text, as a number, modulo the
number of buckets; a bucket's checksum is the sum of the rows' first 15 hex digits (60 bits).

Texts per kind (the source side writes the same in SQL, see the source readers):

* ``INT``: the decimal integer; ``DECIMAL``: plain notation with exactly the column's scale;
* ``NUMBER``: a decimal of any size and scale held as exact text in silver (PostgreSQL
  ``NUMERIC`` without a scale): plain notation without trailing fraction zeros, ``0`` for zero
  (the capture, like Debezium's, may drop trailing zeros; the value is the same);
* ``TEXT``: the text; ``BOOL``: ``true``/``false``; ``BYTES``: lower-case hex;
* ``DATE``: ``YYYY-MM-DD``; ``TIMESTAMP``: ``YYYY-MM-DD HH:MM:SS.ffffff`` (UTC for instants,
  the wall clock for timestamps without a zone, as silver stores them);
* ``FLOAT64`` / ``FLOAT32``: the IEEE 754 big-endian bytes in hex (exact, no printing rules).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import struct
from collections.abc import Sequence
from decimal import Decimal
from enum import Enum
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

__all__ = ["NULL_FIELD", "ColumnKind", "bucket_of", "column_texts", "field_text", "join_fields", "row_checksum",
           "row_hash", "value_text"]

NULL_FIELD = "-"


class ColumnKind(Enum):
    """A (source type, silver type) family whose canonical texts are proven equal."""

    INT = "int"
    DECIMAL = "decimal"
    NUMBER = "number"
    TEXT = "text"
    BOOL = "bool"
    BYTES = "bytes"
    DATE = "date"
    TIMESTAMP = "timestamp"
    FLOAT64 = "float64"
    FLOAT32 = "float32"


def value_text(kind: ColumnKind, value: Any) -> str | None:
    """The canonical text of a silver value (as pyarrow's ``to_pylist`` gives it), None for null.

    Raises:
        TypeError: the value is not of the kind's Python type.
    """
    if value is None:
        return None
    if kind is ColumnKind.INT:
        if isinstance(value, Decimal):
            return format(value, "f")
        return str(int(value))
    if kind is ColumnKind.DECIMAL:
        if not isinstance(value, Decimal):
            raise TypeError(f"expected a Decimal, got {type(value).__name__}")
        return format(value, "f")
    if kind is ColumnKind.NUMBER:
        return _number_text(value)
    if kind is ColumnKind.TEXT:
        return str(value)
    if kind is ColumnKind.BOOL:
        return "true" if value else "false"
    if kind is ColumnKind.BYTES:
        return bytes(value).hex()
    if kind is ColumnKind.DATE:
        return f"{value.year:04d}-{value.month:02d}-{value.day:02d}"
    if kind is ColumnKind.TIMESTAMP:
        if not isinstance(value, dt.datetime):
            raise TypeError(f"expected a datetime, got {type(value).__name__}")
        if value.tzinfo is not None:
            value = value.astimezone(dt.UTC)
        return (f"{value.year:04d}-{value.month:02d}-{value.day:02d} "
                f"{value.hour:02d}:{value.minute:02d}:{value.second:02d}.{value.microsecond:06d}")
    if kind is ColumnKind.FLOAT64:
        return struct.pack(">d", value).hex()
    if kind is ColumnKind.FLOAT32:
        return struct.pack(">f", value).hex()
    raise AssertionError(kind)  # pragma: no cover - every kind is handled above


def _number_text(value: Any) -> str:
    """``NUMBER``'s text of a silver value (decimal text, or a Decimal)."""
    try:
        number = value if isinstance(value, Decimal) else Decimal(str(value))
    except ArithmeticError:
        raise TypeError(f"expected decimal text, got {value!r}") from None
    if not number.is_finite():
        raise TypeError(f"expected a finite decimal, got {value!r}")
    if number == 0:
        return "0"
    plain = format(number, "f")  # exact at any length (normalize() would round to the context)
    return plain.rstrip("0").rstrip(".") if "." in plain else plain


def column_texts(kind: ColumnKind, values: pa.ChunkedArray | pa.Array) -> list[str | None]:
    """`value_text` of every value of a silver column; integers, text and booleans column-wise
    with Arrow (the same texts: `tests/pipelines/verify` holds both ways equal)."""
    if kind is ColumnKind.INT and pa.types.is_integer(values.type):
        return pc.cast(values, pa.string()).to_pylist()  # type: ignore[no-any-return]
    if kind is ColumnKind.TEXT and (pa.types.is_string(values.type) or pa.types.is_large_string(values.type)):
        return values.to_pylist()  # type: ignore[no-any-return]
    if kind is ColumnKind.BOOL and pa.types.is_boolean(values.type):
        return pc.if_else(values, "true", "false").to_pylist()  # type: ignore[no-any-return]
    return [value_text(kind, v) for v in values.to_pylist()]


def field_text(text: str | None) -> str:
    """One field of a row or key text: ``-`` for null, else ``<length>:<text>``."""
    return NULL_FIELD if text is None else f"{len(text)}:{text}"


def join_fields(texts: Sequence[str | None]) -> str:
    """The canonical text of a row or key from its values' texts."""
    return ",".join(field_text(t) for t in texts)


def row_hash(text: str) -> str:
    """The MD5 (hex) of a row or key text."""
    return hashlib.md5(text.encode("utf-8"), usedforsecurity=False).hexdigest()


def row_checksum(text: str) -> int:
    """A row's share of its bucket's checksum: the first 15 hex digits of its MD5."""
    return int(row_hash(text)[:15], 16)


def bucket_of(key_text: str, buckets: int) -> int:
    """The bucket of a key (its key text's MD5, first 8 hex digits, modulo ``buckets``)."""
    return int(row_hash(key_text)[:8], 16) % buckets
