"""Captured tables from Oracle's dictionary: ``ALL_TAB_COLUMNS`` and primary-key rows to `OracleTable`.

``DATA_TYPE`` carries the family and, for timestamps and intervals, their fraction digits
(``TIMESTAMP(6)``, ``TIMESTAMP(3) WITH TIME ZONE``, ``INTERVAL DAY(2) TO SECOND(6)``);
``DATA_PRECISION``/``DATA_SCALE`` give ``NUMBER(P,S)`` (both null for a bare ``NUMBER``; a null
precision with scale 0 is ``INTEGER``, ``NUMBER(38)``); ``DATA_LENGTH`` the length of character
and RAW types. A type the connector cannot represent is an error naming the column.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from cdc_sources.oracle.converters import OracleColumn, OracleType
from cdc_sources.oracle.envelope import OracleTable

__all__ = ["UnsupportedColumnError", "column_of", "table_of"]


class UnsupportedColumnError(ValueError):
    """A column of a type the connector does not capture (names table, column and type)."""


_FRACTION = re.compile(r"\((\d+)\)")
_PLAIN = {t.value: t for t in OracleType}


def column_of(table: str, name: str, data_type: str, length: int | None, precision: int | None,
              scale: int | None, nullable: str | bool) -> OracleColumn:
    """One ``ALL_TAB_COLUMNS`` row as the converters' column."""
    optional = nullable if isinstance(nullable, bool) else str(nullable).upper() == "Y"
    kind = data_type.upper().strip()
    digits = _FRACTION.findall(kind)
    if kind.startswith("TIMESTAMP"):
        fraction = int(digits[0]) if digits else 6
        family = (OracleType.TIMESTAMP_LTZ if kind.endswith("WITH LOCAL TIME ZONE")
                  else OracleType.TIMESTAMP_TZ if kind.endswith("WITH TIME ZONE") else OracleType.TIMESTAMP)
        return OracleColumn(name, family, fraction, None, optional)
    if kind.startswith("INTERVAL YEAR"):
        return OracleColumn(name, OracleType.INTERVAL_YM, 0, None, optional)
    if kind.startswith("INTERVAL DAY"):
        return OracleColumn(name, OracleType.INTERVAL_DS, 0, int(digits[-1]) if len(digits) > 1 else 6, optional)
    found = _PLAIN.get(kind)
    if found is None:
        raise UnsupportedColumnError(f"table {table}: column {name} has type {data_type}, which is not supported")
    family = found
    if family is OracleType.NUMBER:
        if precision is None:
            return OracleColumn(name, family, 38 if scale == 0 else 0, scale, optional)
        return OracleColumn(name, family, int(precision), None if scale is None else int(scale), optional)
    if family is OracleType.FLOAT:
        return OracleColumn(name, family, int(precision or 126), None, optional)
    if family is OracleType.DATE:
        return OracleColumn(name, family, 0, None, optional)
    return OracleColumn(name, family, int(length or 0), None, optional)


def table_of(owner: str, name: str, columns: Sequence[Sequence[Any]], key: Sequence[str]) -> OracleTable:
    """The table from its ``ALL_TAB_COLUMNS`` rows (``COLUMN_NAME, DATA_TYPE, DATA_LENGTH,
    DATA_PRECISION, DATA_SCALE, NULLABLE``, in ``COLUMN_ID`` order) and its key columns."""
    if not columns:
        raise UnsupportedColumnError(f"table {owner}.{name} does not exist or has no columns the user can read")
    label = f"{owner}.{name}"
    return OracleTable(owner, name, tuple(column_of(label, *row) for row in columns), tuple(key))
