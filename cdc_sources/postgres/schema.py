"""Per-table codecs: Debezium key/value schemas and row rendering for one captured table.

A `TableCodec` is built once per table schema (from the catalog at snapshot time, from a
Relation message while streaming) and then renders every row of that table: it holds one
converter closure per column, so the hot path does no type dispatch.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal, Protocol

from cdc_sources.common.envelope import envelope_schema_version
from cdc_sources.common.kschema import with_parameters
from cdc_sources.postgres.converters import ColumnConverter, ConverterSettings, converter_for
from cdc_sources.postgres.pgoutput import UNCHANGED_TOAST
from cdc_sources.postgres.render import KeyRenderer, RowRenderer, compile_key_renderer, compile_row_renderer
from cdc_sources.postgres.types import PgColumn
from cdc_sources.spi import SchemaVersion

SOURCE_SCHEMA: dict[str, Any] = {
    "type": "struct",
    "fields": [
        {"type": "string", "optional": False, "field": "version"},
        {"type": "string", "optional": False, "field": "connector"},
        {"type": "string", "optional": False, "field": "name"},
        {"type": "int64", "optional": False, "field": "ts_ms"},
        {"type": "string", "optional": True, "name": "io.debezium.data.Enum", "version": 1,
         "parameters": {"allowed": "true,first,first_in_data_collection,last_in_data_collection,"
                                   "last,false,incremental"},
         "default": "false", "field": "snapshot"},
        {"type": "string", "optional": False, "field": "db"},
        {"type": "string", "optional": True, "field": "sequence"},
        {"type": "int64", "optional": True, "field": "ts_us"},
        {"type": "int64", "optional": True, "field": "ts_ns"},
        {"type": "string", "optional": False, "field": "schema"},
        {"type": "string", "optional": False, "field": "table"},
        {"type": "int64", "optional": True, "field": "txId"},
        {"type": "int64", "optional": True, "field": "lsn"},
        {"type": "int64", "optional": True, "field": "xmin"},
        {"type": "string", "optional": True, "field": "origin"},
        {"type": "int64", "optional": True, "field": "origin_lsn"},
    ],
    "optional": False,
    "name": "io.debezium.connector.postgresql.Source",
    "version": 1,
    "field": "source",
}

class ColumnPolicy(Protocol):
    """What the connector's filters decide for each column of a table."""

    def includes(self, schema: str, table: str, column: str) -> bool: ...

    def transform(self, schema: str, table: str, column: PgColumn) -> tuple[Callable[[Any], Any] | None,
                                                                         Mapping[str, str]]: ...

    def propagates_type(self, schema: str, table: str, column: PgColumn) -> bool: ...

    def key_columns(self, schema: str, table: str, columns: Sequence[str]) -> tuple[str, ...] | None: ...


@dataclass(frozen=True, slots=True)
class FieldCodec:
    """One rendered field: its name, its index in the row tuple and its converter.

    ``fallback`` is what a NULL becomes: None for optional fields; for a NOT NULL column
    missing from a key-only old tuple, the schema default or the type's zero value, as
    Debezium writes it.
    """

    name: str
    index: int
    convert: Callable[[str], Any]
    unavailable: Any
    fallback: Any = None
    schema: Mapping[str, Any] = field(default_factory=dict)
    transformed: bool = False


def _no_fields(values: Sequence[Any], old: Sequence[Any] | None = None) -> str:
    return "{}"


@dataclass(frozen=True)
class TableCodec:
    """Renders rows of one table version as Debezium key and value structs.

    Attributes:
        topic: ``<topic.prefix>.<schema>.<table>``.
        schema / table: the source table.
        columns: every column of the row tuples this codec reads, in tuple order.
        fields: the value fields (included, supported columns).
        key_fields: the key fields; empty for a keyless table (null key).
        version: the schema version record for the schema history.
    """

    topic: str
    schema: str
    table: str
    columns: tuple[PgColumn, ...]
    fields: tuple[FieldCodec, ...]
    key_fields: tuple[FieldCodec, ...]
    version: SchemaVersion
    render_row: RowRenderer = field(repr=False, compare=False, default=_no_fields)
    render_key: KeyRenderer | None = field(repr=False, compare=False, default=None)

    @property
    def schema_id(self) -> str:
        return self.version.schema_id

    def row(self, values: Sequence[Any], old: Sequence[Any] | None = None) -> dict[str, Any]:
        """The value struct of a row tuple; unchanged TOAST takes ``old``'s value or the placeholder."""
        out: dict[str, Any] = {}
        for f in self.fields:
            v = values[f.index]
            if v is None:
                out[f.name] = f.fallback
            elif v is UNCHANGED_TOAST:
                prior = old[f.index] if old is not None else None
                out[f.name] = f.convert(prior) if isinstance(prior, str) else f.unavailable
            else:
                out[f.name] = f.convert(v)
        return out

    def key(self, values: Sequence[Any]) -> dict[str, Any] | None:
        """The key struct of a row tuple; None for keyless tables.

        A key column missing from the tuple (an old tuple of REPLICA IDENTITY USING INDEX
        over other columns) takes its fallback, as Debezium does.
        """
        if not self.key_fields:
            return None
        out: dict[str, Any] = {}
        for f in self.key_fields:
            v = values[f.index]
            out[f.name] = f.fallback if v is None or v is UNCHANGED_TOAST else f.convert(v)
        return out


