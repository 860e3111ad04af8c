"""The data behind a `SchemaModel`: tables, unique indexes, database charsets, system variables.

`SchemaState` is a plain container; `copy` is shallow (table definitions are immutable), which
is what makes `SchemaModel.apply` atomic and snapshots cheap.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from cdc_sources.mysql.ddl.table_editor import UniqueIndex
from cdc_sources.mysql.model import TableDef, TableId

__all__ = ["CHARSET_DATABASE", "CHARSET_SERVER", "SchemaState"]

CHARSET_SERVER = "character_set_server"
CHARSET_DATABASE = "character_set_database"


@dataclass
class SchemaState:
    """Everything the model knows.

    Attributes:
        tables: table definitions by lookup key (see `key`).
        unique_indexes: the UNIQUE indexes of each table, by the same key.
        database_charsets: the default character set of each database the DDL named.
        session_variables: system variables set in session scope (names lower-cased).
        global_variables: system variables set in global scope (names lower-cased).
        case_insensitive: table names compare case-insensitively (``lower_case_table_names``).
    """

    tables: dict[TableId, TableDef] = field(default_factory=dict)
    unique_indexes: dict[TableId, tuple[UniqueIndex, ...]] = field(default_factory=dict)
    database_charsets: dict[str, str] = field(default_factory=dict)
    session_variables: dict[str, str] = field(default_factory=dict)
    global_variables: dict[str, str] = field(default_factory=dict)
    case_insensitive: bool = False

    def copy(self) -> SchemaState:
        """An independent copy (sharing the immutable table definitions)."""
        return SchemaState(dict(self.tables), dict(self.unique_indexes), dict(self.database_charsets),
                           dict(self.session_variables), dict(self.global_variables), self.case_insensitive)

    def key(self, table_id: TableId) -> TableId:
        """The lookup key of a table."""
        if self.case_insensitive:
            return TableId(table_id.database.lower(), table_id.table.lower())
        return table_id

    def table(self, table_id: TableId) -> TableDef | None:
        """The table, if known."""
        return self.tables.get(self.key(table_id))

    def put(self, table: TableDef, unique_indexes: tuple[UniqueIndex, ...] = ()) -> None:
        """Store a table version."""
        key = self.key(table.id)
        self.tables[key] = table
        self.unique_indexes[key] = unique_indexes

    def remove(self, table_id: TableId) -> TableDef | None:
        """Forget a table; returns what was known."""
        key = self.key(table_id)
        self.unique_indexes.pop(key, None)
        return self.tables.pop(key, None)

    def indexes(self, table_id: TableId) -> tuple[UniqueIndex, ...]:
        """The table's UNIQUE indexes."""
        return self.unique_indexes.get(self.key(table_id), ())

    def variable(self, name: str) -> str | None:
        """A system variable: the session value, else the global one."""
        lowered = name.lower()
        value = self.session_variables.get(lowered)
        return value if value is not None else self.global_variables.get(lowered)

    def set_variable(self, scope: str, name: str, value: str | None) -> None:
        """Set (or, with None, clear) a variable in ``GLOBAL`` or ``SESSION`` scope."""
        target = self.global_variables if scope == "GLOBAL" else self.session_variables
        if value is None:
            target.pop(name.lower(), None)
        else:
            target[name.lower()] = value

    def current_database_charset(self) -> str | None:
        """``character_set_database``, else ``character_set_server`` (Debezium's rule)."""
        charset = self.variable(CHARSET_DATABASE)
        if charset is None or charset.upper() == "DEFAULT":
            charset = self.variable(CHARSET_SERVER)
        return charset

    def charset_for_table(self, table_id: TableId) -> str | None:
        """The character set a new table of this database gets when it names none."""
        return self.database_charsets.get(table_id.database) or self.current_database_charset()
