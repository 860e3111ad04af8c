"""The SQL Server connector's only way to its server: catalogue statements through pyodbc.

`Gateway` runs the statements of `catalogue` (nothing else) on a pyodbc connection and returns
typed values: `Lsn` for ``binary(10)`` LSNs, `CaptureInstanceInfo` for a capture instance,
`ColumnInfo` for a column, `ChangeRow` for a change-table row. Every statement is checked
against the catalogue and its number of ``?`` parameters before it is sent.

A `Dialect` says how statements reach the server: in production the T-SQL goes as it is
(`SQL_SERVER`); a test emulator of SQL Server's CDC objects on another database hands in its
own translation of the T-SQL and of the isolation levels. The connector's statements stay T-SQL.

Transactions are the driver's: the snapshot turns autocommit off and sets the isolation level
through ``SQL_ATTR_TXN_ISOLATION`` (`begin_snapshot`), as Debezium sets it through JDBC.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from cdc_sources.sqlserver import catalogue
from cdc_sources.sqlserver.catalogue import CATALOGUE, Statement, StatementKind
from cdc_sources.sqlserver.changes import CaptureInstance, ChangeRow, TableId
from cdc_sources.sqlserver.lsn import Lsn

if TYPE_CHECKING:
    import pyodbc

__all__ = ["SQL_SERVER", "CaptureInstanceInfo", "ColumnInfo", "Dialect", "Gateway", "GatewayError",
           "parse_column_list"]

SQL_ATTR_TXN_ISOLATION = 108
"""The ODBC connection attribute of the transaction isolation level."""


class GatewayError(RuntimeError):
    """A statement that is not in the catalogue, or a result of an unexpected shape (names which)."""


@dataclass(frozen=True)
class Dialect:
    """How catalogue statements reach a server.

    Attributes:
        name: for messages.
        translate: the statement text to send for a catalogue T-SQL text.
        isolation: ``snapshot.isolation.mode`` -> ODBC ``SQL_ATTR_TXN_ISOLATION`` value.
    """

    name: str
    translate: Callable[[str], str] = field(default=lambda sql: sql)
    isolation: Mapping[str, int] = field(default_factory=lambda: dict(catalogue.ISOLATION))


SQL_SERVER = Dialect("SQL Server")
"""A real SQL Server: T-SQL as it is, Microsoft's isolation levels."""


@dataclass(frozen=True)
class CaptureInstanceInfo:
    """One row of ``sys.sp_cdc_help_change_data_capture``."""

    source_schema: str
    source_table: str
    name: str
    object_id: int
    source_object_id: int
    start_lsn: Lsn
    end_lsn: Lsn
    index_columns: tuple[str, ...]
    captured_columns: tuple[str, ...]

    def capture_instance(self, database: str, key_columns: Sequence[str] | None = None) -> CaptureInstance:
        """The change-stream view of this instance (key: ``key_columns``, default the index's)."""
        keys = tuple(self.index_columns if key_columns is None else key_columns)
        return CaptureInstance(self.name, TableId(database, self.source_schema, self.source_table), self.start_lsn,
                               self.captured_columns, keys)


@dataclass(frozen=True)
class ColumnInfo:
    """One column of a source table (``sys.columns`` joined with ``sys.types``)."""

    name: str
    type_name: str
    max_length: int
    precision: int
    scale: int
    nullable: bool
    position: int
    default: str | None = None
    """The default constraint's text (``((0))``, ``(N'abc')``, ``(getdate())``), None without one."""


_LIST_ITEM = re.compile(r"\s*(?:\[((?:[^\]]|\]\])*)\]|([^,\[\]]+?))\s*(?:,|$)")


def parse_column_list(text: str | None) -> tuple[str, ...]:
    """``[a], [b]]c]`` (``index_column_list``/``captured_column_list``) -> ``('a', 'b]c')``.

    Raises:
        GatewayError: text that is not such a list.
    """
    if text is None or not text.strip():
        return ()
    out: list[str] = []
    position = 0
    while position < len(text):
        match = _LIST_ITEM.match(text, position)
        if match is None or match.end() == position:
            raise GatewayError(f"not a column list of sys.sp_cdc_help_change_data_capture: {text!r}")
        out.append(match.group(1).replace("]]", "]") if match.group(1) is not None else match.group(2))
        position = match.end()
    return tuple(out)


def _lsn(value: Any) -> Lsn:
    return Lsn.of(value)


def _bool(value: Any) -> bool:
    return value in (True, 1, "1", "t", "true")


