"""The initial snapshot: a consistent read of every captured table at one binlog position.

Steps (Debezium's, reference §4, §5), on the snapshot connection (and, from step 3b, a reader
process's connection that reads the tables column by column, `snapshot_columnar`):

1. ``snapshot.locking.mode`` ``minimal``/``extended``: ``FLUSH TABLES WITH READ LOCK`` (writers
   wait; DDL cannot change the tables while their structure is read). Without ``RELOAD``,
   Debezium falls back to ``FLUSH TABLES <captured> WITH READ LOCK``; ``none`` takes no lock.
2. ``SET TRANSACTION ISOLATION LEVEL REPEATABLE READ`` + ``START TRANSACTION WITH CONSISTENT
   SNAPSHOT``: the read view is opened while the lock is held (Debezium opens it lazily at the
   first SELECT, after the unlock, which can drift from the recorded position).
3. The binlog position of that read view. On MariaDB ``Binlog_snapshot_file`` /
   ``Binlog_snapshot_position`` are exactly the read view's position, with or without the lock.
   On MySQL, ``SHOW MASTER STATUS`` / ``SHOW BINARY LOG STATUS`` under the lock.
3b. Under the global read lock only: the reader connection (`snapshot_process`, connected before
   step 1) opens its own consistent snapshot; no write can commit meanwhile, so its read view
   is the same (MySQL cannot share one; mydumper's method). Its binlog position is checked
   against step 3's (MariaDB: its own ``Binlog_snapshot_*``), and the snapshot stops if they
   differ. Without that lock, or without a reader, step 6 reads on the snapshot connection.
4. The structure of every table (``SHOW CREATE TABLE``), recorded in the schema history.
5. ``UNLOCK TABLES`` (``minimal``; ``extended`` keeps the lock until the end).
6. Each captured table read in full (``SELECT``, unbuffered; by the reader of step 3b if it
   joined, else here by `SnapshotRowReader`) as ``op: r`` records, all at the position of
   step 3, with ``source.snapshot`` = ``first``, ``first_in_data_collection``, ``true``,
   ``last_in_data_collection``, ``last``.
7. ``COMMIT`` (the reader rolls back); the final checkpoint is the position of step 3.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Generator, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from cdc_sources.common.envelope import dumps, envelope_text
from cdc_sources.mysql.codec import TableCodec
from cdc_sources.mysql.envelope import SourceInfo
from cdc_sources.mysql.errors import classify, error_code
from cdc_sources.mysql.model import TableId
from cdc_sources.mysql.offset import MySqlOffset
from cdc_sources.mysql.offset import binlog_file_number as file_number
from cdc_sources.spi import ChangeRecord, Checkpoint, SnapshotProgress, StreamItem

log = logging.getLogger(__name__)

RUN_SIZE = 2048


@dataclass(frozen=True, slots=True)
class SnapshotPoint:
    """The binlog position a snapshot reads at."""

    file: str
    pos: int
    gtids: str = ""


@dataclass(frozen=True, slots=True)
class SnapshotTable:
    """One table to read: its codec and the SELECT that reads it (overrides applied)."""

    id: TableId
    codec: TableCodec
    select: str


def snapshot_marker(n: int, *, first_in_table: bool, last_in_table: bool, last: bool) -> str:
    """The ``source.snapshot`` value of the ``n``-th snapshot record (from 1).

    The very last record is ``last`` (also when it is the first: Debezium marks the last record
    it emits ``last`` when the snapshot completes), the very first ``first``; a table's first
    record is ``first_in_data_collection``, its last ``last_in_data_collection``; every other
    record ``true``. (A `cdc_sources.common.snapshot_blocks.MarkerRule`.)
    """
    if last:
        return "last"
    if n == 1:
        return "first"
    if first_in_table:
        return "first_in_data_collection"
    if last_in_table:
        return "last_in_data_collection"
    return "true"


@dataclass
class SnapshotRowReader:
    """Reads captured tables row by row inside the snapshot transaction and yields ``r`` records.

    Attributes:
        conn: the pymysql connection holding the consistent-snapshot transaction.
        cursor_factory: makes an unbuffered cursor on ``conn`` (pymysql ``SSCursor``).
        source: fixed ``source`` block parts.
        point: the snapshot position.
        offset: the offset of every snapshot record (``MySqlOffset.for_snapshot``).
        fetch_size: rows per fetch (``snapshot.fetch.size``).
        headers: context headers of every record.
        ts_ms: the snapshot's time (``source.ts_ms`` of every record).
    """

    conn: Any
    cursor_factory: Callable[[], Any]
    source: SourceInfo
    point: SnapshotPoint
    offset: dict[str, Any]
    fetch_size: int
    headers: dict[str, str] | None = None
    ts_ms: int = field(default_factory=lambda: time.time_ns() // 1_000_000)
    _sources: dict[tuple[str, str], str] = field(default_factory=dict, init=False)

    @property
    def order_prefix(self) -> tuple[int, int, int]:
        """Every snapshot record's order key but its last element (the record's number from 0)."""
        return (file_number(self.point.file), self.point.pos, 0)

    def read(self, tables: Sequence[SnapshotTable]) -> Iterator[StreamItem]:
        """Every row of every table, then nothing else (the session adds the final checkpoint)."""
        n = 0
        last = self.last_table_with_rows(tables)
        for t_index, table in enumerate(tables):
            yield table.codec.version
            rows = yield from self.read_table(table, t_index=t_index, tables=len(tables), first_index=n,
                                              last_table=t_index == last)
            n += rows
            yield SnapshotProgress(str(table.id), rows, t_index + 1, len(tables), table_done=True)

    def last_table_with_rows(self, tables: Sequence[SnapshotTable]) -> int | None:
        """The index of the last of ``tables`` that has a row in the snapshot's read view (None:
        every table is empty), so that the last row emitted is marked ``last`` when the tables
        after it are empty, as Debezium marks it. Asks from the end, one ``LIMIT 1`` read each."""
        for index in range(len(tables) - 1, -1, -1):
            cur = self.cursor_factory()
            try:
                cur.execute(f"SELECT 1 FROM ({tables[index].select}) AS snapshot_probe LIMIT 1")
                if cur.fetchall():
                    return index
            except Exception as exc:
                if error_code(exc) is None and not isinstance(exc, OSError):
                    raise
                raise classify(exc, where=f"snapshotting table {tables[index].id}") from None
            finally:
                cur.close()
        return None

    def read_table(self, table: SnapshotTable, *, t_index: int, tables: int, first_index: int,
                   last_table: bool) -> Generator[StreamItem, None, int]:
        """One table's records (runs of `RUN_SIZE`) and progress; returns its row count.

        Args:
            table: the table.
            t_index: its index among the snapshot's ``tables`` tables.
            first_index: the snapshot record number (from 0) of its first row.
            last_table: no later table has rows: the table's last row is the snapshot's last.
        """
        position = dumps(self.offset)
        prefix = self.order_prefix
        n = first_index
        rows = 0
        run: list[ChangeRecord] = []
        pending: tuple[Any, ...] | None = None
        for row in self._rows(table):
            if pending is not None:
                run.append(self._record(table.codec, pending, position, (*prefix, n),
                                        self._marker(n, rows == 0, False, False)))
                n += 1
                rows += 1
                if len(run) >= RUN_SIZE:
                    yield run
                    run = []
                    yield SnapshotProgress(str(table.id), rows, t_index, tables)
            pending = row
        if pending is not None:
            run.append(self._record(table.codec, pending, position, (*prefix, n),
                                    self._marker(n, rows == 0, True, last_table)))
            rows += 1
        if run:
            yield run
        return rows

    @staticmethod
    def _marker(n: int, first_in_table: bool, last_in_table: bool, last_table: bool) -> str:
        return snapshot_marker(n + 1, first_in_table=first_in_table, last_in_table=last_in_table,
                               last=last_in_table and last_table)

    def _rows(self, table: SnapshotTable) -> Iterator[tuple[Any, ...]]:
        cur = self.cursor_factory()
        try:
            cur.execute(table.select)
            while True:
                batch = cur.fetchmany(self.fetch_size)
                if not batch:
                    return
                yield from batch
        finally:
            cur.close()

    def source_block(self, codec: TableCodec, marker: str) -> dict[str, Any]:
        """The ``source`` block of a table's snapshot records with one marker."""
        return self.source.block(db=codec.table.id.database, table=codec.table.id.table, ts_ms=self.ts_ms,
                                 snapshot=marker, server_id=0, gtid=None, file=self.point.file,
                                 pos=self.point.pos, row=0)

    def _record(self, codec: TableCodec, row: tuple[Any, ...], position: str, order: tuple[int, ...],
                marker: str) -> ChangeRecord:
        source = self._sources.get((codec.topic, marker))
        if source is None:
            source = dumps(self.source_block(codec, marker))
            self._sources[(codec.topic, marker)] = source
        key = codec.key_tuple(row)
        value = envelope_text("null", dumps(codec.row_tuple(row)), source, "r", "null")
        return ChangeRecord(codec.topic, None if key is None else dumps(key), value, "r", position, order,
                            codec.schema_id, self.headers)


def snapshot_complete_checkpoint(point: SnapshotPoint) -> Checkpoint:
    """The checkpoint after the last snapshot record: streaming resumes at the snapshot position."""
    return Checkpoint(MySqlOffset(point.file, point.pos, point.gtids or None))
