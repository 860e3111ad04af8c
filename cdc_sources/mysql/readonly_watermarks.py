"""MariaDB's watermarks for read-only incremental snapshots (`cdc_sources.common.readonly_watermarks`).

Each chunk is read inside ``START TRANSACTION WITH CONSISTENT SNAPSHOT, READ ONLY`` (REPEATABLE READ,
whatever the server's default isolation level). MariaDB makes
that snapshot consistent with the binlog and reports the binlog position it corresponds to
(status ``Binlog_snapshot_file`` / ``Binlog_snapshot_position``): every transaction written to
the binlog before that position is visible to the chunk's SELECT, none after it is. That one
position is both watermarks (as ``binlog file number * BINLOG_FILE_FACTOR + pos``, the binlog
`commit_mark`): the window opens and closes at the first streamed transaction starting at or
after it, or at a checkpoint there (an idle stream), and the chunk's rows are written there.
Nothing is written to the server: the statements are a read-only transaction, ``SHOW STATUS``
and the chunk's SELECT, which need only SELECT on the table.

Debezium's MariaDB connector takes ``gtid_binlog_pos`` before and after the chunk instead;
MariaDB advances it when a transaction is written to the binlog, before the storage engine
commits it, so a transaction can be inside that low watermark and still invisible to the
chunk's SELECT (its change would then be overwritten by the chunk's older row). The snapshot's
own position has no such gap, and needs no GTIDs.
"""

from __future__ import annotations

import orjson

from cdc_sources.mysql.incremental import MySqlChunkSource
from cdc_sources.spi import BINLOG_FILE_FACTOR, SourceError, commit_mark

__all__ = ["MariaDbWatermarks", "binlog_mark", "binlog_name"]


def binlog_mark(file: str, pos: int) -> int:
    """A binlog position as one integer (`cdc_sources.spi.commit_mark`'s encoding)."""
    mark = commit_mark({"file": file, "pos": pos})
    if mark is None:
        raise ValueError(f"binlog file name {file!r} has no numeric extension (like mysql-bin.000042)")
    return mark


def binlog_name(like: str, number: int) -> str:
    """The name of binlog file ``number`` in the binlog ``like`` (any file of it) belongs to."""
    base, _, ext = like.rpartition(".")
    return f"{base}.{str(number).zfill(len(ext))}"


class MariaDbWatermarks:
    """Implements `cdc_sources.common.readonly_watermarks.TransactionWatermarks` for MariaDB.

    ``low`` opens the chunk's snapshot transaction on the chunk source's connection (so the
    chunk's queries run inside it) and ``high`` ends it; both return the snapshot's binlog position.

    Args:
        source: the chunk source: its connection and error classification.
        binlog_file: a binlog file name of the server (the stream's), for the base name of the
            positions written at a close before this run has read a chunk.
    """

    def __init__(self, source: MySqlChunkSource, binlog_file: str) -> None:
        self.source = source
        self.binlog_file = binlog_file
        self._mark: int | None = None

    def _snapshot_position(self) -> int:
        rows = self.source.query("SHOW SESSION STATUS WHERE Variable_name IN ('Binlog_snapshot_file', "
                                 "'Binlog_snapshot_position')",
                                 where="reading the binlog position of the chunk's snapshot")
        status = {str(k).lower(): str(v) for k, v in rows}
        file, pos = status.get("binlog_snapshot_file"), status.get("binlog_snapshot_position")
        if not file or pos is None:
            raise SourceError("reading a chunk of a read-only incremental snapshot: the server reports no "
                              "Binlog_snapshot_file/Binlog_snapshot_position (is the binlog on?)")
        self.binlog_file = file
        return binlog_mark(file, int(pos))

    def low(self) -> int:
        # REPEATABLE READ: under READ COMMITTED each SELECT would take a read view of its own
        self.source.query("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ", where="starting the chunk's snapshot")
        self.source.query("START TRANSACTION WITH CONSISTENT SNAPSHOT, READ ONLY",
                          where="starting the chunk's consistent snapshot")
        try:
            self._mark = self._snapshot_position()
        except BaseException:
            self.source.query("ROLLBACK", where="ending the chunk's consistent snapshot")
            raise
        return self._mark

    def high(self) -> int:
        mark = self._mark
        self._mark = None
        self.source.query("COMMIT", where="ending the chunk's consistent snapshot")
        if mark is None:
            raise RuntimeError("high() without low(): no chunk snapshot was open")
        return mark

    def passing(self, position: str) -> None:
        pass  # the chunk's read is checked against the stream's order keys instead (`passed`)

    def opens(self, low: int, position: str) -> bool:
        mark = commit_mark(orjson.loads(position))  # a record's pos: its transaction's first event
        return mark is not None and mark >= low

    def passed(self, high: int, order_key: tuple[int, ...]) -> bool:
        # a streamed record's order key: (file number, event position, row, n); the events of the
        # transaction starting at the watermark lie after it, those of earlier ones before it
        return order_key[0] * BINLOG_FILE_FACTOR + order_key[1] >= high

    def checkpoint_passed(self, high: int, offset: dict[str, object]) -> bool:
        mark = commit_mark(offset)  # a checkpoint's pos: the end of the transaction it follows
        return mark is not None and mark >= high

    def close_order_key(self, high: int, seq: int) -> tuple[int, ...]:
        # before (number, event position > pos, ...) of the transactions at or after the position
        return (high // BINLOG_FILE_FACTOR, high % BINLOG_FILE_FACTOR, 0, seq)

    def close_position(self, high: int, mark: int | None) -> str:
        number, pos = divmod(high, BINLOG_FILE_FACTOR)
        return orjson.dumps({"file": binlog_name(self.binlog_file, number), "pos": pos}).decode()
