"""Which factory renders which MySQL column: Debezium 3.6.3's ``BinlogValueConverters`` order.

Type names are tested first (JSON, POINT, the geometries, YEAR, ENUM, SET, the UNSIGNED
integers, FLOAT), then the JDBC type the DDL parser assigned. A column that matches nothing
(``VECTOR``, JDBC ``OTHER``...) is left out of the events, as Debezium leaves it out.
"""

from __future__ import annotations

from types import MappingProxyType

from cdc_sources.mysql.converters import binary, bits, decimals, floats, integers, spatial, temporal, text
from cdc_sources.mysql.converters import typenames as jdbc
from cdc_sources.mysql.converters.model import ColumnFacts, TypeFactory, TypeMapping
from cdc_sources.mysql.converters.typenames import matches, matches_any

BY_NAME: tuple[tuple[tuple[str, ...], TypeFactory], ...] = (
    (("JSON",), text.json_mapping),
    (("POINT",), spatial.point_mapping),
    (spatial.GEOMETRY_NAMES, spatial.geometry_mapping),
    (("YEAR",), temporal.year_mapping),
    (("ENUM",), text.enum_mapping),
    (("SET",), text.set_mapping),
    (integers.BIGINT_UNSIGNED, integers.bigint_unsigned_mapping),
    (integers.TINYINT_UNSIGNED + integers.SMALLINT_UNSIGNED + integers.MEDIUMINT_UNSIGNED + integers.INT_UNSIGNED,
     integers.integer_mapping),
)
"""Upper-case type names (see `matches`) -> factory, in Debezium's order."""

BY_JDBC: MappingProxyType[int, TypeFactory] = MappingProxyType({
    jdbc.BIT: bits.bit_mapping,
    jdbc.BOOLEAN: integers.boolean_mapping,
    jdbc.BLOB: binary.binary_mapping, jdbc.BINARY: binary.binary_mapping,
    jdbc.VARBINARY: binary.binary_mapping, jdbc.LONGVARBINARY: binary.binary_mapping,
    jdbc.TINYINT: integers.integer_mapping, jdbc.SMALLINT: integers.integer_mapping,
    jdbc.INTEGER: integers.integer_mapping, jdbc.BIGINT: integers.integer_mapping,
    jdbc.REAL: floats.float_mapping, jdbc.FLOAT: floats.float_mapping, jdbc.DOUBLE: floats.float_mapping,
    jdbc.NUMERIC: decimals.decimal_mapping, jdbc.DECIMAL: decimals.decimal_mapping,
    **dict.fromkeys(jdbc.CHARACTER_TYPES - {jdbc.SQLXML}, text.string_mapping),
    jdbc.DATE: temporal.date_mapping,
    jdbc.TIME: temporal.time_mapping,
    jdbc.TIMESTAMP: temporal.datetime_mapping,
    jdbc.TIMESTAMP_WITH_TIMEZONE: temporal.timestamp_mapping,
})
"""JDBC type -> factory, for columns no type name claimed."""


def mapping_for(facts: ColumnFacts) -> TypeMapping | None:
    """The mapping of a column, or None when Debezium leaves the column out."""
    name = facts.column.type_name.upper()
    for names, factory in BY_NAME:
        if matches_any(name, names):
            return factory(facts)
    if spatial.is_collection(name):
        return spatial.geometry_mapping(facts)
    if matches(name, "VECTOR"):
        return None
    if matches_any(name, floats.FLOAT_NAMES):
        return floats.float_mapping(facts)
    by_jdbc = BY_JDBC.get(facts.column.jdbc_type)
    return by_jdbc(facts) if by_jdbc is not None else None
