"""How Debezium recognises MySQL types: ``java.sql.Types`` codes and its type-name matching.

Debezium's ``BinlogValueConverters`` first tests the upper-cased ``Column.typeName()`` against
names such as ``JSON`` or ``INT UNSIGNED`` (equal, or the name followed by ``(``), then falls
back to the JDBC type the DDL parser assigned.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

BIT: Final = -7
TINYINT: Final = -6
SMALLINT: Final = 5
INTEGER: Final = 4
BIGINT: Final = -5
FLOAT: Final = 6
REAL: Final = 7
DOUBLE: Final = 8
NUMERIC: Final = 2
DECIMAL: Final = 3
CHAR: Final = 1
VARCHAR: Final = 12
LONGVARCHAR: Final = -1
DATE: Final = 91
TIME: Final = 92
TIMESTAMP: Final = 93
BINARY: Final = -2
VARBINARY: Final = -3
LONGVARBINARY: Final = -4
NULL: Final = 0
OTHER: Final = 1111
BLOB: Final = 2004
CLOB: Final = 2005
BOOLEAN: Final = 16
NCHAR: Final = -15
NVARCHAR: Final = -9
LONGNVARCHAR: Final = -16
NCLOB: Final = 2011
DATALINK: Final = 70
SQLXML: Final = 2009
ROWID: Final = -8
TIME_WITH_TIMEZONE: Final = 2013
TIMESTAMP_WITH_TIMEZONE: Final = 2014

CHARACTER_TYPES: Final = frozenset({CHAR, VARCHAR, LONGVARCHAR, CLOB, NCHAR, NVARCHAR, LONGNVARCHAR, NCLOB,
                                    DATALINK, SQLXML})
"""JDBC types Debezium decodes with the column's character set."""

BINARY_TYPES: Final = frozenset({BLOB, BINARY, VARBINARY, LONGVARBINARY})


def matches(type_name: str, name: str) -> bool:
    """Debezium's ``matches``: the upper-case type name is ``name`` or starts with ``name(``."""
    return type_name == name or type_name.startswith(name + "(")


def matches_any(type_name: str, names: Iterable[str]) -> bool:
    """`matches` for any of ``names``."""
    return any(matches(type_name, n) for n in names)
