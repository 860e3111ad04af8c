"""Reads captured tables as ``r`` records, a column at a time, inside one exported snapshot.

For each table the rows arrive as Arrow batches of PostgreSQL texts from a ``COPY ... (FORMAT
csv)`` run by a worker process for large tables (`copy_process`), in-process for small ones
(`copy_source`), and leave as `ChangeBlock`s (`snapshot_blocks`) whose keys, values and
positions are exactly the records Debezium's snapshot emits. ``source.snapshot`` follows Debezium: ``first`` for the
very first row, ``first_in_data_collection`` / ``last_in_data_collection`` at table boundaries,
``last`` for the very last row and ``true`` otherwise, which needs a one-batch look-ahead; a
table's final batch also waits until a later table shows rows, so that when the tables after it
are empty its last row is the snapshot's ``last``, as Debezium marks it (`snapshot_order`).

With ``snapshot.max.threads`` > 1 up to that many tables are copied at once (`snapshot_feeds`)
and their blocks leave interleaved, each table's rows in order: ``first`` marks the first row
emitted, ``last`` the very last row emitted, ``last_in_data_collection`` the final row of every
other table (`snapshot_order` decides how long a batch waits for that). Tables copied
in-process share the snapshot connection, so only one of them is open at a time.
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
from cdc_sources.postgres.snapshot_feeds import TableFeeds
from cdc_sources.postgres.snapshot_order import EmissionOrder, Release
from cdc_sources.spi import SnapshotProgress, StreamItem

PROGRESS_EVERY = 10_000
"""A progress item is yielded each time a table's row count passes a multiple of this."""

WORKER_MIN_BYTES = 16 << 20
"""Tables whose relations take at least this much disk are copied by a worker process."""

