"""Reads captured tables as ``r`` records, a column at a time, inside one exported snapshot.

For each table the rows arrive as Arrow batches of PostgreSQL texts from a ``COPY ... (FORMAT
csv)`` run by a worker process for large tables (`copy_process`), in-process for small ones
(`copy_source`), and leave as `ChangeBlock`s (`snapshot_blocks`) whose keys, values and
positions are exactly the records Debezium's snapshot emits. ``source.snapshot`` follows Debezium: ``first`` for the
very first row, ``first_in_data_collection`` / ``last_in_data_collection`` at table boundaries,
``last`` for the very last row and ``true`` otherwise, which needs a one-batch look-ahead.
"""

from __future__ import annotations

import time
from collections.abc import Generator, Iterator, Mapping, Sequence
from contextlib import closing
from dataclasses import dataclass
from typing import Any

from cdc_sources.postgres.config import ConnectionSettings
from cdc_sources.postgres.converters import ConverterSettings
from cdc_sources.postgres.copy_process import WorkerCopy
from cdc_sources.postgres.copy_source import CopyRequest, copy_in_process
from cdc_sources.postgres.envelope import SourceInfo
from cdc_sources.postgres.schema import TableCodec
from cdc_sources.postgres.snapshot_blocks import SnapshotRun, TableBlocks, segments
from cdc_sources.spi import SnapshotProgress, StreamItem

PROGRESS_EVERY = 10_000
"""A progress item is yielded each time a table's row count passes a multiple of this."""

WORKER_MIN_BYTES = 16 << 20
"""Tables whose relations take at least this much disk are copied by a worker process."""

_SIZE_SQL = """
WITH RECURSIVE tree(relid) AS (
    SELECT %s::oid UNION ALL SELECT i.inhrelid FROM pg_inherits i JOIN tree t ON i.inhparent = t.relid)
SELECT coalesce(sum(pg_relation_size(relid)), 0) FROM tree
"""


@dataclass(frozen=True)
class SnapshotTable:
    """One table to snapshot.

    Attributes:
        codec: its codec; ``select`` reads ``codec.columns`` in order.
        select: the SELECT that reads it.
        oid: the table's oid, to estimate its size (None: treat it as small).
    """

    codec: TableCodec
    select: str
    oid: int | None = None


class PostgresColumnarSnapshotReader:
    """Reads every table of a snapshot whose transaction is open on ``conn``.

    Args:
        conn: a psycopg 3 connection inside the snapshot transaction (small tables, sizes).
        connection: how the copy workers connect.
        snapshot_name: the exported snapshot the workers import (its exporting replication
            connection must stay idle until `read` is done); None: no workers.
        settings: the converter settings.
        source / lsn / tx_id / slot / headers: as every record reports them.
        worker_min_bytes: tables at least this large are copied by a worker process.
    """

    def __init__(self, *, conn: Any, connection: ConnectionSettings, snapshot_name: str | None,
                 settings: ConverterSettings,
                 source: SourceInfo, lsn: int, tx_id: int | None, slot: str,
                 headers: Mapping[str, str] | None = None, worker_min_bytes: int = WORKER_MIN_BYTES) -> None:
        self.conn = conn
        self.connection = connection
        self.snapshot_name = snapshot_name
        self.settings = settings
        self.worker_min_bytes = worker_min_bytes
        self.run = SnapshotRun(source, lsn, tx_id, time.time_ns() // 1000, slot, headers)
        self._n = 0

    def read(self, tables: Sequence[SnapshotTable]) -> Iterator[StreamItem]:
        """Yield schema versions, blocks of ``r`` records and progress for ``tables``, in order."""
        total = len(tables)
        for done, table in enumerate(tables):
            yield table.codec.version
            rows = yield from self._table(table, last_table=done == total - 1, progress=(done, total))
            yield SnapshotProgress(table.codec.version.table, rows, done + 1, total, table_done=True)

    def _table(self, table: SnapshotTable, *, last_table: bool,
               progress: tuple[int, int]) -> Generator[StreamItem, None, int]:
        """Yield one table's blocks (and progress); returns its row count."""
        wanted = sorted({f.index for f in (*table.codec.fields, *table.codec.key_fields)})
        request = CopyRequest(table.codec.version.table, table.select, len(table.codec.columns), wanted)
        rows = 0
        pending: Any = None
        with closing(self._source(table, request)) as source:  # a worker starts now, while we prepare
            render = TableBlocks(table.codec, self.settings, self.run)
            for batch in source:
                if batch.num_rows == 0:
                    continue
                if pending is not None:
                    yield from self._emit(render, pending, rows, table_end=False, last_table=last_table)
                    yield from _progress(table, rows, rows + pending.num_rows, progress)
                    rows += pending.num_rows
                pending = batch
        if pending is not None:
            yield from self._emit(render, pending, rows, table_end=True, last_table=last_table)
            yield from _progress(table, rows, rows + pending.num_rows, progress)
            rows += pending.num_rows
        return rows

    def _emit(self, render: TableBlocks, batch: Any, table_row: int, *, table_end: bool,
              last_table: bool) -> Iterator[StreamItem]:
        n = batch.num_rows
        parts = segments(n, table_row=table_row, first_n=self._n + 1, table_end=table_end, last_table=last_table)
        yield from render.blocks(batch, n, self._n + 1, parts)
        self._n += n

    def _source(self, table: SnapshotTable, request: CopyRequest) -> WorkerCopy | Generator[Any, None, None]:
        """Where the table's batches come from: a worker for a large table, else this process."""
        big = table.oid is not None and self._size(table.oid) >= self.worker_min_bytes
        if big and request.columns and self.snapshot_name:
            return WorkerCopy(self.connection, self.snapshot_name, request)
        return copy_in_process(self.conn, request)

    def _size(self, oid: int) -> int:
        """Bytes on disk of a table and its partitions or children."""
        return int(self.conn.execute(_SIZE_SQL, (oid,)).fetchone()[0])


def _progress(table: SnapshotTable, before: int, after: int, progress: tuple[int, int]) -> Iterator[StreamItem]:
    """Progress at every multiple of `PROGRESS_EVERY` rows in ``(before, after]``."""
    first = before // PROGRESS_EVERY * PROGRESS_EVERY + PROGRESS_EVERY
    for rows in range(first, after + 1, PROGRESS_EVERY):
        yield SnapshotProgress(table.codec.version.table, rows, *progress)
