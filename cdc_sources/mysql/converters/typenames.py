"""How Debezium recognises MySQL types: ``java.sql.Types`` codes and its type-name matching.

Debezium's ``BinlogValueConverters`` first tests the upper-cased ``Column.typeName()`` against
names such as ``JSON`` or ``INT UNSIGNED`` (equal, or the name followed by ``(``), then falls
back to the JDBC type the DDL parser assigned.
"""

from __future__ import annotations

from collections.abc import Iterable

from cdc_sources.mysql.jdbc import (
    BIGINT,
    BINARY,
    BINARY_TYPES,
    BIT,
    BLOB,
    BOOLEAN,
    CHAR,
    CHARACTER_TYPES,
    CLOB,
    DATALINK,
    DATE,
    DECIMAL,
    DOUBLE,
    FLOAT,
    INTEGER,
    LONGNVARCHAR,
    LONGVARBINARY,
    LONGVARCHAR,
    NCHAR,
    NCLOB,
    NULL,
    NUMERIC,
    NVARCHAR,
    OTHER,
    REAL,
    ROWID,
    SMALLINT,
    SQLXML,
    TIME,
    TIME_WITH_TIMEZONE,
    TIMESTAMP,
    TIMESTAMP_WITH_TIMEZONE,
    TINYINT,
    VARBINARY,
    VARCHAR,
)

__all__ = [
    "BIGINT",
    "BINARY",
    "BINARY_TYPES",
    "BIT",
    "BLOB",
    "BOOLEAN",
    "CHAR",
    "CHARACTER_TYPES",
    "CLOB",
    "DATALINK",
    "DATE",
    "DECIMAL",
    "DOUBLE",
    "FLOAT",
    "INTEGER",
    "LONGNVARCHAR",
    "LONGVARBINARY",
    "LONGVARCHAR",
    "NCHAR",
    "NCLOB",
    "NULL",
    "NUMERIC",
    "NVARCHAR",
    "OTHER",
    "REAL",
    "ROWID",
    "SMALLINT",
    "SQLXML",
    "TIME",
    "TIMESTAMP",
    "TIMESTAMP_WITH_TIMEZONE",
    "TIME_WITH_TIMEZONE",
    "TINYINT",
    "VARBINARY",
    "VARCHAR",
    "matches",
    "matches_any",
]


def matches(type_name: str, name: str) -> bool:
    """Debezium's ``matches``: the upper-case type name is ``name`` or starts with ``name(``."""
    return type_name == name or type_name.startswith(name + "(")


def matches_any(type_name: str, names: Iterable[str]) -> bool:
    """`matches` for any of ``names``."""
    return any(matches(type_name, n) for n in names)
