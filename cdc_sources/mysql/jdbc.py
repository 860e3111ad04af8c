"""The ``java.sql.Types`` codes Debezium's MySQL DDL parser assigns, and the groups its value
converters test (shared by the DDL parser and the converters)."""

from __future__ import annotations

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
"""JDBC types Debezium decodes with the column's character set (``Column.typeUsesCharset``)."""

BINARY_TYPES: Final = frozenset({BLOB, BINARY, VARBINARY, LONGVARBINARY})
