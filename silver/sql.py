"""SQL text helpers: the one identifier-quoting function and literals.

Every identifier that reaches generated SQL (MERGE, DELETE, UPDATE, CASE expressions) goes
through `quote`, so names with spaces, dots, leading digits, reserved words, mixed case or
backticks work everywhere.

Example:
    >>> quote("order")
    '`order`'
    >>> quote("we`ird")
    '`we``ird`'
"""

from __future__ import annotations

from collections.abc import Iterable

from pyspark.sql import Column
from pyspark.sql import functions as sf

__all__ = ["column", "qualified", "qualified_table", "quote", "quote_path_table", "string_literal"]


def quote(name: str) -> str:
    """Quote one identifier with backticks, doubling embedded backticks.

    Raises:
        ValueError: for an empty name (Spark rejects empty identifiers anyway).
    """
    if not name:
        raise ValueError("an SQL identifier cannot be empty")
    return "`" + name.replace("`", "``") + "`"


def qualified(alias: str, name: str) -> str:
    """``alias.`name``` with the column name quoted (aliases are ours and always plain)."""
    return f"{alias}.{quote(name)}"


def qualified_table(name_parts: Iterable[str]) -> str:
    """A multi-part table name (``catalog.schema.table``), each part quoted."""
    return ".".join(quote(p) for p in name_parts)


def quote_path_table(location: str) -> str:
    """The Delta path-table reference ``delta.`<location>```."""
    return "delta." + quote(location)


def string_literal(value: str) -> str:
    """An SQL string literal with quotes and backslashes escaped."""
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def column(name: str) -> Column:
    """A DataFrame column reference by exact name (no dotted-path or backtick interpretation)."""
    return sf.col(quote(name))
