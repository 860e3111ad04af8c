"""Read-only incremental snapshots (``read.only``): watermarks from the server's transaction state.

With ``read.only`` nothing may be written to the source, so a chunk's window cannot be marked by
rows in the signal table. As Debezium does, the connector reads its watermarks from the server
instead (`TransactionWatermarks`):

1. the *low* watermark, before the chunk is read: the oldest transaction still running
   (PostgreSQL: ``pg_snapshot_xmin(pg_current_snapshot())``). Every transaction that commits
   after the chunk's read was running or not begun then, so its id is at least the low
   watermark: the window opens at the first streamed transaction whose id is (and the
   de-duplication rule applies from there, as with a signal-table window);
2. the *high* watermark, after the chunk is read: a stream position (PostgreSQL: the flushed
   WAL position, ``pg_current_wal_flush_lsn()``). The window closes where the stream passes it:
   before the first record of a transaction committed at or beyond it, or at a checkpoint at
   or beyond it (an idle server still completes the snapshot). The remaining rows are emitted
   there, with order keys derived from the high watermark and the chunk's ``seq`` alone
   (`close_order_key`), so a restart emits them at the same order keys wherever it notices
   the close (chunks closing at one high watermark, on a server writing nothing, follow each
   other by ``seq``).

MariaDB (`cdc_sources.mysql.readonly_watermarks`) reads each chunk in a consistent snapshot whose
binlog position the server reports: that position is both watermarks (``low`` opens the
snapshot transaction, ``high`` ends it).

The watermarks and the chunk's key range ride in the offset (`ChunkWatermarks`): a restart
re-reads the same range and closes at the same high watermark. Signals come only from the
``file`` channel (and ``cdc-lakehouse signal``, which then appends to it).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Protocol

import orjson

from cdc_sources.common.incremental_snapshot import ChunkSource, IncrementalSnapshotter, _Window
from cdc_sources.common.incremental_state import ChunkWatermarks, IncrementalState
from cdc_sources.common.signal_options import SignalSettings
from cdc_sources.common.signals import Watermark
from cdc_sources.spi import (
    ChangeBlock,
    ChangeRecord,
    Checkpoint,
    SourceError,
    StreamItem,
    commit_mark,
    connector_offset,
)
from cdc_sources.spi.snapshot_progress import SnapshotListener

if TYPE_CHECKING:
    from cdc_sources.common.blocking_snapshot import BlockingSnapshotter

log = logging.getLogger(__name__)

__all__ = ["ReadOnlyIncrementalSnapshotter", "TransactionWatermarks"]

_CATCH_UP_S = 30.0
"""How long a chunk's read may be retried while it stays behind what the stream passed on."""


class TransactionWatermarks(Protocol):
    """What a read-only incremental snapshot needs from a connector: watermarks read from the
    server's transaction state, and where the stream stands against them."""

    def low(self) -> int:
        """The low watermark, read before a chunk."""
        ...

    def high(self) -> int:
        """The high watermark, read after a chunk (also when the read failed or found nothing: it
        ends whatever `low` began)."""
        ...

    def passing(self, position: str) -> None:
        """Note a streamed record's position (its JSON text) as it is passed on: a later chunk read
        must see its transaction."""
        ...

    def opens(self, low: int, position: str) -> bool:
        """Whether a streamed record at ``position`` (its JSON text) belongs to a transaction the low
        watermark says may have committed after the chunk's read."""
        ...

    def passed(self, high: int, order_key: tuple[int, ...]) -> bool:
        """Whether a streamed record with ``order_key`` lies at or beyond the high watermark."""
        ...

    def checkpoint_passed(self, high: int, offset: dict[str, object]) -> bool:
        """Whether the stream, at a checkpoint with ``offset``, has read everything before the high watermark."""
        ...

    def close_order_key(self, high: int, seq: int) -> tuple[int, ...]:
        """The order key the chunk's rows follow: after every record before the high watermark,
        before every record at or beyond it, increasing with ``seq`` (`ChunkWatermarks.seq`)."""
        ...

    def close_position(self, high: int, mark: int | None) -> str:
        """The position (JSON text) of the chunk's rows; ``mark``: the commit mark at the close."""
        ...


