"""TINYINT, SMALLINT, MEDIUMINT, INT, BIGINT (signed and UNSIGNED) and BOOLEAN.

The schema follows the JDBC type Debezium's DDL parser assigns (TINYINT and SMALLINT are
``int16``, MEDIUMINT and INT ``int32``, BIGINT ``int64``), widened for UNSIGNED types:
SMALLINT UNSIGNED is ``int32`` and INT UNSIGNED ``int64``. BIGINT UNSIGNED follows
``bigint.unsigned.handling.mode``: ``long`` keeps ``int64``, so values of 2^63 and more wrap
to negative numbers exactly as Java's ``long`` does (18446744073709551615 becomes -1);
``precise`` gives a ``Decimal`` with scale 0 and precision 20.

Both python-mysql-replication (with ``binlog_row_metadata=FULL``, which carries signedness)
and pymysql deliver correct Python ints, so every converter except BIGINT UNSIGNED is the
identity. Defaults go through Debezium's ``Math.round(Double.parseDouble(text))`` and Java's
narrowing (``DEFAULT '2.5'`` on an INT is 3).
"""

from __future__ import annotations

import re
from typing import Any

from cdc_sources.common import kschema as ks
from cdc_sources.common.connect_values import decimal_bytes
from cdc_sources.common.javacompat import java_round, narrow
from cdc_sources.mysql.converters import typenames as jdbc
from cdc_sources.mysql.converters.model import (
    ColumnFacts,
    DefaultOf,
    TypeMapping,
    ValueConversionError,
    fixed,
)
from cdc_sources.mysql.converters.typenames import matches_any

TINYINT_UNSIGNED = ("TINYINT UNSIGNED", "TINYINT UNSIGNED ZEROFILL", "INT1 UNSIGNED", "INT1 UNSIGNED ZEROFILL")
SMALLINT_UNSIGNED = ("SMALLINT UNSIGNED", "SMALLINT UNSIGNED ZEROFILL", "INT2 UNSIGNED", "INT2 UNSIGNED ZEROFILL")
MEDIUMINT_UNSIGNED = ("MEDIUMINT UNSIGNED", "MEDIUMINT UNSIGNED ZEROFILL", "INT3 UNSIGNED",
                      "INT3 UNSIGNED ZEROFILL", "MIDDLEINT UNSIGNED", "MIDDLEINT UNSIGNED ZEROFILL")
INT_UNSIGNED = ("INT UNSIGNED", "INT UNSIGNED ZEROFILL", "INTEGER UNSIGNED", "INTEGER UNSIGNED ZEROFILL",
                "INT4 UNSIGNED", "INT4 UNSIGNED ZEROFILL")
BIGINT_UNSIGNED = ("BIGINT UNSIGNED", "BIGINT UNSIGNED ZEROFILL", "INT8 UNSIGNED", "INT8 UNSIGNED ZEROFILL")
"""Debezium's spellings of the UNSIGNED types (``matches``: equal, or followed by ``(``)."""

_LONG_MAX = 2**63 - 1
_ULONG = 2**64

_KIND_OF_JDBC = {jdbc.SMALLINT: ("int16", 16), jdbc.INTEGER: ("int32", 32), jdbc.BIGINT: ("int64", 64),
                 jdbc.TINYINT: ("int8", 16)}  # Debezium converts TINYINT like SMALLINT


def identity(value: Any) -> Any:
    """The value unchanged."""
    return value


def _rounded(bits: int) -> DefaultOf:
    """Debezium's integer default: ``Math.round(Double.parseDouble(text))`` narrowed to ``bits``."""
    def default_of(literal: Any) -> Any:
        if isinstance(literal, int):
            return narrow(literal, bits)
        try:
            number = float(literal)
        except ValueError:
            raise ValueConversionError(f"cannot parse the integer default {literal!r} (Debezium fails too)",
                                       kind="default") from None
        return narrow(java_round(number), bits)
    return default_of


def integer_mapping(facts: ColumnFacts) -> TypeMapping | None:
    """A signed or unsigned integer other than BIGINT UNSIGNED, by JDBC type and UNSIGNED name."""
    name = facts.column.type_name.upper()
    found = _KIND_OF_JDBC.get(facts.column.jdbc_type)
    if found is None:
        return None
    kind, bits = found
    default_bits = bits
    if matches_any(name, SMALLINT_UNSIGNED):
        kind, default_bits = "int32", 32
    elif matches_any(name, INT_UNSIGNED):
        kind, default_bits = "int64", 64
    elif matches_any(name, TINYINT_UNSIGNED):
        default_bits = 16
    elif matches_any(name, MEDIUMINT_UNSIGNED):
        default_bits = 32
    return TypeMapping(ks.primitive(kind), fixed(identity), 0, _rounded(default_bits), identity=True)


def _wrap_long(value: int) -> int:
    return value - _ULONG if value > _LONG_MAX else value


def _unsigned_decimal(value: int) -> str:
    return decimal_bytes(value + _ULONG if value < 0 else value)


BIGINT_UNSIGNED_DECIMAL = ks.logical("bytes", ks.DECIMAL, params={"scale": "0", ks.PRECISION_PARAM: "20"})


def bigint_unsigned_mapping(facts: ColumnFacts) -> TypeMapping:
    """BIGINT UNSIGNED under ``bigint.unsigned.handling.mode``."""
    if facts.settings.bigint_unsigned_handling_mode == "long":
        return TypeMapping(ks.primitive("int64"), fixed(_wrap_long), 0, _rounded(64))

    def precise_default(literal: Any) -> Any:
        if isinstance(literal, int):
            return _unsigned_decimal(literal)
        text = str(literal)
        if not text.lstrip("+-").isdigit():
            raise ValueConversionError(f"the BIGINT UNSIGNED default {literal!r} is not an integer; Debezium "
                                       "cannot write it as a Decimal with scale 0", kind="default")
        return _unsigned_decimal(int(text))
    return TypeMapping(BIGINT_UNSIGNED_DECIMAL, fixed(_unsigned_decimal), decimal_bytes(0), precise_default)


def _truthy(value: int) -> bool:
    return value != 0


_JAVA_INT = re.compile(r"[+-]?[0-9]+")


def _boolean_default(literal: Any) -> Any:
    """Debezium's ``convertToBoolean``: an ``int`` literal is true unless 0, else ``"true"``."""
    text = str(literal)
    if _JAVA_INT.fullmatch(text) and -(2**31) <= int(text) < 2**31:  # Integer.parseInt
        return int(text) != 0
    return text.lower() == "true"  # Boolean.parseBoolean


def boolean_mapping(facts: ColumnFacts) -> TypeMapping:
    """BOOLEAN/BOOL (as streamed DDL declares them; a snapshot sees TINYINT(1), an ``int16``)."""
    return TypeMapping(ks.primitive("boolean"), fixed(_truthy), False, _boolean_default)
