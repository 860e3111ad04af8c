"""FLOAT, REAL and DOUBLE.

``FLOAT`` and ``FLOAT(p)`` with p <= 24 (no scale) and ``REAL`` become ``float`` (binary32): the
value is rounded to a Java ``float`` and rendered with ``Float.toString``'s shortest digits, so
a FLOAT holding 1.1 is ``1.1``, not 1.100000023841858. Everything else is ``double``.

``FLOAT(M,D)`` is a ``double`` field over a binary32 column: Debezium widens the ``Float`` the
binlog client or the JDBC driver returns, so the value shows all the binary32 digits
(1.100000023841858). The snapshot reads FLOAT text with 6 significant digits (MySQL's text
protocol), exactly as Debezium's JDBC snapshot does; the binlog carries every bit.
"""

from __future__ import annotations

from typing import Any

from cdc_sources.common import kschema as ks
from cdc_sources.common.javacompat import float32, float32_shortest
from cdc_sources.mysql.converters import typenames as jdbc
from cdc_sources.mysql.converters.model import ColumnFacts, TypeMapping, ValueConversionError, fixed
from cdc_sources.mysql.converters.typenames import matches_any

FLOAT_NAMES = ("FLOAT", "FLOAT UNSIGNED", "FLOAT UNSIGNED ZEROFILL")


def _identity(value: Any) -> Any:
    return value


def as_float32(value: float) -> float:
    """A FLOAT value as JsonConverter writes Debezium's ``Float``."""
    return float32_shortest(float32(value))


def _float_default(render: Any) -> Any:
    def default_of(literal: Any) -> Any:
        try:
            return render(float(literal))
        except ValueError:
            raise ValueConversionError(f"cannot parse the floating-point default {literal!r} (Debezium fails "
                                       "too)", kind="default") from None
    return default_of


def is_single_precision(facts: ColumnFacts) -> bool:
    """Debezium's rule for a ``float`` (binary32) field."""
    column = facts.column
    if matches_any(column.type_name.upper(), FLOAT_NAMES) and column.scale is None and (column.length or -1) <= 24:
        return True
    return column.jdbc_type == jdbc.REAL


def float_mapping(facts: ColumnFacts) -> TypeMapping | None:
    """FLOAT, REAL and DOUBLE (``float`` or ``double`` fields)."""
    column = facts.column
    if column.jdbc_type not in (jdbc.FLOAT, jdbc.REAL, jdbc.DOUBLE) and not matches_any(
            column.type_name.upper(), FLOAT_NAMES):
        return None
    if is_single_precision(facts):
        return TypeMapping(ks.primitive("float"), fixed(as_float32), 0.0, _float_default(as_float32))
    binary32_storage = column.jdbc_type == jdbc.FLOAT and column.scale is not None  # FLOAT(M,D)
    if binary32_storage and facts.origin == "snapshot":
        return TypeMapping(ks.primitive("double"), fixed(float32), 0.0, _float_default(_identity))
    return TypeMapping(ks.primitive("double"), fixed(_identity), 0.0, _float_default(_identity), identity=True)
