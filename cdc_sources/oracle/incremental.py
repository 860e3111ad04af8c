"""Oracle's side of incremental snapshots (`cdc_sources.common.incremental_snapshot`).

Chunks are read with `chunk_statements.chunk_select` (keyset predicate column by column,
``ORDER BY`` the key, ``FETCH FIRST n ROWS ONLY``) on a connection of their own, and rendered
as the initial snapshot renders its rows (`snapshot_values.redo_value`, then the event maker),
with ``op = r`` and ``source.snapshot = "incremental"``: a row read by a chunk and the same row
read by the initial snapshot make the same ``after``. Watermarks are inserted into the signal
table as ``(id, type, data)``, each committed by itself, and mined back like any change of it.

Chunk keys are kept as text in the offset (numbers in plain decimal form, dates and timestamps
in ISO form) and bound back as typed values; a key column of another type (binary, LOB,
interval, floating point) cannot order chunks (give a ``surrogate-key`` of another type).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from datetime import datetime
from decimal import Decimal
from typing import Any

import orjson

from cdc_sources.common.envelope import dumps, envelope_text
from cdc_sources.common.incremental_snapshot import Chunk, Key, emission_order, event_key, keyless_id, open_after_lookup
from cdc_sources.common.incremental_state import SnapshotCollection
from cdc_sources.oracle import gateway as gw
from cdc_sources.oracle.chunk_statements import chunk_select, max_key_select, signal_delete, signal_insert, signal_read
from cdc_sources.oracle.converters import OracleColumn, OracleType
from cdc_sources.oracle.envelope import EventMaker, OracleTable
from cdc_sources.oracle.snapshot_values import redo_value
from cdc_sources.oracle.source import OracleEvent, OracleSourceInfo
from cdc_sources.spi import ChangeRecord, StreamItem, commit_mark

__all__ = ["CHUNKABLE_TYPES", "OracleChunkSource"]

_NUMBERS = frozenset({OracleType.NUMBER})
_STRINGS = frozenset({OracleType.CHAR, OracleType.NCHAR, OracleType.VARCHAR2, OracleType.NVARCHAR2})
_TIMES = frozenset({OracleType.DATE, OracleType.TIMESTAMP})
CHUNKABLE_TYPES = _NUMBERS | _STRINGS | _TIMES
"""Key column types whose text form binds back to a value ordering like the column."""


def _key_text(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, Decimal):
        return format(value, "f")
    if isinstance(value, datetime):
        return value.isoformat()
    return str(value)


def _key_value(column: OracleColumn, text: str | None) -> Any:
    if text is None:
        return None
    if column.type in _NUMBERS:
        return Decimal(text)
    if column.type in _TIMES:
        return datetime.fromisoformat(text)
    return text


class OracleChunkSource:
    """Implements `cdc_sources.common.incremental_snapshot.ChunkSource` for Oracle.

    Args:
        gateway: returns the gateway of a connection of its own (opened on first use; its statements are
            committed one by one).
        maker: the capture's event maker (the tables' structures at the stream's position).
        source: the fixed parts of the ``source`` block.
        signal_table: the signal table ``(schema, table)``.
        signal_id_column: the signal table's first column.
    """

    def __init__(self, *, gateway: Callable[[], gw.OracleGateway], maker: EventMaker, source: OracleSourceInfo,
                 signal_table: tuple[str, str] | None, signal_id_column: str | None) -> None:
        self.gateway = gateway
        self.maker = maker
        self.source = source
        self.signal_table = signal_table
        self.signal_id_column = signal_id_column
        self.announced: set[str] = set()
        """Schema ids whose `SchemaVersion` was emitted (shared with the session)."""

    def table(self, c: SnapshotCollection) -> OracleTable:
        """A captured table's structure at the stream's position (LookupError: unknown)."""
        found = self.maker.table(c.schema, c.table)
        if found is None:
            raise LookupError(f"table {c.id}: its structure is unknown")
        return found

    # -- ChunkSource ------------------------------------------------------------------------------

    def chunk_key(self, c: SnapshotCollection) -> tuple[str, ...] | str:
        table = self.maker.table(c.schema, c.table)
        if table is None:
            return "its structure is unknown"
        names = [col.name for col in table.columns]
        if c.surrogate_key:
            if c.surrogate_key not in names:
                return f"no column {c.surrogate_key!r} (surrogate-key)"
            key: tuple[str, ...] = (c.surrogate_key,)
        elif table.key:
            key = table.key
        else:
            return "no primary key (give a surrogate-key)"
        for name in key:
            column = table.columns[names.index(name)]
            if column.type not in CHUNKABLE_TYPES:
                return (f"key column {name!r} is {column.type.value}, which cannot order chunks (give a "
                        "surrogate-key of another type)")
        return key

    def _columns(self, table: OracleTable, key: Sequence[str]) -> list[OracleColumn]:
        by_name = {col.name: col for col in table.columns}
        return [by_name[k] for k in key]

    def max_key(self, c: SnapshotCollection, key: Sequence[str]) -> Key | None:
        table = self.table(c)
        _, rows = self.gateway().columns(max_key_select(table.schema, table.name, key, c.condition))
        return None if not rows else tuple(_key_text(v) for v in rows[0])

    def read_chunk(self, c: SnapshotCollection, key: Sequence[str], after: Key | None, upto: Key | None,
                   size: int | None) -> Chunk:
        table = self.table(c)
        cols = self._columns(table, key)

        def typed(k: Key | None) -> list[Any] | None:
            return None if k is None else [_key_value(col, v) for col, v in zip(cols, k, strict=True)]

        names = [col.name for col in table.columns]
        statement, params = chunk_select(table.schema, table.name, names, key, typed(after), typed(upto),
                                         c.condition, None if size is None else size + 1)
        _, rows = self.gateway().columns(statement, params)
        more = size is not None and len(rows) > size
        rows = rows[:size] if size is not None else rows
        index = [names.index(k) for k in key]
        out: dict[str | None, str] = {}
        for row in rows:
            values = tuple(redo_value(col, v) for col, v in zip(table.columns, row, strict=True))
            rec = self.maker.read_record(table, values, snapshot_scn=0, ts_ms=0, marker="incremental")
            assert rec.value is not None
            entry = keyless_id([_key_text(row[i]) for i in index]) if rec.key is None else dumps(rec.key)
            out[entry] = dumps(rec.value["after"])
        last = tuple(_key_text(rows[-1][i]) for i in index) if rows else None
        return Chunk(table.topic(self.source.name), out, last, more)

    def read_events(self, c: SnapshotCollection, chunk: Chunk, order_key: tuple[int, ...],
                    position: str) -> list[StreamItem]:
        table = self.table(c)
        version = self.maker.schema_version(table)
        out: list[StreamItem] = []
        if version.schema_id not in self.announced:
            out.append(version)
            self.announced.add(version.schema_id)
        if not chunk.rows:
            return out
        scn = commit_mark(orjson.loads(position))  # the close watermark's commit SCN
        source = dumps(self.source.block(OracleEvent(schema=table.schema, table=table.name,
                                                     ts_ms=time.time_ns() // 1_000_000, scn=scn,
                                                     snapshot="incremental")))
        out.append([ChangeRecord(version.topic, event_key(key), envelope_text("null", after, source, "r", "null"), "r",
                                 position, (*order_key, h), version.schema_id, None)
                    for h, key, after in emission_order(chunk.rows)])
        return out

    def insert_watermark(self, window_id: str, *, opens: bool, data: str | None = None) -> None:
        owner, name = self._signal()
        kind = "snapshot-window-open" if opens else "snapshot-window-close"
        self.gateway().run(signal_insert(owner, name), (f"{window_id}-{'open' if opens else 'close'}", kind, data))
        self.gateway().commit()

    def open_watermark(self, window_id: str) -> dict[str, str | None]:
        return open_after_lookup(self, window_id)

    def delete_watermark(self, window_id: str) -> None:
        owner, name = self._signal()
        assert self.signal_id_column is not None
        self.gateway().run(signal_delete(owner, name, self.signal_id_column), (f"{window_id}-open",))
        self.gateway().commit()

    def watermarks_present(self, window_id: str) -> dict[str, str | None]:
        """The window's watermarks in the signal table: id -> data."""
        owner, name = self._signal()
        assert self.signal_id_column is not None
        _, rows = self.gateway().columns(signal_read(owner, name, self.signal_id_column),
                                       (f"{window_id}-open", f"{window_id}-close"))
        return {str(r[0]): None if r[2] is None else str(r[2]) for r in rows}

    def _signal(self) -> tuple[str, str]:
        if self.signal_table is None:
            raise LookupError("no signal table (signal.data.collection)")
        return self.signal_table

