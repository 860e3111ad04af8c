"""PostgreSQL's side of incremental snapshots (`cdc_sources.common.incremental_snapshot`).

Chunks are read with ``SELECT <every column>::text ... WHERE (key) > (last) AND (key) <= (max)
AND (condition) ORDER BY key LIMIT n + 1`` on the session's autocommit connection (the text
output is what pgoutput sends, so the snapshot codec renders the rows exactly as streamed
rows); watermarks are inserted into the signal table as ``(id, type, NULL)``. The events'
``source`` block says ``snapshot: "incremental"``, its ``lsn`` the close watermark's.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import orjson

from cdc_sources.common.envelope import envelope_text
from cdc_sources.common.incremental_snapshot import (
    Chunk,
    Key,
    chunk_where,
    emission_order,
    event_key,
    keyless_id,
    open_after_lookup,
)
from cdc_sources.common.incremental_state import SnapshotCollection
from cdc_sources.postgres.catalog import TableInfo
from cdc_sources.postgres.envelope import SourceInfo, sequence
from cdc_sources.postgres.schema import TableCodec
from cdc_sources.spi import ChangeRecord, StreamItem

__all__ = ["PostgresChunkSource"]


class PostgresChunkSource:
    """Implements `cdc_sources.common.incremental_snapshot.ChunkSource` for PostgreSQL.

    Args:
        conn: an autocommit psycopg connection.
        tables: the captured tables.
        codec_for: the snapshot codec of a captured table.
        source: the fixed parts of the ``source`` block.
        signal_table: the signal table's ``(schema, table)``.
        headers: the records' Debezium headers.
    """

    def __init__(self, *, conn: Any, tables: Sequence[TableInfo], codec_for: Callable[[TableInfo], TableCodec],
                 source: SourceInfo, signal_table: tuple[str, str] | None,
                 headers: Mapping[str, str] | None = None) -> None:
        self.conn = conn
        self.tables = {(t.schema, t.name): t for t in tables}
        self.codec_for = codec_for
        self.source = source
        self.headers = headers
        self._signal_sql = _qualified(*signal_table) if signal_table else None
        self._signal_id: str | None = None  # the signal table's id column, quoted
        self._codecs: dict[tuple[str, str], TableCodec] = {}
        self.announced: set[str] = set()
        """Topics whose `SchemaVersion` was emitted (shared with the blocking snapshot's source)."""

    def _info(self, c: SnapshotCollection) -> TableInfo:
        return self.tables[(c.schema, c.table)]

    def codec(self, c: SnapshotCollection) -> TableCodec:
        """The snapshot codec of a captured table (made once)."""
        codec = self._codecs.get((c.schema, c.table))
        if codec is None:
            codec = self._codecs[(c.schema, c.table)] = self.codec_for(self._info(c))
        return codec

    def chunk_key(self, c: SnapshotCollection) -> tuple[str, ...] | str:
        info = self._info(c)
        names = [col.name for col in info.columns]
        if c.surrogate_key:
            return (c.surrogate_key,) if c.surrogate_key in names else f"no column {c.surrogate_key!r} (surrogate-key)"
        return tuple(info.primary_key) if info.primary_key else "no primary key (give a surrogate-key)"

    def max_key(self, c: SnapshotCollection, key: Sequence[str]) -> Key | None:
        info = self._info(c)
        cols = ", ".join(f"{_q(k)}::text" for k in key)
        where = f" WHERE ({c.condition})" if c.condition else ""
        order = ", ".join(f"t.{_q(k)} DESC" for k in key)  # t.: not the text output columns
        row = self.conn.execute(f"SELECT {cols} FROM {_qualified(info.schema, info.name)} AS t{where} "
                                f"ORDER BY {order} LIMIT 1").fetchone()
        return None if row is None else tuple(row)

    def read_chunk(self, c: SnapshotCollection, key: Sequence[str], after: Key | None, upto: Key | None,
                   size: int | None) -> Chunk:
        info = self._info(c)
        types = self._key_types(info, key)
        cols = ", ".join(f"{_q(col.name)}::text" for col in info.columns)
        tuple_sql = "(" + ", ".join(f"t.{_q(k)}" for k in key) + ")"
        params_sql = "(" + ", ".join(f"%s::{t}" for t in types) + ")"
        where, params = chunk_where(tuple_sql, params_sql, after, upto, c.condition)
        sql = (f"SELECT {cols} FROM {_qualified(info.schema, info.name)} AS t{where}"
               + " ORDER BY " + ", ".join(f"t.{_q(k)}" for k in key)
               + ("" if size is None else f" LIMIT {size + 1}"))
        rows = self.conn.execute(sql, params).fetchall()
        more = size is not None and len(rows) > size
        rows = rows[:size]
        codec = self.codec(c)
        render_key, render_row = codec.render_key, codec.render_row
        names = [col.name for col in info.columns]
        index = [names.index(k) for k in key]
        return Chunk(codec.topic, {render_key(v) if render_key else keyless_id([v[i] for i in index]):
                                   render_row(v, None) for v in rows},
                     tuple(rows[-1][i] for i in index) if rows else None, more)

    def read_events(self, c: SnapshotCollection, chunk: Chunk, order_key: tuple[int, ...],
                    position: str) -> list[StreamItem]:
        codec = self.codec(c)
        out: list[StreamItem] = []
        if codec.topic not in self.announced:
            out.append(codec.version)
            self.announced.add(codec.topic)
        if not chunk.rows:
            return out
        # a read-only snapshot's rows follow (high watermark, 0, 0): their lsn is the watermark's
        lsn = order_key[1] if len(order_key) > 1 and order_key[1] else order_key[0]
        commit = orjson.loads(position).get("lsn_commit")
        now_us = time.time_ns() // 1000
        source = orjson.dumps(self.source.block(schema=codec.schema, table=codec.table, ts_us=now_us,
                                                snapshot="incremental", tx_id=None, lsn=lsn,
                                                sequence=sequence(commit, lsn))).decode()
        out.append([ChangeRecord(codec.topic, event_key(key), envelope_text("null", after, source, "r", "null"), "r",
                                 position, (*order_key, h), codec.schema_id, self.headers)
                    for h, key, after in emission_order(chunk.rows)])
        return out

    def insert_watermark(self, window_id: str, *, opens: bool, data: str | None = None) -> None:
        kind = "snapshot-window-open" if opens else "snapshot-window-close"
        self.conn.execute(f"INSERT INTO {self._signal_sql} VALUES (%s, %s, %s)",
                          (f"{window_id}-{'open' if opens else 'close'}", kind, data))

    def open_watermark(self, window_id: str) -> dict[str, str | None]:
        return open_after_lookup(self, window_id)

    def delete_watermark(self, window_id: str) -> None:
        if self._signal_id is None:  # the first column is the id (Debezium reads the columns by position)
            with self.conn.cursor() as cur:
                cur.execute(f"SELECT * FROM {self._signal_sql} LIMIT 0")
                self._signal_id = _q(str(cur.description[0].name))
        self.conn.execute(f"DELETE FROM {self._signal_sql} WHERE {self._signal_id} = %s", (f"{window_id}-open",))

    def watermarks_present(self, window_id: str) -> dict[str, str | None]:
        """The window's watermarks in the signal table: id -> data."""
        rows = self.conn.execute(
            f"SELECT s.id, s.data::text FROM (SELECT * FROM {self._signal_sql}) AS s(id, type, data) "
            "WHERE s.id IN (%s, %s)", (f"{window_id}-open", f"{window_id}-close")).fetchall()
        return {str(r[0]): r[1] for r in rows}

    def _key_types(self, info: TableInfo, keys: Sequence[str]) -> list[str]:
        rows = self.conn.execute(
            "SELECT attname, format_type(atttypid, atttypmod) FROM pg_attribute WHERE attrelid = %s AND attnum > 0",
            (info.oid,)).fetchall()
        by_name = dict(rows)
        return [str(by_name[k]) for k in keys]


def _q(ident: str) -> str:
    return '"' + ident.replace('"', '""') + '"'


def _qualified(schema: str, table: str) -> str:
    return f"{_q(schema)}.{_q(table)}"
