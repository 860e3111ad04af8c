"""`converter_for`: one column's schema and converter, assembled the way Debezium builds a field.

Order of Debezium's ``TableSchemaBuilder.addField``: the type's schema builder, then the
``column.propagate.source.type`` parameters, then ``optional``, then the ``default``.
"""

from __future__ import annotations

from typing import Any

from cdc_sources.common import kschema as ks
from cdc_sources.postgres.converters.column_meta import Origin, length_and_scale, source_type_name
from cdc_sources.postgres.converters.defaults import schema_default
from cdc_sources.postgres.converters.model import PLACEHOLDER, ColumnConverter, ColumnType
from cdc_sources.postgres.converters.registry import mapping_for
from cdc_sources.postgres.converters.settings import ConverterSettings
from cdc_sources.postgres.types import PgColumn

TYPE_PARAM = "__debezium.source.column.type"
LENGTH_PARAM = "__debezium.source.column.length"
SCALE_PARAM = "__debezium.source.column.scale"
NAME_PARAM = "__debezium.source.column.name"


def column_type(column: PgColumn, origin: Origin = "snapshot") -> ColumnType:
    """The column's domain-resolved type with the length and scale Debezium sees."""
    base, _ = column.type.resolved(column.typmod)
    length, scale = length_and_scale(column, origin)
    return ColumnType(base, length, scale, origin)


def source_type_params(column: PgColumn, origin: Origin = "snapshot") -> dict[str, str]:
    """The ``column.propagate.source.type`` schema parameters of a column."""
    length, scale = length_and_scale(column, origin)
    params = {TYPE_PARAM: source_type_name(column, origin).upper(), LENGTH_PARAM: str(length)}
    if scale is not None:
        params[SCALE_PARAM] = str(scale)
    params[NAME_PARAM] = column.name
    return params


def converter_for(column: PgColumn, settings: ConverterSettings, *, propagate_source_type: bool = False,
                  origin: Origin = "snapshot") -> ColumnConverter | None:
    """The converter of one column, or None when Debezium leaves the column out.

    Args:
        column: the column, as the catalog describes it.
        settings: the connector's rendering options.
        propagate_source_type: add the ``__debezium.source.column.*`` schema parameters
            (``column.propagate.source.type`` / ``datatype.propagate.source.type`` matched).
        origin: which Debezium path to reproduce. ``snapshot``: metadata from the JDBC driver,
            values read through JDBC. ``stream``: metadata from the table's pgoutput Relation
            message (always sent before its first change), values from text tuples. They differ
            in the propagated parameters (type ``SERIAL`` vs ``INT4``; an unconstrained NUMERIC's
            length/scale ``0``/none vs ``131089``/``0``) and in a few values (NAME columns are
            null when streamed; snapshot DATEs go through ``java.sql.Date``, which changes
            infinite and BC dates).

    Returns:
        The converter, or None for a type Debezium does not support (and
        ``include_unknown_datatypes`` is off), such as MONEY[] or a composite type.
    """
    col = column_type(column, origin)
    mapping = mapping_for(col, settings)
    if mapping is None:
        return None
    default: Any = ks.NO_DEFAULT
    if column.type.kind != "d":  # Debezium reads no default for domain-typed columns
        default = schema_default(column.default, source_type_name(column, origin), col, mapping, settings)
    params = source_type_params(column, origin) if propagate_source_type else None
    schema = ks.complete(mapping.schema, optional=column.nullable or mapping.always_optional,
                         default=default, field=column.name, params=params)
    unavailable = settings.placeholder_text if mapping.unavailable is PLACEHOLDER else mapping.unavailable
    null_value = None
    if not column.nullable and not mapping.null_passthrough:
        null_value = mapping.fallback if default is ks.NO_DEFAULT else default
    convert = mapping.convert
    if mapping.values_lost:
        def convert(text: str) -> Any:
            return null_value
    return ColumnConverter(schema, convert, unavailable, null_value)
