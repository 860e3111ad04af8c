"""The PostgreSQL connector's filter decisions per table and column.

Adapts the shared Debezium filters in `cdc_sources.common` (include/exclude lists, column
truncate/mask/hash rules, source-type propagation, ``message.key.columns``) to the
`ColumnPolicy` that the table codecs use, with PostgreSQL's system tables.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from cdc_sources.common.column_rules import parse_column_rules
from cdc_sources.common.column_transforms import ColumnTransforms
from cdc_sources.common.filters import (
    SCHEMA_LISTS,
    BuiltinTables,
    ColumnFilter,
    DataCollectionFilter,
    MessagePrefixFilter,
)
from cdc_sources.common.key_columns import KeyColumns
from cdc_sources.common.regex_list import RegexList, regex_list_option
from cdc_sources.common.source_type import SourceTypePropagation
from cdc_sources.postgres.types import PgColumn
from cdc_sources.spi import ConfigProblem

POSTGRES_BUILTIN = BuiltinTables(
    containers=frozenset({"pg_catalog", "information_schema"}),
    container_prefixes=("pg_temp", "pg_toast"),
    tables=frozenset({"spatial_ref_sys"}),
)

_SNAPSHOT_INCLUDE = "snapshot.include.collection.list"
_OVERRIDES = "snapshot.select.statement.overrides."


@dataclass(frozen=True)
class FilterPolicy:
    """Which tables, columns and messages are captured, and how columns are transformed.

    Thread-safe (the shared filters cache internally).
    """

    tables: DataCollectionFilter
    columns: ColumnFilter
    messages: MessagePrefixFilter
    transforms: ColumnTransforms
    propagation: SourceTypePropagation
    keys: KeyColumns
    snapshot_tables: RegexList | None
    overrides: Mapping[str, str]

    @classmethod
    def from_options(cls, raw: Mapping[str, str]) -> tuple[FilterPolicy, list[ConfigProblem]]:
        """Build from the raw option texts; returns every problem (paths are option names)."""
        signal = raw.get("signal.data.collection")
        always = [tuple(signal.split(".", 1))] if signal and "." in signal else []
        tables, p1 = DataCollectionFilter.from_options(
            raw, container_lists=SCHEMA_LISTS, builtin=POSTGRES_BUILTIN,
            always_include=[(a[0], a[1]) for a in always])
        columns, p2 = ColumnFilter.from_options(raw)
        messages, p3 = MessagePrefixFilter.from_options(raw)
        rules, tagged = parse_column_rules(raw)
        keys, p4 = KeyColumns.from_options(raw)
        problems = [*p1, *p2, *p3, *(p for _, p in tagged), *p4]
        snapshot_tables = regex_list_option(raw, _SNAPSHOT_INCLUDE, case_sensitive=False, problems=problems)
        overrides = {k.removeprefix(_OVERRIDES): v for k, v in raw.items() if k.startswith(_OVERRIDES)}
        policy = cls(tables, columns, messages, ColumnTransforms(rules), SourceTypePropagation(rules), keys,
                     snapshot_tables, overrides)
        return policy, problems

    def captures(self, schema: str, table: str) -> bool:
        return self.tables.includes_table(schema, table)

    def snapshots(self, schema: str, table: str) -> bool:
        return self.snapshot_tables is None or self.snapshot_tables.matches(f"{schema}.{table}")

    def select_override(self, schema: str, table: str) -> str | None:
        return self.overrides.get(f"{schema}.{table}")

    def includes(self, schema: str, table: str, column: str) -> bool:
        return self.columns.includes(schema, table, column)

    def includes_message(self, prefix: str) -> bool:
        return self.messages.includes(prefix)

    def transform(self, schema: str, table: str, column: PgColumn) -> tuple[Callable[[Any], Any] | None,
                                                                         Mapping[str, str]]:
        """The value function and extra schema parameters of a value column."""
        resolved, mod = column.type.resolved(column.typmod)
        found = self.transforms.for_column(
            schema, table, column.name, is_string=resolved.category == "S",
            length=_length(resolved.name, mod), type_name=column.type.name)
        if found is None:
            return None, {}
        return found.convert, found.schema_parameters

    def propagates_type(self, schema: str, table: str, column: PgColumn) -> bool:
        """``column.propagate.source.type`` / ``datatype.propagate.source.type`` apply (the
        converters build the parameters, which differ between snapshot and stream)."""
        return self.propagation.propagates(schema, table, column.name, column.type.name)

    def key_columns(self, schema: str, table: str, columns: Sequence[str]) -> tuple[str, ...] | None:
        return self.keys.for_table(schema, table, columns)


def _length(type_name: str, mod: int) -> int | None:
    if mod < 0:
        return None
    if type_name in ("varchar", "bpchar", "bit", "varbit"):
        return mod - 4 if type_name in ("varchar", "bpchar") else mod
    if type_name == "numeric":
        return ((mod - 4) >> 16) & 0xFFFF
    return None
