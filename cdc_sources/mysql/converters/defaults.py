"""Schema defaults from column default literals, as Debezium's ``BinlogDefaultValueConverter``.

The DDL parser keeps a column's ``DEFAULT`` as a literal (quotes removed, ``CURRENT_TIMESTAMP``
already replaced by ``1970-01-01 00:00:00``). Debezium trims it for numeric and temporal JDBC
types, strips a character set introducer (``_utf8mb4'x'``), reads ``true``/``false`` as 1/0 in
numeric columns, and then lets the column's converter render it (see each type's
``default_of``). A literal that renders as nothing (a zero date in a nullable column) leaves the
schema without a default.
"""

from __future__ import annotations

import re
from typing import Any

from cdc_sources.mysql.converters import typenames as jdbc
from cdc_sources.mysql.converters.model import NO_DEFAULT, TypeMapping
from cdc_sources.mysql.model import ColumnDef

_TRIMMED = frozenset({jdbc.DATE, jdbc.TIMESTAMP, jdbc.TIMESTAMP_WITH_TIMEZONE, jdbc.TIME, jdbc.BOOLEAN})
_NUMBERS = frozenset({jdbc.BIT, jdbc.TINYINT, jdbc.SMALLINT, jdbc.INTEGER, jdbc.BIGINT, jdbc.FLOAT, jdbc.REAL,
                      jdbc.DOUBLE, jdbc.NUMERIC, jdbc.DECIMAL})
_INTRODUCER = re.compile(r"_[A-Za-z0-9]+'(.*)'")
_JAVA_WHITESPACE = "".join(chr(c) for c in range(33))  # String.trim() strips every char <= U+0020


def literal_of(column: ColumnDef) -> Any:
    """The literal Debezium hands the column's converter: a string, or 1/0 for ``true``/``false``
    in a numeric column ("1"/"0" for DECIMAL); None when the column has no default."""
    text = column.default_expression
    if text is None or not column.has_default:
        return None
    code = column.jdbc_type
    if code in _TRIMMED or code in _NUMBERS:
        text = text.strip(_JAVA_WHITESPACE)
    introduced = _INTRODUCER.fullmatch(text)
    if introduced is not None:
        text = introduced[1]
    if code in _NUMBERS and text.lower() in ("true", "false"):
        truth = text.lower() == "true"
        if code in (jdbc.DECIMAL, jdbc.NUMERIC):
            return "1" if truth else "0"
        return 1 if truth else 0
    return text


def schema_default(column: ColumnDef, mapping: TypeMapping) -> Any:
    """The column's schema default (JSON-ready), or `NO_DEFAULT`."""
    literal = literal_of(column)
    if literal is None:
        return NO_DEFAULT
    value = mapping.default_of(literal)
    return NO_DEFAULT if value is None else value