_CANCEL_WAIT_S = 5.0
"""How long cancelling a COPY stuck on the snapshot connection may take (error paths only)."""

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
        worker_min_bytes: tables at least this large are copied by a worker process
            (default `WORKER_MIN_BYTES`).
        max_threads: how many tables are copied at once (``snapshot.max.threads``).
    """

    def __init__(self, *, conn: Any, connection: ConnectionSettings, snapshot_name: str | None,
                 settings: ConverterSettings,
                 source: SourceInfo, lsn: int, tx_id: int | None, slot: str,
                 headers: Mapping[str, str] | None = None, worker_min_bytes: int | None = None,
                 max_threads: int = 1) -> None:
        self.conn = conn
        self.connection = connection
        self.snapshot_name = snapshot_name
        self.settings = settings
        self.worker_min_bytes = WORKER_MIN_BYTES if worker_min_bytes is None else worker_min_bytes
        self.max_threads = max_threads
        self.run = SnapshotRun(source, lsn, tx_id, time.time_ns() // 1000, slot, headers)
        self._n = 0

    def read(self, tables: Sequence[SnapshotTable]) -> Iterator[StreamItem]:
        """Yield schema versions, blocks of ``r`` records and progress for ``tables``, in order
        (interleaved with ``max_threads`` > 1)."""
        if self.max_threads > 1 and len(tables) > 1:
            yield from self._read_parallel(tables)
            return
        total = len(tables)
        order = EmissionOrder(in_table_order=True)  # a table's final batch waits for a later table's rows
        renders: dict[int, TableBlocks] = {}
        rows = [0] * total
        done = 0
        for index, table in enumerate(tables):
            yield table.codec.version
            request = self._request(table)
            with closing(self._source(table, request)) as source:  # a worker starts now, while we prepare
                renders[index] = TableBlocks(table.codec, self.settings, self.run)
                for batch in source:
                    if batch.num_rows == 0:
                        continue
                    for release in order.batch(index, batch):
                        yield from self._release(tables, renders, rows, release, (done, total))
                        done += release.table_end
            for release in order.end(index):
                yield from self._release(tables, renders, rows, release, (done, total))
                done += release.table_end
        for release in order.finish():
            yield from self._release(tables, renders, rows, release, (done, total))
            done += release.table_end

    def _read_parallel(self, tables: Sequence[SnapshotTable]) -> Iterator[StreamItem]:
        """Copy up to `max_threads` tables at once (`snapshot_feeds`); emit their batches as they
        arrive, held back only as long as their markers need (`snapshot_order`)."""
        total = len(tables)
        requests = [self._request(t) for t in tables]
        workers = [self._uses_worker(t, r) for t, r in zip(tables, requests, strict=True)]  # conn is free now
        order = EmissionOrder()
        renders: dict[int, TableBlocks] = {}
        rows = [0] * total
        started = ended = done = 0
        in_process: int | None = None  # the table being copied on the snapshot connection
        with closing(TableFeeds(capacity=2 * self.max_threads, interrupt=self._cancel_copy)) as feeds:
            while ended < total:
                while started < total and feeds.open < self.max_threads and (
                        workers[started] or in_process is None):
                    table = tables[started]
                    yield table.codec.version
                    renders[started] = TableBlocks(table.codec, self.settings, self.run)
                    if workers[started]:
                        assert self.snapshot_name is not None
                        feeds.start(started, WorkerCopy(self.connection, self.snapshot_name, requests[started]))
                    else:
                        in_process = started
                        feeds.start(started, copy_in_process(self.conn, requests[started]))
                    started += 1
                index, batch = feeds.next()
                if batch is None:
                    ended += 1
                    in_process = None if in_process == index else in_process
                    releases = order.end(index)
                elif batch.num_rows:
                    releases = order.batch(index, batch)
                else:
                    continue
                for release in releases:
                    yield from self._release(tables, renders, rows, release, (done, total))
                    done += release.table_end
            for release in order.finish():
                yield from self._release(tables, renders, rows, release, (done, total))

    def _release(self, tables: Sequence[SnapshotTable], renders: dict[int, TableBlocks], rows: list[int],
                 release: Release, progress: tuple[int, int]) -> Iterator[StreamItem]:
        """Emit a released batch of a table read in parallel, and its progress (``rows`` counts
        each table's emitted rows; ``progress`` is ``(tables done, total)``)."""
        i = release.table
        table = tables[i]
        if release.batch is not None:
            before = rows[i]
            rows[i] += release.batch.num_rows
            yield from self._emit(renders[i], release.batch, before, table_end=release.table_end,
                                  last_table=release.last)
            yield from _progress(table, before, rows[i], progress)
        if release.table_end:
            del renders[i]
            yield SnapshotProgress(table.codec.version.table, rows[i], progress[0] + 1, progress[1], table_done=True)

    def _cancel_copy(self) -> None:
        """Cancel the COPY running on the snapshot connection (a feed that does not stop)."""
        self.conn.cancel_safe(timeout=_CANCEL_WAIT_S)

    def _request(self, table: SnapshotTable) -> CopyRequest:
        wanted = sorted({f.index for f in (*table.codec.fields, *table.codec.key_fields)})
        return CopyRequest(table.codec.version.table, table.select, len(table.codec.columns), wanted)

    def _uses_worker(self, table: SnapshotTable, request: CopyRequest) -> bool:
        """Whether a worker process copies the table (large enough, with columns, workers possible)."""
        return (table.oid is not None and bool(request.columns) and self.snapshot_name is not None
                and self._size(table.oid) >= self.worker_min_bytes)

    def _emit(self, render: TableBlocks, batch: Any, table_row: int, *, table_end: bool,
              last_table: bool) -> Iterator[StreamItem]:
        n = batch.num_rows
        parts = segments(n, table_row=table_row, first_n=self._n + 1, table_end=table_end, last_table=last_table)
        yield from render.blocks(batch, n, self._n + 1, parts)
        self._n += n

    def _source(self, table: SnapshotTable, request: CopyRequest) -> WorkerCopy | Generator[Any, None, None]:
        """Where the table's batches come from: a worker for a large table, else this process."""
        if self._uses_worker(table, request):
            assert self.snapshot_name is not None
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
