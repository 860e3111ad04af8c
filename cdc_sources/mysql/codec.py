"""Per-table codecs: Debezium key/value schemas and row rendering for one MySQL table version.

A `TableCodec` is built once per table version (from the schema model, so a row event is always
decoded with the structure in force at its binlog position) and renders every row of it with
one converter per column: no type dispatch on the hot path. Binlog rows arrive as dicts keyed
by column name (python-mysql-replication with ``binlog_row_metadata=FULL``); snapshot rows as
tuples in column order.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal, Protocol

from cdc_sources.common.envelope import envelope_schema_version
from cdc_sources.common.kschema import with_parameters
from cdc_sources.mysql.converters import ColumnConverter, MySqlConverterSettings, converter_for
from cdc_sources.mysql.envelope import source_schema
from cdc_sources.mysql.key_texts import KeyText, compile_key_text
from cdc_sources.mysql.model import ColumnDef, TableDef
from cdc_sources.mysql.row_structs import Struct, compile_struct
from cdc_sources.spi import SchemaVersion


class ColumnPolicy(Protocol):
    """What the connector's filters decide for each column of a table."""

    def includes(self, database: str, table: str, column: str) -> bool: ...

    def transform(self, database: str, table: str,
                  column: ColumnDef) -> tuple[Callable[[Any], Any] | None, Mapping[str, str]]: ...

    def propagates_type(self, database: str, table: str, column: ColumnDef) -> bool: ...

    def key_columns(self, database: str, table: str, columns: Sequence[str]) -> tuple[str, ...] | None: ...


@dataclass(frozen=True, slots=True)
class FieldCodec:
    """One rendered field: column name, index in snapshot tuples, converter and what NULL becomes."""

    name: str
    index: int
    convert: Callable[[Any], Any]
    fallback: Any = None


@dataclass(frozen=True)
class TableCodec:
    """Renders rows of one table version as Debezium key and value structs.

    Attributes:
        topic: ``<topic.prefix>.<db>.<table>``.
        table: the table version the codec was built from.
        fields: the value fields (included columns), in table order.
        key_fields: the key fields in key order; empty for a keyless table (null key).
        version: the schema version record for the schema history.
        row_struct: `row`, compiled for this version's fields (`row_structs`).
        key_struct: `key`'s struct, compiled; None for a keyless table.
        key_text: the key's JSON text, compiled (`key_texts`); None for a keyless table.
    """

    topic: str
    table: TableDef
    fields: tuple[FieldCodec, ...]
    key_fields: tuple[FieldCodec, ...]
    version: SchemaVersion
    row_struct: Struct = field(init=False, repr=False, compare=False)
    key_struct: Struct | None = field(init=False, repr=False, compare=False)
    key_text: KeyText | None = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "row_struct", compile_struct(self.fields))
        key_struct = compile_struct(self.key_fields) if self.key_fields else None
        object.__setattr__(self, "key_struct", key_struct)
        object.__setattr__(self, "key_text",
                           None if key_struct is None else compile_key_text(self.key_fields, key_struct))

    @property
    def schema_id(self) -> str:
        return self.version.schema_id

    def row(self, values: Mapping[str, Any]) -> dict[str, Any]:
        """The value struct of a binlog row (column name -> library value): for each field,
        its converter's value, or its fallback where the value is None."""
        return self.row_struct(values)

    def key(self, values: Mapping[str, Any]) -> dict[str, Any] | None:
        """The key struct of a binlog row; None for keyless tables."""
        return None if self.key_struct is None else self.key_struct(values)

    def row_tuple(self, values: Sequence[Any]) -> dict[str, Any]:
        """The value struct of a snapshot row (a tuple in table column order)."""
        out: dict[str, Any] = {}
        for f in self.fields:
            v = values[f.index]
            out[f.name] = f.fallback if v is None else f.convert(v)
        return out

    def key_tuple(self, values: Sequence[Any]) -> dict[str, Any] | None:
        """The key struct of a snapshot row; None for keyless tables."""
        if not self.key_fields:
            return None
        out: dict[str, Any] = {}
        for f in self.key_fields:
            v = values[f.index]
            out[f.name] = f.fallback if v is None else f.convert(v)
        return out


def key_column_names(table: TableDef, override: tuple[str, ...] | None) -> tuple[str, ...]:
    """The key columns: ``message.key.columns``, else the primary key, else the first UNIQUE key
    whose columns are all NOT NULL (Debezium's MySQL rule), else none."""
    if override:
        return override
    if table.primary_key:
        return table.primary_key
    for unique in table.unique_keys:
        cols = [table.column(n) for n in unique]
        if cols and all(c is not None and not c.optional for c in cols):
            return tuple(c.name for c in cols if c is not None)
    return ()


def build_codec(*, prefix: str, connector: str, table: TableDef, settings: MySqlConverterSettings,
                policy: ColumnPolicy, origin: Literal["binlog", "snapshot"], delimiter: str = ".") -> TableCodec:
    """Build the codec (and its schema version) for one table version."""
    db, name = table.id.database, table.id.table
    topic = f"{prefix}{delimiter}{db}{delimiter}{name}"
    key_names = key_column_names(table, policy.key_columns(db, name, [c.name for c in table.columns]))
    lowered_keys = {k.lower(): i for i, k in enumerate(key_names)}
    fields: list[FieldCodec] = []
    field_schemas: list[dict[str, Any]] = []
    keys: list[tuple[int, FieldCodec, dict[str, Any]]] = []
    for index, column in enumerate(table.columns):
        propagate = policy.propagates_type(db, name, column)
        conv = converter_for(column, settings, propagate_source_type=propagate, origin=origin)
        if conv is None:
            continue
        if column.name.lower() in lowered_keys:
            plain = converter_for(column, settings, origin=origin) if propagate else conv
            assert plain is not None
            keys.append((lowered_keys[column.name.lower()], _field(column, index, plain, None), plain.schema))
        if policy.includes(db, name, column.name):
            transform, extra = policy.transform(db, name, column)
            fields.append(_field(column, index, conv, transform))
            field_schemas.append(with_parameters(conv.schema, extra))
    keys.sort(key=lambda k: k[0])
    version = envelope_schema_version(
        topic=topic, table=f"{db}.{name}", fields=field_schemas, key_fields=[k[2] for k in keys],
        key_names=tuple(k[1].name for k in keys), source_schema=source_schema(connector))
    included = {f.name for f in fields}
    renamed = tuple((old, new) for old, new in table.renamed_columns if new in included)
    if renamed:
        version = replace(version, renamed_columns=renamed)
    return TableCodec(topic, table, tuple(fields), tuple(k[1] for k in keys), version)


def _fallback(conv: ColumnConverter) -> Any:
    """What a NULL is written as: the JSON converter replaces null with the schema default."""
    if "default" in conv.schema:
        return conv.schema["default"]
    return conv.null_value


def _field(column: ColumnDef, index: int, conv: ColumnConverter,
           transform: Callable[[Any], Any] | None) -> FieldCodec:
    masked_null = transform(None) if transform is not None else None  # asterisk masks replace NULL too
    fallback = masked_null if masked_null is not None else _fallback(conv)
    if transform is None:
        return FieldCodec(column.name, index, conv.convert, fallback)
    base = conv.convert

    def convert(value: Any) -> Any:
        return transform(base(value))

    return FieldCodec(column.name, index, convert, fallback)
