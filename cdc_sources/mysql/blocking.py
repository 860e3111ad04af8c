"""MySQL's and MariaDB's side of blocking snapshots (`cdc_sources.common.blocking_snapshot`).

A table is read with ``SELECT <every column> FROM db.table AS t`` (or from the signal's
``SELECT`` as a derived table) on the incremental snapshot's connection, which returns values
as the snapshot's connection does, and rendered with a snapshot codec of the table's structure
at the stream's position: the rows are what the initial snapshot emits. The pause key is
``(binlog file number, checkpoint pos, 2^62)``: the records of a transaction have order keys
``(file number, event start, row, n)``, its events starting before the end of its commit (the
checkpoint's ``pos``); a later transaction starts at or after it with a GTID event, which
yields no record, so its records start after it; a snapshot read at ``pos`` has keys
``(file number, pos, 0, n)``.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any

import orjson

from cdc_sources.common.blocking_snapshot import BlockingCollection, row_source, rows_block
from cdc_sources.common.envelope import dumps
from cdc_sources.common.incremental_snapshot import Chunk
from cdc_sources.common.incremental_state import SnapshotCollection
from cdc_sources.mysql.incremental import MySqlChunkSource
from cdc_sources.mysql.offset import binlog_file_number
from cdc_sources.spi import Retriable, SourceError, StreamItem

__all__ = ["MySqlBlockingSource"]

_AFTER_EVENTS = 1 << 62


class MySqlBlockingSource:
    """Implements `cdc_sources.common.blocking_snapshot.BlockingSource` over the incremental
    snapshot's chunk source (its connection, table structures, codecs and announced schemas)."""

    def __init__(self, chunks: MySqlChunkSource) -> None:
        self.chunks = chunks

    def read_table(self, c: BlockingCollection) -> Chunk | str:
        try:
            definition = self.chunks.table(SnapshotCollection(c.schema, c.table))
        except LookupError as exc:
            return str(exc)
        if not definition.primary_key:
            return "no primary key (blocking snapshots read tables with one)"
        codec = self.chunks.codec(definition)
        cols = ", ".join(f"t.{_q(col.name)}" for col in definition.columns)
        table_sql = f"{_q(definition.id.database)}.{_q(definition.id.table)}"
        try:
            rows = self.chunks.query(f"SELECT {cols} FROM {row_source(c, table_sql)}",
                                     where=f"reading the rows of {c.id} ({'the signal filter' if c.select else 'all'})")
        except SourceError as exc:
            if isinstance(exc, Retriable):  # the connection: the capture retries
                raise
            return str(exc)
        out: dict[str | None, str] = {}
        for row in rows:
            out[dumps(codec.key_tuple(row))] = dumps(codec.row_tuple(row))
        return Chunk(codec.topic, out, None, False)

    def snapshot_events(self, c: BlockingCollection, rows: Sequence[tuple[int, str | None, str]],
                        order_prefix: tuple[int, ...], position: str, markers: Sequence[str]) -> list[StreamItem]:
        chunks = self.chunks
        codec = chunks.codec(chunks.table(SnapshotCollection(c.schema, c.table)))
        out: list[StreamItem] = []
        if codec.topic not in chunks.announced:
            out.append(codec.version)
            chunks.announced.add(codec.topic)
        if not rows:
            return out
        where = orjson.loads(position)
        now_ms = time.time_ns() // 1_000_000
        sources = {m: dumps(chunks.source.block(
            db=c.schema, table=c.table, ts_ms=now_ms, snapshot=m, server_id=int(where.get("server_id") or 0),
            gtid=None, file=str(where.get("file") or ""), pos=int(where.get("pos") or 0), row=0))
            for m in set(markers)}
        out.append(rows_block(codec.topic, rows, [sources[m] for m in markers], order_prefix, position,
                              codec.schema_id, chunks.headers))
        return out

    def pause_order_key(self, offset: Mapping[str, Any]) -> tuple[int, ...]:
        return (binlog_file_number(str(offset["file"])), int(offset["pos"]), _AFTER_EVENTS)


def _q(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"
