"""SQL Server's side of incremental snapshots (`cdc_sources.common.incremental_snapshot`).

The shared driver runs Debezium's watermark-based incremental snapshot (``insert_insert``) over
the change stream; this module is what it asks of the server, through catalogue statements
(`cdc_sources.sqlserver.catalogue`) on a connection of its own (autocommit), so the stream's
change-table reads are not disturbed:

- **watermarks**: ``INSERT INTO <signal table> VALUES (id, type, data)`` (committed at once); they
  come back through the signal table's change table once the capture job has scanned the log,
  like any change, and the driver opens and closes the chunk's window there;
- **chunks**: ``SELECT TOP (n + 1) <captured columns> FROM <table> WHERE <key above the last
  chunk's> AND <key not above the table's largest> AND (<additional condition>) ORDER BY <key>``.
  T-SQL has no row-value comparison, so a key of several columns is compared column by column;
  key values travel as text parameters cast to the key column's type (``CAST(? AS int)``), as the
  driver keeps them as text in the offset;
- **rows**: rendered by the table's column policy exactly as streamed rows (same key and value
  texts, so a streamed change of a key drops the buffered row); the events' ``source`` says
  ``snapshot: "incremental"`` with the close watermark's ``commit_lsn`` and ``change_lsn``.

Tables are chunked by their event key (the primary key, or ``message.key.columns``) or the
signal's ``surrogate-key``; a key column of a binary type is not supported (the table is
skipped, logged).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from datetime import date, datetime
from datetime import time as clock
from typing import Any, Protocol

import orjson

from cdc_sources.common.envelope import dumps, envelope_text
from cdc_sources.common.incremental_snapshot import Chunk, Key, emission_order, event_key, keyless_id, open_after_lookup
from cdc_sources.common.incremental_state import SnapshotCollection
from cdc_sources.spi import ChangeRecord, SchemaVersion, SourceError, StreamItem
from cdc_sources.sqlserver import catalogue
from cdc_sources.sqlserver.changes import CaptureInstance
from cdc_sources.sqlserver.columns import TableFields
from cdc_sources.sqlserver.gateway import ColumnInfo, Gateway
from cdc_sources.sqlserver.lsn import Lsn
from cdc_sources.sqlserver.signal_table import SignalTable
from cdc_sources.sqlserver.source_info import SnapshotRecord, SqlServerSource

__all__ = ["CapturedTable", "SqlServerChunkSource", "key_text", "sql_type"]

_BINARY = frozenset({"binary", "varbinary", "image", "timestamp", "rowversion"})
_SIZED = frozenset({"char", "varchar"})
_WIDE = frozenset({"nchar", "nvarchar"})
_SCALED = frozenset({"datetime2", "time", "datetimeoffset"})


class CapturedTable(Protocol):
    """What the chunk source needs of a captured table (the session's capture instance in use)."""

    @property
    def instance(self) -> CaptureInstance: ...

    @property
    def topic(self) -> str: ...

    @property
    def fields(self) -> TableFields: ...

    @property
    def version(self) -> SchemaVersion: ...


def sql_type(column: ColumnInfo) -> str:
    """The T-SQL type a key value is cast to (``decimal(9, 2)``, ``nvarchar(40)``, ``datetime2(3)``)."""
    name = column.type_name.lower()
    if name in ("decimal", "numeric"):
        return f"{name}({column.precision}, {column.scale})"
    if name in _SIZED:
        return f"{name}({column.max_length if column.max_length > 0 else 'max'})"
    if name in _WIDE:
        return f"{name}({column.max_length // 2 if column.max_length > 0 else 'max'})"
    if name in _SCALED:
        return f"{name}({column.scale})"
    return name


def key_text(value: Any) -> str | None:
    """A key value as the text kept in the offset and sent back as a parameter (None: NULL)."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, datetime):
        return value.isoformat(sep=" ")
    if isinstance(value, date | clock):
        return value.isoformat()
    return str(value)  # int, Decimal, float, UUID: their T-SQL literal text


class SqlServerChunkSource:
    """Implements `cdc_sources.common.incremental_snapshot.ChunkSource` for SQL Server.

    Args:
        gateway: a gateway on a connection of its own (autocommit), in the captured database.
        tables: the captured tables now, by ``(schema, table)`` (the capture instance in use).
        name: ``topic.prefix``.
        database: the captured database (``source.db``).
        signal_table: the signal table.
    """

    def __init__(self, *, gateway: Gateway, tables: Callable[[], Mapping[tuple[str, str], CapturedTable]],
                 name: str, database: str, signal_table: SignalTable) -> None:
        self.gateway = gateway
        self.tables = tables
        self.name = name
        self.database = database
        self.signal_table = signal_table
        self._signal_columns: tuple[str, str] | None = None

    def _table(self, c: SnapshotCollection) -> CapturedTable:
        return self.tables()[(c.schema, c.table)]

    def _columns(self, c: SnapshotCollection) -> dict[str, ColumnInfo]:
        return {col.name: col for col in self.gateway.table_columns(c.schema, c.table)}

    def chunk_key(self, c: SnapshotCollection) -> tuple[str, ...] | str:
        t = self._table(c)
        if c.surrogate_key:
            key: tuple[str, ...] = (c.surrogate_key,)
            if c.surrogate_key not in t.instance.columns:
                return f"no captured column {c.surrogate_key!r} (surrogate-key)"
        elif t.instance.key_columns:
            key = tuple(t.instance.key_columns)
        else:
            return "no primary key (give a surrogate-key)"
        columns = self._columns(c)
        binary = [k for k in key if k in columns and columns[k].type_name.lower() in _BINARY]
        if binary:
            return f"key column(s) {binary} of a binary type: chunking by them is not supported (give a surrogate-key)"
        return key

    def max_key(self, c: SnapshotCollection, key: Sequence[str]) -> Key | None:
        rows = self.gateway.rows(catalogue.max_key_select(c.schema, c.table, key, c.condition))
        return None if not rows else tuple(key_text(v) for v in rows[0])

    def read_chunk(self, c: SnapshotCollection, key: Sequence[str], after: Key | None, upto: Key | None,
                   size: int | None) -> Chunk:
        t = self._table(c)
        columns = self._columns(c)
        statement = catalogue.chunk_select(
            c.schema, c.table, t.instance.columns, key, [sql_type(columns[k]) for k in key],
            after=after is not None, upto=upto is not None, condition=c.condition,
            limit=None if size is None else size + 1)
        params = [*catalogue.keyset_parameters(after or ()), *catalogue.keyset_parameters(upto or ())]
        rows = self.gateway.rows(statement, params)
        more = size is not None and len(rows) > size
        rows = rows[:size] if size is not None else rows
        index = [t.instance.columns.index(k) for k in key]
        keyed = bool(t.instance.key_columns)
        out: dict[str | None, str] = {}
        for row in rows:
            entry = dumps(t.fields.key(t.instance.key_of(row))) if keyed else keyless_id(
                [key_text(row[i]) for i in index])
            out[entry] = dumps(t.fields.row(row))
        last = tuple(key_text(rows[-1][i]) for i in index) if rows else None
        return Chunk(t.topic, out, last, more)

    def read_events(self, c: SnapshotCollection, chunk: Chunk, order_key: tuple[int, ...],
                    position: str) -> list[StreamItem]:
        if not chunk.rows:
            return []
        t = self._table(c)
        at = orjson.loads(position)
        source = dumps(SqlServerSource(self.name, time.time_ns(), self.database, c.schema, c.table,
                                       Lsn.parse(at.get("commit_lsn")), Lsn.parse(at.get("change_lsn")),
                                       snapshot=SnapshotRecord.INCREMENTAL).payload())
        return [[ChangeRecord(t.topic, event_key(entry), envelope_text("null", after, source, "r", "null"), "r",
                              position, (*order_key, h), t.version.schema_id)
                 for h, entry, after in emission_order(chunk.rows)]]

    def insert_watermark(self, window_id: str, *, opens: bool, data: str | None = None) -> None:
        s = self.signal_table
        kind = "snapshot-window-open" if opens else "snapshot-window-close"
        self.gateway.insert_signal(s.schema, s.table, (f"{window_id}-{'open' if opens else 'close'}", kind, data))

    def open_watermark(self, window_id: str) -> dict[str, str | None]:
        return open_after_lookup(self, window_id)

    def delete_watermark(self, window_id: str) -> None:
        s = self.signal_table
        self.gateway.delete_signal(s.schema, s.table, self._signal_id_data()[0], f"{window_id}-open")

    def watermarks_present(self, window_id: str) -> dict[str, str | None]:
        """The window's watermarks in the signal table: id -> data."""
        s = self.signal_table
        rows = self.gateway.rows(catalogue.signal_watermarks(s.schema, s.table, *self._signal_id_data()),
                                 (f"{window_id}-open", f"{window_id}-close"))
        return {str(r[0]): None if r[1] is None else str(r[1]) for r in rows}

    def _signal_id_data(self) -> tuple[str, str]:
        """The signal table's id and data columns (its first and third: Debezium reads them by position)."""
        s = self.signal_table
        if self._signal_columns is None:
            names = [col.name for col in self.gateway.table_columns(s.schema, s.table)]
            if len(names) < 3:
                raise SourceError(f"signal table {s.text} needs the columns id, type, data; it has {names}")
            self._signal_columns = (names[0], names[2])
        return self._signal_columns