class Gateway:
    """Catalogue statements on one pyodbc connection (see the module doc)."""

    def __init__(self, connection: pyodbc.Connection, dialect: Dialect = SQL_SERVER) -> None:
        self.connection = connection
        self.dialect = dialect

    def _cursor(self, statement: Statement, params: Sequence[Any]) -> pyodbc.Cursor:
        known = CATALOGUE.get(statement.kind)
        if known is not None and known != statement:
            raise GatewayError(f"not the catalogue's {statement.kind.name} statement: {statement.sql!r}")
        if len(params) != statement.parameters:
            raise GatewayError(f"{statement.kind.name} takes {statement.parameters} parameter(s), got {len(params)}")
        return self.connection.cursor().execute(self.dialect.translate(statement.sql), *params)

    def _rows(self, statement: Statement, *params: Any) -> list[tuple[Any, ...]]:
        cursor = self._cursor(statement, params)
        try:
            return [tuple(row) for row in cursor.fetchall()]
        finally:
            cursor.close()

    def _value(self, kind: StatementKind, *params: Any) -> Any:
        rows = self._rows(CATALOGUE[kind], *params)
        if len(rows) != 1 or len(rows[0]) != 1:
            raise GatewayError(f"{kind.name} returned {len(rows)} row(s), expected one value")
        return rows[0][0]

    # --- server and positions -------------------------------------------------------------
    def database_name(self) -> str:
        return str(self._value(StatementKind.DATABASE_NAME))

    def version(self) -> str:
        return str(self._value(StatementKind.VERSION))

    def use_database(self, database: str) -> None:
        self._cursor(catalogue.use_database(database), ()).close()

    def cdc_enabled(self, database: str) -> bool:
        """Whether ``sys.sp_cdc_enable_db`` was run in ``database`` (False when no such database)."""
        rows = self._rows(CATALOGUE[StatementKind.CDC_ENABLED], database)
        return bool(rows) and _bool(rows[0][0])

    def max_lsn(self) -> Lsn:
        """``sys.fn_cdc_get_max_lsn()``: NULL while nothing is captured."""
        return _lsn(self._value(StatementKind.MAX_LSN))

    def max_lsn_pair(self) -> tuple[Lsn, Lsn]:
        """The highest LSN of ``cdc.lsn_time_mapping``, and the highest of a transaction."""
        rows = self._rows(CATALOGUE[StatementKind.MAX_LSN_PAIR])
        return _lsn(rows[0][0]), _lsn(rows[0][1])

    def min_lsn(self, capture_instance: str) -> Lsn:
        """``sys.fn_cdc_get_min_lsn``: all zero bytes for an instance that does not exist."""
        return _lsn(self._value(StatementKind.MIN_LSN, capture_instance))

    def increment_lsn(self, lsn: Lsn) -> Lsn:
        return _lsn(self._value(StatementKind.INCREMENT_LSN, lsn.binary))

    def lsn_to_time(self, lsn: Lsn) -> datetime | None:
        value = self._value(StatementKind.LSN_TO_TIME, lsn.binary)
        return value if isinstance(value, datetime) else None

    def heartbeat_action(self, statement: str) -> None:
        """Runs ``heartbeat.action.query``: the user's own statement, the one statement sent that
        is not in the catalogue (the dialect's translation applies to it too)."""
        self.connection.cursor().execute(self.dialect.translate(statement)).close()

    # --- capture instances and tables -------------------------------------------------------
    def capture_instances(self) -> tuple[CaptureInstanceInfo, ...]:
        """Every capture instance (``sys.sp_cdc_help_change_data_capture``)."""
        out = []
        for row in self._rows(CATALOGUE[StatementKind.CAPTURE_INSTANCES]):
            if len(row) < 15:
                raise GatewayError(f"sys.sp_cdc_help_change_data_capture returned {len(row)} columns, expected 15")
            out.append(CaptureInstanceInfo(str(row[0]), str(row[1]), str(row[2]), int(row[3]), int(row[4]),
                                           _lsn(row[5]), _lsn(row[6]), parse_column_list(row[13]),
                                           parse_column_list(row[14])))
        return tuple(out)

    def key_columns(self, object_id: int) -> tuple[str, ...]:
        return tuple(str(r[0]) for r in self._rows(CATALOGUE[StatementKind.KEY_COLUMNS], object_id))

    def table_columns(self, schema: str, table: str) -> tuple[ColumnInfo, ...]:
        name = f"{catalogue.quote(schema)}.{catalogue.quote(table)}"
        return tuple(ColumnInfo(str(r[0]), str(r[1]), int(r[2]), int(r[3]), int(r[4]), _bool(r[5]), int(r[6]),
                                None if r[7] is None else str(r[7]))
                     for r in self._rows(CATALOGUE[StatementKind.TABLE_COLUMNS], name))

    def parse_default(self, type_name: str, text: str) -> Any:
        """``SELECT PARSE(text AS type_name)``: a date/time column default as the server reads it."""
        rows = self._rows(catalogue.parse_default(type_name), text)
        if len(rows) != 1 or len(rows[0]) != 1:
            raise GatewayError(f"PARSE_DEFAULT returned {len(rows)} row(s), expected one value")
        return rows[0][0]

    # --- changes ---------------------------------------------------------------------------
    def changes(self, instance: CaptureInstance, from_lsn: Lsn, to_lsn: Lsn, *,
                function: bool = False) -> Iterator[ChangeRow]:
        """The instance's change rows with ``from_lsn <= __$start_lsn <= to_lsn``, in stream order:
        read from its change table (``data.query.mode: direct``) or its function (``function``)."""
        statement = (catalogue.changes_function(instance.name) if function
                     else catalogue.changes_direct(instance.name, instance.columns))
        cursor = self._cursor(statement, (from_lsn.binary, to_lsn.binary))
        width = 4 + len(instance.columns)
        try:
            for row in cursor:
                if len(row) != width:
                    raise GatewayError(f"capture instance {instance.name}: a change row has {len(row)} columns, "
                                       f"expected {width} (__$start_lsn, __$seqval, __$operation, __$update_mask "
                                       f"and {len(instance.columns)} captured)")
                yield ChangeRow(instance.name, _lsn(row[0]), _lsn(row[1]), int(row[2]), tuple(row[4:]))
        finally:
            cursor.close()

    # --- snapshot --------------------------------------------------------------------------
    def begin_snapshot(self, isolation_mode: str) -> None:
        """Autocommit off and the snapshot's isolation level (``snapshot.isolation.mode``)."""
        level = self.dialect.isolation.get(isolation_mode)
        if level is None:
            raise GatewayError(f"{self.dialect.name} has no isolation level for snapshot.isolation.mode "
                               f"{isolation_mode!r}")
        self.connection.autocommit = False
        self.connection.set_attr(SQL_ATTR_TXN_ISOLATION, level)

    def end_snapshot(self) -> None:
        """Commits the snapshot transaction (releasing its locks) and turns autocommit back on."""
        self.connection.commit()
        self.connection.autocommit = True

    def set_lock_timeout(self, milliseconds: int) -> None:
        self._cursor(catalogue.set_lock_timeout(milliseconds), ()).close()

    def lock_table(self, schema: str, table: str) -> None:
        self._cursor(catalogue.lock_table(schema, table), ()).close()

    def snapshot_rows(self, schema: str, table: str, columns: Sequence[str],
                      batch: int = 1024) -> Iterator[tuple[Any, ...]]:
        """The table's rows (``columns``), fetched ``batch`` at a time."""
        cursor = self._cursor(catalogue.snapshot_select(schema, table, columns), ())
        try:
            while rows := cursor.fetchmany(batch):
                for row in rows:
                    yield tuple(row)
        finally:
            cursor.close()

    # --- incremental snapshots ---------------------------------------------------------------
    def rows(self, statement: Statement, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """Every row of a signalled snapshot's statement (`catalogue.chunk_select`,
        `catalogue.max_key_select`, `catalogue.signal_watermarks`, `catalogue.blocking_select`)."""
        if statement.kind not in _READS:
            raise GatewayError(f"{statement.kind.name} is not a signalled snapshot's read")
        return self._rows(statement, *params)

    def insert_signal(self, schema: str, table: str, row: tuple[str, str, str | None]) -> None:
        """One row ``(id, type, data)`` into the signal table (autocommit: committed at once)."""
        self._cursor(catalogue.signal_insert(schema, table), row).close()

    def delete_signal(self, schema: str, table: str, id_column: str, signal_id: str) -> None:
        """Delete the signal table's row ``signal_id`` (autocommit: committed at once)."""
        self._cursor(catalogue.signal_delete(schema, table, id_column), (signal_id,)).close()


_READS = frozenset({StatementKind.CHUNK_SELECT, StatementKind.MAX_KEY_SELECT, StatementKind.SIGNAL_WATERMARKS,
                    StatementKind.BLOCKING_SELECT})
