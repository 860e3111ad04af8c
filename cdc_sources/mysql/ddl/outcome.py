"""What applying a QUERY event's DDL did: `DdlOutcome`, a list of `DdlEvent`.

The events are the ones Debezium's DDL parser signals, in statement order: one per created,
altered (or renamed), dropped or truncated table, one per ``CREATE UNIQUE INDEX`` on a table
without a key (whether or not the index becomes the key), one per ``CREATE``/``DROP DATABASE``
and ``USE``, and one per variable of a ``SET``. The MySQL connector turns each into one schema
change event and one schema history record, with the event's ``statement`` as ``ddl`` and its
``database`` as ``databaseName`` (the key of the schema change topic); a truncate becomes an
``op: t`` record instead.

A statement can have an effect on nothing Debezium records (``CREATE INDEX`` of a non-unique
index, ``ALTER TABLE`` of a table the model does not know, ``ALTER DATABASE``...). Debezium still
records such a statement, as one database-level schema change carrying the whole DDL; `ignored`
is False for those and True only when every statement was of a kind without any schema meaning
(DML, grants, views, routines, transaction control...).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from cdc_sources.mysql.model import TableDef, TableId

__all__ = ["ChangeType", "DdlEvent", "DdlOutcome", "EventKind", "TableChange"]


class ChangeType(StrEnum):
    """``tableChanges[].type``."""

    CREATE = "CREATE"
    ALTER = "ALTER"
    DROP = "DROP"


class EventKind(StrEnum):
    """The kinds of event Debezium's parser signals."""

    CREATE_TABLE = "CREATE_TABLE"
    ALTER_TABLE = "ALTER_TABLE"
    DROP_TABLE = "DROP_TABLE"
    TRUNCATE_TABLE = "TRUNCATE_TABLE"
    CREATE_INDEX = "CREATE_INDEX"
    CREATE_DATABASE = "CREATE_DATABASE"
    DROP_DATABASE = "DROP_DATABASE"
    USE_DATABASE = "USE_DATABASE"
    SET_VARIABLE = "SET_VARIABLE"


@dataclass(frozen=True, slots=True)
class TableChange:
    """One ``tableChanges`` entry of a schema change event or history record.

    Attributes:
        type: CREATE, ALTER or DROP.
        table_id: the table (its new name after a rename).
        table: the table's structure; None for DROP.
        previous_id: the old name, for ``RENAME TABLE`` only (Debezium's ``previousId``; an
            ``ALTER TABLE ... RENAME`` is an ALTER of the new name without it).
    """

    type: ChangeType
    table_id: TableId
    table: TableDef | None
    previous_id: TableId | None = None


@dataclass(frozen=True, slots=True)
class DdlEvent:
    """One event of a DDL statement.

    Attributes:
        kind: what happened.
        database: the database the event belongs to: the table's, the created/dropped/used
            database's, or the current one for ``SET`` ("" when none).
        statement: the DDL text Debezium records for it (``DROP TABLE a, b`` gives one event
            per table, each with its own ``DROP TABLE `db`.`a``` text).
        table_id: the table of a table event.
        renamed_from: for a renamed table (``RENAME TABLE`` or ``ALTER TABLE ... RENAME``), its
            old name.
        previous_id: Debezium's ``previousId``: the old name for ``RENAME TABLE`` only.
        change: the ``tableChanges`` entry, with the table as it is after the whole QUERY event
            (as Debezium builds it); None for truncate, database and variable events, and when
            the table no longer exists at the end.
        name: the database name (database events) or the variable name (``SET``).
        value: the database's character set, or the variable's value.
    """

    kind: EventKind
    database: str
    statement: str
    table_id: TableId | None = None
    renamed_from: TableId | None = None
    previous_id: TableId | None = None
    change: TableChange | None = None
    name: str | None = None
    value: str | None = None


@dataclass(frozen=True, slots=True)
class DdlOutcome:
    """What `SchemaModel.apply` did with one QUERY event.

    Attributes:
        events: the events, in statement order.
        warnings: inconsistencies Debezium tolerates silently and the model tolerated too
            (``ALTER TABLE`` of an unknown table, ``DROP COLUMN`` of a missing column...): the
            model may have drifted from the database.
        database: the default database after the statements (a ``USE`` changes it).
        statements: how many statements the text held.
        ignored_statements: how many of them had no schema meaning at all.
    """

    events: tuple[DdlEvent, ...]
    warnings: tuple[str, ...]
    database: str | None
    statements: int
    ignored_statements: int

    @property
    def ignored(self) -> bool:
        """Nothing to record: every statement was without schema meaning (or there was none)."""
        return self.ignored_statements == self.statements

    @property
    def table_changes(self) -> tuple[TableChange, ...]:
        """The ``tableChanges`` entries of all events, in order."""
        return tuple(e.change for e in self.events if e.change is not None)

    @property
    def truncated(self) -> tuple[TableId, ...]:
        """The tables truncated (known to the model), in order."""
        return tuple(e.table_id for e in self.events if e.kind is EventKind.TRUNCATE_TABLE and e.table_id)

    @property
    def database_changes(self) -> tuple[DdlEvent, ...]:
        """The database-level events (``CREATE``/``DROP DATABASE``, ``USE``, ``SET``)."""
        return tuple(e for e in self.events if e.kind in _DATABASE_KINDS)


_DATABASE_KINDS = frozenset({EventKind.CREATE_DATABASE, EventKind.DROP_DATABASE, EventKind.USE_DATABASE,
                             EventKind.SET_VARIABLE})