class ReadOnlyIncrementalSnapshotter(IncrementalSnapshotter):
    """An `IncrementalSnapshotter` that writes nothing to the source (see the module doc).

    Args:
        watermarks: the connector's watermarks.
        others: as for `IncrementalSnapshotter` (``read_only`` is implied).
    """

    def __init__(self, *, watermarks: TransactionWatermarks, source: ChunkSource, signals: SignalSettings,
                 tables: Sequence[tuple[str, str]] | Callable[[], Sequence[tuple[str, str]]],
                 prefix: str, chunk_size: int, state: IncrementalState | None, delimiter: str = ".",
                 blocking: BlockingSnapshotter | None = None,
                 listener: SnapshotListener | None = None) -> None:
        super().__init__(source=source, signals=signals, tables=tables, prefix=prefix, chunk_size=chunk_size,
                         state=state, read_only=True, delimiter=delimiter, blocking=blocking, listener=listener)
        self.marks = watermarks
        self._last_cp: Checkpoint | None = None  # the stream's last checkpoint (its offset: where to resume)
        self._deferred = False  # a chunk read waits for the first checkpoint of this run
        self._announced: str | None = None  # the pending chunk an offset passed on names (it may close)
        self._seen: tuple[int, ...] | None = None  # the order key of the last record passed on

    def unavailable(self) -> str | None:
        return None

    # -- the stream ---------------------------------------------------------------------------

    def _pending(self) -> ChunkWatermarks | None:
        st = self.state
        if st is None or st.window is None or self.window is None:
            return None
        return st.watermarks

    def _closable(self) -> ChunkWatermarks | None:
        """The pending chunk's watermarks if a checkpoint passed on has named them: its rows may be
        written (before that, a crash would make the next run read the chunk with other watermarks)."""
        wm = self._pending()
        return wm if wm is not None and self.state is not None and self.state.window == self._announced else None

    def _with_state(self, cp: Checkpoint) -> Checkpoint:
        out = super()._with_state(cp)
        self._announced = self.state.window if self.state is not None else None
        return out

    def _records(self, records: Iterable[ChangeRecord | ChangeBlock]) -> Iterator[StreamItem]:
        batch: list[ChangeRecord | ChangeBlock] = []
        for r in records:
            position = str(r.positions[0]) if isinstance(r, ChangeBlock) else r.position  # a block: one transaction
            self.marks.passing(position)
            wm = self._closable()
            if wm is not None and self.marks.passed(wm.high, r.order_key(0) if isinstance(r, ChangeBlock)
                                                    else r.order_key):
                if batch:
                    yield from super()._records(batch)
                    batch = []
                self._close(wm, commit_mark(orjson.loads(position)))
                yield from self._drain()
                if self._pending() is not None and self._last_cp is not None:
                    # the next chunk's watermarks go into an offset before its rows can be written
                    yield self._with_state(Checkpoint(self._last_cp.offset))
            wm, st = self._pending(), self.state
            if wm is not None and st is not None and not st.window_opened and self.marks.opens(wm.low, position):
                if batch:
                    yield from super()._records(batch)
                    batch = []
                self._watermark(Watermark(True, st.window or ""), (), None)
            batch.append(r)
            self._seen = r.order_key(len(r) - 1) if isinstance(r, ChangeBlock) else r.order_key
        if batch:
            yield from super()._records(batch)

    def _at_checkpoint(self, cp: Checkpoint) -> None:
        self._last_cp = cp
        wm = self._closable()  # a chunk read now is named by this checkpoint, and closes at a later one
        if wm is not None:
            offset = connector_offset(cp.offset).to_dict()
            if self.marks.checkpoint_passed(wm.high, offset):
                self._close(wm, commit_mark(offset))
        if self._deferred and self.state is not None and self.state.window is None:
            super()._next_chunk()
        self._deferred = False

    def _close(self, wm: ChunkWatermarks, mark: int | None) -> None:
        st = self.state
        assert st is not None and st.window is not None
        self._watermark(Watermark(False, st.window), self.marks.close_order_key(wm.high, wm.seq),
                        self.marks.close_position(wm.high, mark))

    # -- chunks -------------------------------------------------------------------------------

    def _next_chunk(self) -> None:
        """Read the next chunk, once this run has seen a checkpoint: the checkpoint that follows
        carries the chunk's watermarks (`_records` adds one when the read happens between
        checkpoints), so its rows are never written before an offset that names their place
        (a chunk read afresh after a restart would take other watermarks, its rows another place)."""
        if self._last_cp is None:
            self._deferred = True
            return
        self._deferred = False
        super()._next_chunk()

    def _read_chunk(self, *, resumed: bool) -> bool:
        """Read the low watermark, the chunk, the high watermark; a restart re-reads the range
        the offset names (its watermarks unchanged). False: the current table has nothing left."""
        st = self.state
        assert st is not None and st.current is not None
        c = st.current
        key = self._chunk_key(st)
        if key is None:
            return False
        src = self.source
        chunk_id = self._chunk_id(st)
        wm = st.watermarks if resumed and st.window == chunk_id else None
        if wm is not None:  # the offset named it
            self._announced = chunk_id
            chunk = replace(src.read_chunk(c, key, st.last_key, wm.upto, None), last_key=wm.upto, more=wm.more)
        else:
            deadline = time.monotonic() + _CATCH_UP_S
            while True:
                low = self.marks.low()
                try:
                    top = st.max_key if st.max_key is not None else src.max_key(c, key)
                    read = None if top is None else src.read_chunk(c, key, st.last_key, top, self.chunk_size)
                finally:  # always: it may end what low() began (MariaDB: the chunk's snapshot transaction)
                    high = self.marks.high()
                if self._seen is None or not self.marks.passed(high, self._seen):
                    break
                # the stream passed on a change the read did not see yet (MariaDB sends a transaction to
                # the binlog reader before its engine commit makes it visible): read again, a little later
                if time.monotonic() > deadline:
                    raise SourceError(f"incremental snapshot of {c.id}: for {_CATCH_UP_S:.0f} s the chunk's read "
                                      f"stayed behind changes the stream had passed on (order key {self._seen})")
                time.sleep(0.005)
            if top is None or read is None:
                log.info("incremental snapshot %s: %s has no rows to read", st.correlation_id, c.id)
                return False
            st, chunk = replace(st, max_key=top), read
            if not chunk.rows:
                self.state = st
                return False
            seq = max(time.time_ns() // 1000, st.watermarks.seq + 1 if st.watermarks else 0)
            wm = ChunkWatermarks(low, high, tuple(chunk.last_key or ()), chunk.more, seq)
            if st.table_start is None:  # the stream has not reached the read yet: it starts the table
                self._await_start = True
        self.window = _Window(chunk_id, c, chunk)
        self.state = replace(st, window=chunk_id, window_opened=st.window_opened if resumed else False,
                             watermarks=wm)
        if log.isEnabledFor(logging.DEBUG):  # len: a chunk's rows may still be rendering (`chunk_columns`)
            log.debug("incremental snapshot %s: chunk %s of %s: %d rows up to key %s (read-only)", st.correlation_id,
                      chunk_id, c.id, len(chunk.rows), chunk.last_key)
        return True

    def _watermark(self, a: Watermark, order_key: tuple[int, ...] | None, position: str | None) -> None:
        if a.opens:  # no order key: the low watermark is not a record
            st = self.state
            if st is not None and st.window == a.chunk_id:
                self.state = replace(st, window_opened=True)
            return
        super()._watermark(a, order_key, position)  # the closed chunk's watermarks stay: the next one's seq follows
