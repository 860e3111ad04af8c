"""`converter_for`: one column's schema and converter, assembled the way Debezium builds a field.

Order of Debezium's ``TableSchemaBuilder.addField``: the type's schema builder, then the
``column.propagate.source.type`` parameters, then ``optional``, then the comment as ``doc``,
then the ``default``.
"""

from __future__ import annotations

from typing import Any

from cdc_sources.common import kschema as ks
from cdc_sources.common.source_type import source_type_parameters
from cdc_sources.mysql.converters.defaults import schema_default
from cdc_sources.mysql.converters.model import ColumnConverter, ColumnFacts, Convert, Origin, ValueConversionError
from cdc_sources.mysql.converters.registry import mapping_for
from cdc_sources.mysql.converters.settings import MySqlConverterSettings
from cdc_sources.mysql.model import ColumnDef


def converter_for(column: ColumnDef, settings: MySqlConverterSettings, *, propagate_source_type: bool = False,
                  origin: Origin) -> ColumnConverter | None:
    """The converter of one column, or None when Debezium leaves the column out.

    Args:
        column: the column as Debezium's DDL parser records it.
        settings: the connector's rendering options.
        propagate_source_type: add the ``__debezium.source.column.*`` schema parameters
            (``column.propagate.source.type`` / ``datatype.propagate.source.type`` matched).
        origin: where the values come from: ``binlog`` (python-mysql-replication 1.0.17 row
            events, ``binlog_row_metadata=FULL``) or ``snapshot`` (pymysql ``SELECT`` results
            read with ``conv=SNAPSHOT_CONVERSIONS`` on a session with ``time_zone='+00:00'``).

    Returns:
        The converter; None for a type Debezium does not capture (``VECTOR``, unknown types).

    Raises:
        ValueConversionError: the column's default cannot be converted (Debezium fails too).
    """
    facts = ColumnFacts(column, settings, origin)
    mapping = mapping_for(facts)
    if mapping is None:
        return None
    comment = column.comment if settings.include_schema_comments else None
    if comment and "doc" in mapping.schema:
        raise ValueConversionError(
            f"column {column.name!r} ({column.type_name}) has a comment, which Debezium cannot set as the doc of "
            "its schema (\"doc has already been set\"); it fails on this table with include.schema.comments=true",
            kind="comment")
    lenient = settings.event_converting_failure_handling_mode != "fail"
    try:
        default: Any = schema_default(column, mapping)
    except ValueConversionError:
        if not lenient:
            raise
        default = ks.NO_DEFAULT
    params = None
    if propagate_source_type:
        params = source_type_parameters(column.name, type_name=column.type_name, length=column.length,
                                        scale=column.scale, comment=comment)
    core = {**mapping.schema, "doc": comment} if comment else mapping.schema
    schema = ks.complete(core, optional=column.optional or mapping.always_optional,
                         default=default, field=column.name, params=params)
    null_value = None if column.optional else (mapping.fallback if default is ks.NO_DEFAULT else default)
    null_rendering = null_value if default is ks.NO_DEFAULT else default
    convert = mapping.make_convert(null_rendering)
    if mapping.may_fail and lenient and (column.optional or default is not ks.NO_DEFAULT):
        convert = _nulling_failures(convert, null_rendering)
    return ColumnConverter(schema, convert, null_value, mapping.identity)


def _nulling_failures(convert: Convert, null: Any) -> Convert:
    """``warn``/``skip``: a value Debezium cannot convert is left null (JsonConverter then writes
    the schema default, if any)."""
    def lenient(value: Any) -> Any:
        try:
            return convert(value)
        except ValueConversionError:
            return null
    return lenient

