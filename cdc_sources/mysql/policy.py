"""The MySQL/MariaDB connector's filter decisions per database, table and column.

Adapts the shared Debezium filters in `cdc_sources.common` (database/table/column lists,
``table.ignore.builtin`` with MySQL's system databases, column truncate/mask/hash rules,
source-type propagation, ``message.key.columns``, ``snapshot.include.collection.list`` and
per-table snapshot SELECT overrides) to the `ColumnDef` model. Tables are named
``<database>.<table>``, columns ``<database>.<table>.<column>``; matching ignores case.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from cdc_sources.common.column_rules import parse_column_rules
from cdc_sources.common.column_transforms import JDBC_CHARACTER_TYPES, ColumnTransforms
from cdc_sources.common.filters import DATABASE_LISTS, BuiltinTables, ColumnFilter, DataCollectionFilter
from cdc_sources.common.key_columns import KeyColumns
from cdc_sources.common.regex_list import RegexList, regex_list_option
from cdc_sources.common.source_type import SourceTypePropagation
from cdc_sources.mysql.model import ColumnDef
from cdc_sources.mysql.options import BUILTIN_DATABASES
from cdc_sources.spi import ConfigProblem

__all__ = ["JDBC_TYPE_NAMES", "MYSQL_BUILTIN", "MySqlFilterPolicy", "is_character_column"]

MYSQL_BUILTIN = BuiltinTables(containers=BUILTIN_DATABASES)
"""MySQL's system databases, hidden while ``table.ignore.builtin`` is true."""

JDBC_TYPE_NAMES = {1: "CHAR", 12: "VARCHAR", -1: "LONGVARCHAR", 2005: "CLOB", -15: "NCHAR", -9: "NVARCHAR",
                   -16: "LONGNVARCHAR", 2011: "NCLOB", 70: "DATALINK"}
"""``java.sql.Types`` codes of the character types (the ones masks change)."""

_SNAPSHOT_INCLUDE = "snapshot.include.collection.list"
_OVERRIDES = "snapshot.select.statement.overrides."


def is_character_column(column: ColumnDef) -> bool:
    """Whether Debezium treats the column as a character column (masks apply to its values)."""
    return JDBC_TYPE_NAMES.get(column.jdbc_type) in JDBC_CHARACTER_TYPES


def _signal_table(raw: Mapping[str, str]) -> list[tuple[str, str]]:
    """``signal.data.collection`` as (database, table): Debezium captures it whatever the filters say."""
    text = (raw.get("signal.data.collection") or "").strip()
    database, dot, table = text.partition(".")
    return [(database, table)] if dot and database and table else []


@dataclass(frozen=True)
class MySqlFilterPolicy:
    """Which databases, tables and columns are captured, and how columns are transformed.

    Thread-safe (the shared filters cache internally).
    """

    tables: DataCollectionFilter
    columns: ColumnFilter
    transforms: ColumnTransforms
    propagation: SourceTypePropagation
    keys: KeyColumns
    snapshot_tables: RegexList | None
    overrides: Mapping[str, str]

    @classmethod
    def from_options(cls, raw: Mapping[str, str]) -> tuple[MySqlFilterPolicy, list[ConfigProblem]]:
        """Build from the raw option texts; returns every problem (paths are option names)."""
        tables, p1 = DataCollectionFilter.from_options(
            raw, container_lists=DATABASE_LISTS, builtin=MYSQL_BUILTIN, always_include=_signal_table(raw))
        columns, p2 = ColumnFilter.from_options(raw)
        rules, tagged = parse_column_rules(raw)
        keys, p3 = KeyColumns.from_options(raw)
        problems = [*p1, *p2, *(p for _, p in tagged), *p3]
        snapshot_tables = regex_list_option(raw, _SNAPSHOT_INCLUDE, case_sensitive=False, problems=problems)
        overrides = {k.removeprefix(_OVERRIDES): v for k, v in raw.items() if k.startswith(_OVERRIDES)}
        policy = cls(tables, columns, ColumnTransforms(rules), SourceTypePropagation(rules), keys,
                     snapshot_tables, overrides)
        return policy, problems

    def captures_database(self, database: str) -> bool:
        """Whether tables of ``database`` may be captured (a quick pre-check)."""
        return self.tables.includes_container(database)

    def captures(self, database: str, table: str) -> bool:
        """Whether changes of ``database.table`` are captured."""
        return self.tables.includes_table(database, table)

    def snapshots(self, database: str, table: str) -> bool:
        """Whether the initial snapshot reads this (captured) table's rows
        (``snapshot.include.collection.list``)."""
        return self.snapshot_tables is None or self.snapshot_tables.matches(f"{database}.{table}")

    def select_override(self, database: str, table: str) -> str | None:
        """The ``snapshot.select.statement.overrides.<db>.<table>`` SELECT, if any."""
        return self.overrides.get(f"{database}.{table}")

    def includes(self, database: str, table: str, column: str) -> bool:
        """Whether ``column`` is part of the event value."""
        return self.columns.includes(database, table, column)

    def transform(self, database: str, table: str,
                  column: ColumnDef) -> tuple[Callable[[Any], Any] | None, Mapping[str, str]]:
        """The value function and extra schema parameters of a value column."""
        found = self.transforms.for_column(
            database, table, column.name, is_string=is_character_column(column), length=column.length,
            type_name=column.type_name)
        if found is None:
            return None, {}
        return found.convert, found.schema_parameters

    def propagates_type(self, database: str, table: str, column: ColumnDef) -> bool:
        """``column.propagate.source.type`` / ``datatype.propagate.source.type`` apply."""
        return self.propagation.propagates(database, table, column.name, column.type_name)

    def key_columns(self, database: str, table: str, columns: Sequence[str]) -> tuple[str, ...] | None:
        """``message.key.columns`` for the table, or None to use its primary key."""
        return self.keys.for_table(database, table, columns)
