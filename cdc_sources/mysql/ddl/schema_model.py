"""`SchemaModel`: the structure of every table, as DDL statements leave it.

The MySQL connector applies every DDL statement of the binlog (and of the snapshot and the
schema history) to one model, so each row event is decoded with the table structure in force at
its position. `apply` parses the text of one QUERY event (one or more statements), applies the
statements in order and returns a `DdlOutcome` (the events Debezium would record, warnings);
it is atomic: if a statement cannot be parsed or applied, it raises and the model is unchanged.

A model is mutable; `copy` gives an independent one cheaply (table definitions are immutable and
shared), e.g. to keep the structure as of a position.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from cdc_sources.mysql.ddl.applier import Applier
from cdc_sources.mysql.ddl.outcome import DdlOutcome
from cdc_sources.mysql.ddl.parser import parse_ddl
from cdc_sources.mysql.ddl.schema_state import CHARSET_SERVER, SchemaState
from cdc_sources.mysql.model import TableDef, TableId

__all__ = ["SchemaModel"]


class SchemaModel:
    """The structure of every table, database default charsets and the charset variables.

    Args:
        server_charset: ``character_set_server`` until a ``SET character_set_server`` says
            otherwise (Debezium starts without one; its snapshot records a ``SET`` first).
        include_comments: keep table and column comments (``include.schema.comments``).
        ansi_quotes: the server runs with ``sql_mode=ANSI_QUOTES`` (``"x"`` is an identifier). Also on
            whenever the ``sql_mode`` variable the model knows (`set_system_variables`, ``SET``)
            holds ``ANSI_QUOTES`` or ``ANSI``, as in Debezium.
        case_insensitive_names: table names compare case-insensitively
            (``lower_case_table_names`` is not 0).
    """

    def __init__(self, *, server_charset: str | None = None, include_comments: bool = False,
                 ansi_quotes: bool = False, case_insensitive_names: bool = False) -> None:
        self.include_comments = include_comments
        self.ansi_quotes = ansi_quotes
        self._case_insensitive = case_insensitive_names
        self._initial_server_charset = server_charset
        self._state = self._empty_state()

    def _empty_state(self) -> SchemaState:
        state = SchemaState(case_insensitive=self._case_insensitive)
        if self._initial_server_charset is not None:
            state.set_variable("GLOBAL", CHARSET_SERVER, self._initial_server_charset)
        return state

    # -- changing ------------------------------------------------------------------------------

    def apply(self, ddl: str, *, database: str | None) -> DdlOutcome:
        """Apply the DDL of one QUERY event, run in default database ``database``.

        Raises:
            DdlParseError: a statement could not be parsed, or (`DdlUnknownObjectError`) names a
                column or table the model lacks where Debezium fails too. The model is then
                unchanged.
        """
        statements = parse_ddl(ddl, database=database, ansi_quotes=self._ansi_quotes())
        work = self._state.copy()
        applier = Applier(work, database=database, include_comments=self.include_comments)
        for statement in statements:
            applier.apply(statement)
        outcome = DdlOutcome(applier.events(), tuple(applier.warnings), applier.database, len(statements),
                             applier.ignored)
        self._state = work
        return outcome

    def _ansi_quotes(self) -> bool:
        modes = {m.strip().upper() for m in (self._state.variable("sql_mode") or "").split(",")}
        return self.ansi_quotes or bool(modes & {"ANSI_QUOTES", "ANSI"})

    def set_system_variables(self, variables: Mapping[str, str | None], *, scope: str = "GLOBAL") -> None:
        """Set system variables as read from the server (Debezium's ``setSystemVariables``), e.g.
        ``character_set_server`` and ``sql_mode`` at start-up. ``scope``: GLOBAL or SESSION."""
        for name, value in variables.items():
            self._state.set_variable(scope.upper(), name, value)

    def put_table(self, table: TableDef) -> None:
        """Store a table definition as is (e.g. one read back from a history record)."""
        self._state.put(table)

    def remove_table(self, table_id: TableId) -> TableDef | None:
        """Forget a table; returns its last definition."""
        return self._state.remove(table_id)

    def reset(self) -> None:
        """Forget everything (before a snapshot rebuilds the model)."""
        self._state = self._empty_state()

    def copy(self) -> SchemaModel:
        """An independent model with the same content."""
        other = SchemaModel(server_charset=self._initial_server_charset, include_comments=self.include_comments,
                            ansi_quotes=self.ansi_quotes, case_insensitive_names=self._case_insensitive)
        other._state = self._state.copy()
        return other

    # -- reading -------------------------------------------------------------------------------

    def table(self, table_id: TableId) -> TableDef | None:
        """The current definition of a table, or None if unknown."""
        return self._state.table(table_id)

    def tables(self) -> Iterator[TableDef]:
        """Every known table."""
        return iter(list(self._state.tables.values()))

    def table_ids(self) -> list[TableId]:
        """The ids of every known table, sorted."""
        return sorted((t.id for t in self._state.tables.values()), key=lambda i: (i.database, i.table))

    def database_charset(self, database: str) -> str | None:
        """The default character set recorded for a database."""
        return self._state.database_charsets.get(database)

    @property
    def database_charsets(self) -> dict[str, str]:
        """A copy of the database default character sets."""
        return dict(self._state.database_charsets)

    @property
    def server_charset(self) -> str | None:
        """``character_set_server`` as the model knows it."""
        return self._state.variable(CHARSET_SERVER)

    def variable(self, name: str) -> str | None:
        """A system variable as last set by a ``SET`` (session value first)."""
        return self._state.variable(name)

    def __len__(self) -> int:
        return len(self._state.tables)

    def __contains__(self, table_id: object) -> bool:
        return isinstance(table_id, TableId) and self._state.table(table_id) is not None