def build_codec(
    *,
    prefix: str,
    schema: str,
    table: str,
    columns: Sequence[PgColumn],
    primary_key: Sequence[str],
    settings: ConverterSettings,
    policy: ColumnPolicy,
    origin: Literal["snapshot", "stream"],
    column_ids: Mapping[str, int] | None = None,
) -> TableCodec:
    """Build the codec (and its schema version) for one table version.

    ``origin`` says whether the columns come from the catalog (snapshot) or from a pgoutput
    Relation message (stream); Debezium renders a few types differently on the two paths.
    ``column_ids``: each column's ``attnum`` (default: the columns' ``position``, which is the
    attnum for catalog columns), recorded in the schema version so silver can tell a renamed
    column from a dropped and an added one.
    """
    topic = f"{prefix}.{schema}.{table}"
    key_names = policy.key_columns(schema, table, [c.name for c in columns]) or tuple(primary_key)
    fields: list[FieldCodec] = []
    field_schemas: list[dict[str, Any]] = []
    key_fields: list[FieldCodec] = []
    key_schemas: list[dict[str, Any]] = []
    for index, column in enumerate(columns):
        propagate = policy.propagates_type(schema, table, column)
        conv = converter_for(column, settings, propagate_source_type=propagate, origin=origin)
        if conv is None:
            continue
        if column.name in key_names:
            plain = conv if not propagate else converter_for(column, settings, origin=origin)
            assert plain is not None
            key_fields.append(_field(column, index, plain, None))
            key_schemas.append(plain.schema)
        if policy.includes(schema, table, column.name):
            transform, extra = policy.transform(schema, table, column)
            fields.append(_field(column, index, conv, transform))
            field_schemas.append(with_parameters(conv.schema, extra))
    key_order = {n: i for i, n in enumerate(key_names)}
    pairs = sorted(zip(key_fields, key_schemas, strict=True), key=lambda p: key_order.get(p[0].name, 0))
    key_fields = [p[0] for p in pairs]
    key_schemas = [p[1] for p in pairs]
    version = _schema_version(prefix, topic, schema, table, field_schemas, key_schemas, tuple(key_names))
    ids = column_ids if column_ids is not None else {c.name: c.position for c in columns}
    version = replace(version, column_ids=tuple(ids.get(f.name, 0) for f in fields))
    return TableCodec(topic, schema, table, tuple(columns), tuple(fields), tuple(key_fields), version,
                      compile_row_renderer(fields), compile_key_renderer(key_fields))


def _fallback(conv: ColumnConverter) -> Any:
    """What a NULL is written as: Kafka's JsonConverter replaces null with the schema default
    (``replace.null.with.default=true``), and Debezium fills NOT NULL columns missing from a
    key-only old tuple with the converter's `null_value`."""
    if "default" in conv.schema:
        return conv.schema["default"]
    return conv.null_value


def _field(column: PgColumn, index: int, conv: ColumnConverter,
           transform: Callable[[Any], Any] | None) -> FieldCodec:
    masked_null = transform(None) if transform is not None else None  # asterisk masks replace NULL too
    fallback = masked_null if masked_null is not None else _fallback(conv)
    if transform is None:
        return FieldCodec(column.name, index, conv.convert, conv.unavailable, fallback, conv.schema)
    base = conv.convert

    def convert(text: str) -> Any:
        return transform(base(text))

    return FieldCodec(column.name, index, convert, conv.unavailable, fallback, conv.schema, True)


def _schema_version(prefix: str, topic: str, schema: str, table: str, fields: list[dict[str, Any]],
                    key_fields: list[dict[str, Any]], key_names: tuple[str, ...]) -> SchemaVersion:
    return envelope_schema_version(topic=topic, table=f"{schema}.{table}", fields=fields, key_fields=key_fields,
                                   key_names=key_names, source_schema=SOURCE_SCHEMA)
