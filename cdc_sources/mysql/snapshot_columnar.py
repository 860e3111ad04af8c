"""Reads the snapshot's tables as ``r`` records, a column at a time when a reader process can.

When a `snapshot_process.SnapshotWorker` has joined the snapshot's read view (it opened its own
``START TRANSACTION WITH CONSISTENT SNAPSHOT`` under the global read lock, see
`snapshot_prepare`), every table is read by that worker: its rows arrive as raw column batches
and leave as `ChangeBlock`s (`snapshot_blocks`). Without one (no ``mysql-connector-python``,
no global read lock, TLS), `snapshot.SnapshotRowReader` reads the tables row by row on the
snapshot connection.

Either way the records are the same: keys, values (processing-time ``ts_*`` aside), positions,
order keys ``(binlog file number, position, 0, n)`` with ``n`` counting the snapshot's records
from 0, ``source.snapshot`` markers (`snapshot.snapshot_marker`, which needs a one-batch
look-ahead), schema versions before each table's records, and `SnapshotProgress` at every
multiple of `snapshot.RUN_SIZE` rows below a table's total, then once when it is done.
"""

from __future__ import annotations

from collections.abc import Generator, Iterator, Sequence

from cdc_sources.common.snapshot_blocks import segments
from cdc_sources.mysql.converters import MySqlConverterSettings
from cdc_sources.mysql.snapshot import RUN_SIZE, SnapshotRowReader, SnapshotTable, snapshot_marker
from cdc_sources.mysql.snapshot_blocks import TableBlocks
from cdc_sources.mysql.snapshot_process import BLOCK_BYTES, BLOCK_ROWS, RawBatch, SnapshotWorker
from cdc_sources.spi import SnapshotProgress, StreamItem


class MySqlColumnarSnapshotReader:
    """Reads every captured table of a snapshot. Not thread-safe.

    Args:
        rows: the row reader on the snapshot connection; also what every record shares.
        worker: a reader process inside the same read view, or None (row by row).
        settings: the converter settings.
        block_rows / block_bytes: the size of the worker's batches.
    """

    def __init__(self, rows: SnapshotRowReader, worker: SnapshotWorker | None, settings: MySqlConverterSettings,
                 *, block_rows: int = BLOCK_ROWS, block_bytes: int = BLOCK_BYTES) -> None:
        self.rows = rows
        self.worker = worker
        self.settings = settings
        self.block_rows = block_rows
        self.block_bytes = block_bytes

    def read(self, tables: Sequence[SnapshotTable]) -> Iterator[StreamItem]:
        """Yield schema versions, records and progress for ``tables``, in order (the session adds
        the final checkpoint)."""
        n = 0
        total = len(tables)
        last_data = self.rows.last_table_with_rows(tables)
        for t_index, table in enumerate(tables):
            yield table.codec.version
            last = t_index == last_data
            if self.worker is None:
                rows = yield from self.rows.read_table(table, t_index=t_index, tables=total, first_index=n,
                                                       last_table=last)
            else:
                rows = yield from self._table(self.worker, table, t_index=t_index, tables=total, first_index=n,
                                              last_table=last)
            n += rows
            yield SnapshotProgress(str(table.id), rows, t_index + 1, total, table_done=True)

    def _table(self, worker: SnapshotWorker, table: SnapshotTable, *, t_index: int, tables: int,
               first_index: int, last_table: bool) -> Generator[StreamItem, None, int]:
        """One table's blocks and progress, read by the worker; returns its row count."""
        render: TableBlocks | None = None
        pending: RawBatch | None = None
        rows = 0
        for batch in worker.read(str(table.id), table.select, block_rows=self.block_rows,
                                 block_bytes=self.block_bytes):
            if batch.rows == 0:
                continue
            if render is None:
                render = TableBlocks(table.codec, batch.columns, self.settings, self.rows)
            if pending is not None:
                yield from self._emit(render, pending, first_index + rows, rows, table_end=False, last_table=last_table)
                yield from _progress(table, rows, rows + pending.rows, t_index, tables, final=False)
                rows += pending.rows
            pending = batch
        if pending is not None and render is not None:
            yield from self._emit(render, pending, first_index + rows, rows, table_end=True, last_table=last_table)
            yield from _progress(table, rows, rows + pending.rows, t_index, tables, final=True)
            rows += pending.rows
        return rows

    @staticmethod
    def _emit(render: TableBlocks, batch: RawBatch, first_index: int, table_row: int, *, table_end: bool,
              last_table: bool) -> Iterator[StreamItem]:
        parts = segments(batch.rows, table_row=table_row, first_n=first_index + 1, table_end=table_end,
                         last_table=last_table, marker=snapshot_marker)
        yield from render.blocks(batch, first_index, parts)


def _progress(table: SnapshotTable, before: int, after: int, t_index: int, tables: int, *,
              final: bool) -> Iterator[StreamItem]:
    """Progress at every multiple of `RUN_SIZE` rows in ``(before, after]`` (below ``after`` when the
    batch ends the table), as the row reader reports it."""
    first = before // RUN_SIZE * RUN_SIZE + RUN_SIZE
    stop = after if final else after + 1
    for rows in range(first, stop, RUN_SIZE):
        yield SnapshotProgress(str(table.id), rows, t_index, tables)
