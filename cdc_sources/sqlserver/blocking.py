"""SQL Server's side of blocking snapshots (`cdc_sources.common.blocking_snapshot`).

A table is read with ``SELECT t.<captured columns> FROM [schema].[table] AS t`` (its rows
matching the signal's condition, or the signal's full ``SELECT`` as a derived table) on the
incremental snapshot's connection, and rendered by the table's column policy, as the initial
snapshot renders it. The events' ``source`` has the pause point's ``commit_lsn`` and the
snapshot markers. The pause key is ``(commit LSN, 2^63 - 1)`` of the checkpoint's offset: a
transaction's records have order keys ``(commit LSN, change LSN, serial, index)`` with change
LSNs below that, and every later transaction commits at a higher LSN.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any

import orjson

from cdc_sources.common.blocking_snapshot import BlockingCollection, rows_block
from cdc_sources.common.envelope import dumps
from cdc_sources.common.incremental_snapshot import Chunk
from cdc_sources.spi import StreamItem
from cdc_sources.sqlserver import catalogue
from cdc_sources.sqlserver.incremental import SqlServerChunkSource
from cdc_sources.sqlserver.lsn import Lsn
from cdc_sources.sqlserver.source_info import SnapshotRecord, SqlServerSource

__all__ = ["SqlServerBlockingSource"]

_AFTER_CHANGES = 2**63 - 1


class SqlServerBlockingSource:
    """Implements `cdc_sources.common.blocking_snapshot.BlockingSource` over the incremental
    snapshot's chunk source (its connection and tables)."""

    def __init__(self, chunks: SqlServerChunkSource) -> None:
        self.chunks = chunks

    def read_table(self, c: BlockingCollection) -> Chunk | str:
        import pyodbc

        t = self.chunks.tables().get((c.schema, c.table))
        if t is None:
            return "not a captured table"
        if not t.instance.key_columns:
            return "no primary key (blocking snapshots read tables with one)"
        try:
            rows = self.chunks.gateway.rows(catalogue.blocking_select(c.schema, c.table, t.instance.columns,
                                                                      c.select))
        except pyodbc.ProgrammingError as exc:  # the signal's SELECT or condition
            return f"reading the rows of {c.id} ({'the signal filter' if c.select else 'all'}): {exc}"
        return Chunk(t.topic, {dumps(t.fields.key(t.instance.key_of(row))): dumps(t.fields.row(row)) for row in rows},
                     None, False)

    def snapshot_events(self, c: BlockingCollection, rows: Sequence[tuple[int, str | None, str]],
                        order_prefix: tuple[int, ...], position: str, markers: Sequence[str]) -> list[StreamItem]:
        if not rows:
            return []
        t = self.chunks.tables()[(c.schema, c.table)]
        commit = Lsn.parse(orjson.loads(position).get("commit_lsn"))
        now = time.time_ns()
        sources = {m: dumps(SqlServerSource(self.chunks.name, now, self.chunks.database, c.schema, c.table, commit,
                                            snapshot=SnapshotRecord(m)).payload()) for m in set(markers)}
        return [rows_block(t.topic, rows, [sources[m] for m in markers], order_prefix, position,
                           t.version.schema_id, None)]

    def pause_order_key(self, offset: Mapping[str, Any]) -> tuple[int, ...]:
        return (*Lsn.parse(offset.get("commit_lsn")).halves(), _AFTER_CHANGES)
