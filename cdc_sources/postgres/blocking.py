"""PostgreSQL's side of blocking snapshots (`cdc_sources.common.blocking_snapshot`).

A table is read with ``SELECT <every column>::text FROM <table> AS t`` (or from the signal's
``SELECT`` as a derived table) on the session's autocommit connection, and rendered with the
snapshot codec, as the incremental snapshot's chunks are (`cdc_sources.postgres.incremental`).
The pause key is ``(L, 0, 2^62)``, L the checkpoint's LSN (the end of the last commit, or a
keepalive's position): a transaction's records have order keys ``(commit LSN, event LSN, n)``,
its commit LSN below the end of its commit, and every later transaction commits at or after
L, its changes at LSNs above 0; a snapshot read at L has keys ``(L, 0, n)``.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any

import orjson

from cdc_sources.common.blocking_snapshot import BlockingCollection, row_source, rows_block
from cdc_sources.common.incremental_snapshot import Chunk
from cdc_sources.common.incremental_state import SnapshotCollection
from cdc_sources.postgres.envelope import sequence
from cdc_sources.postgres.errors import classify
from cdc_sources.postgres.incremental import PostgresChunkSource
from cdc_sources.spi import Retriable, StreamItem

__all__ = ["PostgresBlockingSource"]

_AFTER_EVENTS = 1 << 62


class PostgresBlockingSource:
    """Implements `cdc_sources.common.blocking_snapshot.BlockingSource` over the incremental
    snapshot's chunk source (its connection, tables, codecs and announced schemas)."""

    def __init__(self, chunks: PostgresChunkSource) -> None:
        self.chunks = chunks

    def read_table(self, c: BlockingCollection) -> Chunk | str:
        import psycopg

        info = self.chunks.tables.get((c.schema, c.table))
        if info is None:
            return "not a captured table"
        if not info.primary_key:
            return "no primary key (blocking snapshots read tables with one)"
        codec = self.chunks.codec(SnapshotCollection(c.schema, c.table))
        cols = ", ".join(f"t.{_q(col.name)}::text" for col in info.columns)
        try:
            rows = self.chunks.conn.execute(
                f"SELECT {cols} FROM {row_source(c, f'{_q(info.schema)}.{_q(info.name)}')}").fetchall()
        except psycopg.Error as exc:
            error = classify(exc, where=f"reading the rows of {c.id} ({'the signal filter' if c.select else 'all'})")
            if isinstance(error, Retriable):  # the connection: the capture retries
                raise error from None
            return str(error)
        render_key, render_row = codec.render_key, codec.render_row
        assert render_key is not None  # a table with a primary key
        return Chunk(codec.topic, {render_key(v): render_row(v, None) for v in rows}, None, False)

    def snapshot_events(self, c: BlockingCollection, rows: Sequence[tuple[int, str | None, str]],
                        order_prefix: tuple[int, ...], position: str, markers: Sequence[str]) -> list[StreamItem]:
        chunks = self.chunks
        codec = chunks.codec(SnapshotCollection(c.schema, c.table))
        out: list[StreamItem] = []
        if codec.topic not in chunks.announced:
            out.append(codec.version)
            chunks.announced.add(codec.topic)
        if not rows:
            return out
        where = orjson.loads(position)
        lsn, commit = int(where["lsn"]), where.get("lsn_commit")
        now_us = time.time_ns() // 1000
        sources = {m: orjson.dumps(chunks.source.block(
            schema=codec.schema, table=codec.table, ts_us=now_us, snapshot=m, tx_id=None, lsn=lsn,
            sequence=sequence(commit, lsn))).decode() for m in set(markers)}
        out.append(rows_block(codec.topic, rows, [sources[m] for m in markers], order_prefix, position,
                              codec.schema_id, chunks.headers))
        return out

    def pause_order_key(self, offset: Mapping[str, Any]) -> tuple[int, ...]:
        return (int(offset["lsn"]), 0, _AFTER_EVENTS)


def _q(ident: str) -> str:
    return '"' + ident.replace('"', '""') + '"'
