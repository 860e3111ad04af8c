"""Signals and incremental snapshots, applied to a connector's stream as it is read.

`IncrementalSnapshotter.wrap` sits between the stream reader and the coordinator. It reads
signals from the signal table's inserts (``source`` channel, in stream order) and from
``signal.file`` (``file`` channel, at checkpoints), and runs Debezium's incremental snapshot
(watermark-based, ``insert_insert``):

1. for the next chunk it inserts an *open* watermark into the signal table, selects the next
   ``incremental.snapshot.chunk.size`` rows by key (primary key, or ``surrogate-key``) above
   the last completed chunk, not above the table's largest key at its start, with the
   ``additional-conditions`` filter; then inserts a *close* watermark;
2. when the stream reaches the open watermark the window opens: every streamed event of the
   table drops the buffered row of its key (the stream is newer than the chunk);
3. when it reaches the close watermark the remaining rows are emitted there as ``op = r``
   events with ``source.snapshot = "incremental"``, and the next chunk is read.

With ``incremental.snapshot.watermarking.strategy: insert_delete`` step 1 deletes the open
watermark row instead of inserting a close one, and the stream takes a signal-table delete of a
``<chunk>-open`` row as that chunk's close watermark (as Debezium does, under this strategy only:
the id is read from the delete's before image, which holds the key whatever the table's replica
identity or row image). The signal table then keeps no watermark rows. The chunk's key range,
which the close row holds under ``insert_insert``, rides in the offset instead
(`IncrementalState.window_range`): a restart re-reads the pending chunk over it and writes nothing
to the signal table, as its open row was inserted and deleted before any checkpoint named the
chunk. An open row left behind by a run that stopped between its insert and its delete (Debezium
leaves it in the table for good) is taken as the open watermark of the same chunk read again (the
chunk ids are the same after a restart), and deleted when that read is done.

Exactly-once: the emitted rows take order keys following the close watermark's
(``(*close, h)``, `emission_order`: ``h`` a hash of the row's key, so rows are emitted in hash
order within a chunk, chunks in key order), and the snapshot's progress rides in every
checkpoint's offset (`IncrementalState`). A restart re-reads the pending chunk over the same key
range and emits it at the same close watermark; each key takes the same order key as before,
whatever rows were inserted or deleted in the range meanwhile, so bronze drops exactly the rows
it has already (a row's rank in the chunk would shift, and rows would be written twice or lost).

Progress (the current chunk and its key range, rows emitted per table, paused, completed or
stopped) goes to a `SnapshotListener` (`cdc_sources.spi.snapshot_progress`) through
`cdc_sources.common.incremental_progress.ProgressTracker`; the capture's metrics listen.

Connector-neutral: what touches the database (watermark inserts, chunk queries, rendering
the rows as events) is a `ChunkSource` (PostgreSQL: `cdc_sources.postgres.incremental`).
Checkpoint offsets must have a `commit_mark` (PostgreSQL's ``lsn_commit``, a binlog ``file`` and
``pos``) for the silver boundary (`POSITION_START`).
"""

from __future__ import annotations

import hashlib
import logging
import os
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import orjson

from cdc_sources.common.incremental_progress import ProgressTracker
from cdc_sources.common.incremental_state import (
    POSITION_ID,
    POSITION_LAST,
    POSITION_START,
    IncrementalState,
    SnapshotCollection,
    WindowRange,
    without_state,
)
from cdc_sources.common.signal_options import SignalSettings, WatermarkStrategy
from cdc_sources.common.signals import (
    CollectionName,
    ExecuteSnapshot,
    LogMessage,
    PauseSnapshot,
    ResumeSnapshot,
    Signal,
    SignalError,
    SnapshotKind,
    StopSnapshot,
    Watermark,
    matching,
    parse_signal,
    parse_signal_line,
)
from cdc_sources.spi import (
    ChangeBlock,
    ChangeRecord,
    Checkpoint,
    OffsetWithExtras,
    StreamItem,
    commit_mark,
    connector_offset,
)
from cdc_sources.spi.snapshot_progress import SnapshotListener

if TYPE_CHECKING:
    from cdc_sources.common.blocking_snapshot import BlockingSnapshotter
    from cdc_sources.common.chunk_columns import ArrowChunkRows

log = logging.getLogger(__name__)

__all__ = ["Chunk", "ChunkSource", "FileSignals", "IncrementalSnapshotter", "WatermarkLookup", "chunk_where",
           "deleted_watermark", "emission_order", "event_key", "keyless_id", "open_after_lookup", "read_signal_file"]

_KEYLESS = "\0"


def chunk_where(row_sql: str, params_sql: str, after: Key | None, upto: Key | None,
                condition: str | None) -> tuple[str, list[object]]:
    """A chunk query's `` WHERE ...`` clause ('' when none) and its parameters: the chunk key as a
    row value (``row_sql``, compared with ``params_sql``) above ``after`` and at most ``upto``,
    and the signal's ``additional-conditions`` filter (its ``%`` doubled: the statement is run with
    parameters, so both drivers read ``%`` as a placeholder mark)."""
    where: list[str] = []
    params: list[object] = []
    if after is not None:
        where.append(f"{row_sql} > {params_sql}")
        params.extend(after)
    if upto is not None:
        where.append(f"{row_sql} <= {params_sql}")
        params.extend(upto)
    if condition:
        where.append(f"({condition.replace('%', '%%')})")
    return (" WHERE " + " AND ".join(where) if where else ""), params


def keyless_id(chunk_key: Sequence[str | None]) -> str:
    """The `Chunk.rows` entry of a row without a message key (a keyless table chunked by its
    ``surrogate-key``): its chunking key's values, marked so no event key can equal it."""
    return _KEYLESS + orjson.dumps(list(chunk_key)).decode()


def event_key(entry: str | None) -> str | None:
    """The key of the event emitted for a `Chunk.rows` entry (None for `keyless_id` entries)."""
    return None if entry is None or entry.startswith(_KEYLESS) else entry

Key = tuple[str | None, ...]


@dataclass
class Chunk:
    """Rows of one chunk, rendered, in key order.

    Attributes:
        topic: the table's topic.
        rows: key JSON text -> the row's ``after`` JSON text (streamed events of a key drop it); a
            row of a table without a key is under `keyless_id` of its chunking key instead. A dict,
            or the same as Arrow arrays (`cdc_sources.common.chunk_columns.ArrowChunkRows`).
        last_key: the chunking key of the last row read (text values).
        more: whether rows are left after this chunk.
    """

    topic: str
    rows: dict[str | None, str] | ArrowChunkRows
    last_key: Key | None
    more: bool


class ChunkSource(Protocol):
    """What an incremental snapshot needs from a connector (one database connection, autocommit)."""

    def chunk_key(self, c: SnapshotCollection) -> tuple[str, ...] | str:
        """The columns chunks are ordered by (the surrogate key, else the primary key), or why there are none."""
        ...

    def max_key(self, c: SnapshotCollection, key: Sequence[str]) -> Key | None:
        """The largest key of the rows matching the table's condition; None when there are none."""
        ...

    def read_chunk(self, c: SnapshotCollection, key: Sequence[str], after: Key | None, upto: Key | None,
                   size: int | None) -> Chunk:
        """Up to ``size`` rows (None: all) with a key above ``after`` and not above ``upto``, in key order."""
        ...

    def insert_watermark(self, window_id: str, *, opens: bool, data: str | None = None) -> None:
        """Insert ``<window_id>-open`` (``snapshot-window-open``) or ``-close`` into the signal table."""
        ...

    def open_watermark(self, window_id: str) -> dict[str, str | None]:
        """Insert ``<window_id>-open`` unless it is in the signal table already (a chunk read again
        after a restart), and return the window's watermarks that were there before: id -> data
        (empty for a new window)."""
        ...

    def delete_watermark(self, window_id: str) -> None:
        """Delete ``<window_id>-open`` from the signal table (``insert_delete``: the window's close)."""
        ...

    def read_events(self, c: SnapshotCollection, chunk: Chunk, order_key: tuple[int, ...],
                    position: str) -> list[StreamItem]:
        """The chunk's remaining rows as ``r`` events (``source.snapshot = "incremental"``) in
        `emission_order`, order keys ``(*order_key, h)``, ``position`` their position text; a
        `SchemaVersion` first if needed."""
        ...


class WatermarkLookup(Protocol):
    """A chunk source that reads a window's watermarks and inserts one, in two statements."""

    def watermarks_present(self, window_id: str) -> dict[str, str | None]:
        """The window's watermarks in the signal table: id -> data."""
        ...

    def insert_watermark(self, window_id: str, *, opens: bool, data: str | None = None) -> None:
        """Insert ``<window_id>-open`` or ``-close`` into the signal table."""
        ...


def open_after_lookup(source: WatermarkLookup, window_id: str) -> dict[str, str | None]:
    """`ChunkSource.open_watermark` as a look-up, then an insert unless the open watermark is there
    (a source whose database cannot do both in one statement)."""
    present = source.watermarks_present(window_id)
    if f"{window_id}-open" not in present:
        source.insert_watermark(window_id, opens=True)
    return present


@dataclass
class _Window:
    """A chunk read and buffered until its close watermark."""

    chunk_id: str
    collection: SnapshotCollection
    chunk: Chunk

    @property
    def rows(self) -> dict[str | None, str] | ArrowChunkRows:
        return self.chunk.rows

    @property
    def last_chunk(self) -> bool:
        return not self.chunk.more

    @property
    def last_key(self) -> Key | None:
        return self.chunk.last_key


def emission_order(rows: Mapping[str | None, str]) -> list[tuple[int, str | None, str]]:
    """A chunk's rows as ``(h, key, after)`` in emission order: ``h``, the last element of the row's
    order key, is a 63-bit hash of its key text, the same whenever the key is read again;
    ascending (a collision takes the next free number)."""
    ranked = sorted((int.from_bytes(hashlib.blake2b((key or after).encode(), digest_size=8).digest()) >> 1,
                     key or "", key, after) for key, after in rows.items())
    out: list[tuple[int, str | None, str]] = []
    last = -1
    for digest, _, key, after in ranked:
        last = max(digest, last + 1)
        out.append((last, key, after))
    return out


def deleted_watermark(value: str) -> Signal | None:
    """The close watermark a signal-table delete stands for (``insert_delete``): the delete of
    ``<chunk>-open``; None for the delete of any other row. ``value`` is the delete's envelope JSON
    text; only the first column of its before image (``id``) is read, as the before image of a
    PostgreSQL table without ``REPLICA IDENTITY FULL`` holds the key alone."""
    before = orjson.loads(value).get("before") or {}
    first = next(iter(before.values()), None)
    if not isinstance(first, str) or not first.endswith("-open"):
        return None
    chunk_id = first[: -len("-open")]
    return Signal(f"{chunk_id}-close", Watermark(False, chunk_id))


def read_signal_file(path: str) -> list[tuple[int, str]]:
    """Take the lines appended to the file channel so far: ``(line number, text)``.

    The file is renamed before it is read, so lines appended meanwhile go to a new file and
    are read next time.
    """
    src = Path(path)
    if not src.exists():
        return []
    taken = src.with_name(f"{src.name}.{os.getpid()}.reading")
    os.replace(src, taken)
    lines = [(n, line) for n, line in enumerate(taken.read_text(encoding="utf-8").splitlines(), 1) if line.strip()]
    taken.unlink()
    return lines


@dataclass
class FileSignals:
    """The ``file`` channel's reader: the signals appended to the file, read at most every
    ``signal.poll.interval.ms``. One per source (a source capturing several databases reads the
    file once for all of them: each database's own reader would take the lines from the others)."""

    settings: SignalSettings
    _last: float = field(default=float("-inf"))

    def take(self, *, force: bool = False) -> list[Signal]:
        """The signals appended since the last read (none when the channel is off or not due)."""
        if not self.settings.file_enabled:
            return []
        now = time.monotonic()
        if not force and now - self._last < self.settings.poll_interval_s:
            return []
        self._last = now
        out = []
        for n, line in read_signal_file(self.settings.file):
            try:
                signal = parse_signal_line(line, where=f"{self.settings.file}:{n}")
            except SignalError as exc:
                log.warning("%s: ignored", exc)
                continue
            if isinstance(signal.action, Watermark):
                log.warning("%s:%d: watermarks come only from the signal table: ignored", self.settings.file, n)
                continue
            out.append(signal)
        return out


class IncrementalSnapshotter:
    """Applies signals and runs incremental snapshots over one session's stream. Not thread-safe.

    Args:
        source: the connector's database side.
        signals: the signal settings.
        tables: the captured tables, ``(schema, table)`` (signals may name only these), or a function
            returning them as they stand (tables created while capture runs).
        prefix: ``topic.prefix``.
        delimiter: ``topic.delimiter`` (between the prefix and the name parts in topics).
        chunk_size: ``incremental.snapshot.chunk.size``.
        state: the progress stored in the offset, if a snapshot was running.
        read_only: ``read.only``: nothing may be written to the source, so no snapshot is started.
        blocking: runs blocking snapshots (`cdc_sources.common.blocking_snapshot`); None: they are ignored.
        listener: told of the snapshots' progress, blocking ones too (`cdc_sources.spi.snapshot_progress`).
        signal_topic: the signal table's topic, for a connector whose signal table is not named
            ``<schema>.<table>`` (SQL Server's ``<database>.<schema>.<table>``); by default
            ``<prefix><delimiter><schema><delimiter><table>``.
        qualifier: what signals' collection names start with before ``<schema>.<table>`` (SQL
            Server's database), or None.
    """

    def __init__(self, *, source: ChunkSource, signals: SignalSettings,
                 tables: Sequence[tuple[str, str]] | Callable[[], Sequence[tuple[str, str]]],
                 prefix: str, chunk_size: int, state: IncrementalState | None, read_only: bool = False,
                 delimiter: str = ".", blocking: BlockingSnapshotter | None = None,
                 listener: SnapshotListener | None = None, signal_topic: str | None = None,
                 qualifier: str | None = None) -> None:
        self.source = source
        self.qualifier = qualifier
        self.blocking = blocking
        self.signals = signals
        self._tables = tables
        self.chunk_size = chunk_size
        self.state = state
        self.read_only = read_only
        self.window: _Window | None = None
        self._out: list[StreamItem] = []
        self._file = FileSignals(signals)
        self._await_start = False
        self._chunks = self._rows = 0  # of the current table, in this run (progress lines)
        self.progress = ProgressTracker()
        self.listen(listener)
        self._reported: tuple[IncrementalState | None, _Window | None] = (None, None)
        self._aborted = False
        tbl = signals.table
        d = delimiter
        # Debezium reads signal-table deletes only under insert_delete (a read-only snapshot has no such rows)
        self._deletes_close = signals.watermarking is WatermarkStrategy.INSERT_DELETE and not read_only
        self.signal_topic = signal_topic if signal_topic is not None else \
            f"{prefix}{d}{tbl.parts[0]}{d}{tbl.parts[1]}" if tbl is not None and len(tbl.parts) == 2 else None

    def listen(self, listener: SnapshotListener | None) -> None:
        """Tell ``listener`` of the progress of this driver's snapshots, blocking ones too."""
        self.progress.listener = listener
        if self.blocking is not None:
            self.blocking.listener = listener

    @property
    def tables(self) -> list[tuple[str, str]]:
        """The captured tables now."""
        return list(self._tables() if callable(self._tables) else self._tables)

    # -- the stream ---------------------------------------------------------------------------

    def busy(self) -> bool:
        """Whether a snapshot is running and not paused, or a chunk awaits its close watermark (an
        ``--until-idle`` run waits for it)."""
        st = self.state
        return st is not None and bool(st.collections) and (st.window is not None or not st.paused)

    def wrap(self, items: Iterator[StreamItem], on_start: Callable[[], None] | None = None) -> Iterator[StreamItem]:
        """The stream with signals applied and incremental snapshot rows inserted; ``on_start`` is called
        once a stored snapshot has been resumed, before the first item is read."""
        self._poll_file(force=True)
        if self.blocking is not None:  # an interrupted blocking snapshot, read again before streaming
            yield from self.blocking.resume()
        self._resume()
        if on_start is not None:
            on_start()
        yield from self._drain()
        for item in items:
            self._report()
            if type(item) is list:
                yield from self._records(item)
            elif isinstance(item, ChangeRecord | ChangeBlock):
                yield from self._records([item])
            elif isinstance(item, Checkpoint):
                self._at_checkpoint(item)
                self._poll_file()
                yield from self._drain()
                if self.blocking is not None:  # a blocking snapshot asked for runs here, at a transaction end
                    yield from self.blocking.at_checkpoint(self._with_state(item))
                else:
                    yield self._with_state(item)
            else:
                yield item

    def _at_checkpoint(self, cp: Checkpoint) -> None:
        """Called at each checkpoint of the stream before it is passed on (rows queued here precede it)."""

    def _drain(self) -> Iterator[StreamItem]:
        self._report()
        out, self._out = self._out, []
        yield from out

    def _report(self) -> None:
        """Tell the progress tracker of a new chunk or state (both are replaced, never changed in place)."""
        st, w = self.state, self.window
        if st is self._reported[0] and w is self._reported[1]:
            return
        self._reported = (st, w)
        if st is not None and w is not None:
            self.progress.chunk_read(st, w.chunk_id, w.last_key)
        self.progress.changed(st, aborted=self._aborted)
        self._aborted = False

    def _with_state(self, cp: Checkpoint) -> Checkpoint:
        base = connector_offset(cp.offset)
        mark = commit_mark(base.to_dict()) if self._await_start else None
        if mark is not None and self.state is not None:
            # the checkpoint right after the table's first open watermark: its commit mark
            self.state = replace(self.state, table_start=mark)
            self._await_start = False
        if self.state is None:
            # no snapshot: the checkpoint as it is (this runs once per source transaction)
            return cp if base is cp.offset else Checkpoint(base, cp.idle, cp.transactions)  # not busy: no snapshot
        return Checkpoint(OffsetWithExtras(base, self.state.to_offset()), idle=cp.idle and not self.busy(),
                          transactions=cp.transactions)

    def _records(self, records: Iterable[ChangeRecord | ChangeBlock]) -> Iterator[StreamItem]:
        run: list[ChangeRecord] = []
        for r in records:
            if isinstance(r, ChangeBlock):
                if run:
                    yield run
                    run = []
                self._dedup_block(r)
                yield r
                if r.topic == self.signal_topic and (r.op == "c" or (r.op == "d" and self._deletes_close)):
                    for i in range(len(r)):
                        self._source_signal(r.values[i].as_py(), r.order_key(i), str(r.positions[i]), r.op)
                        yield from self._drain()
                continue
            run.append(r)
            w = self.window
            if w is not None and self.state is not None and self.state.window_opened and r.topic == w.chunk.topic:
                if r.op == "t":  # a truncate removed every buffered row
                    w.rows.clear()
                else:
                    w.rows.pop(r.key, None)
            if r.topic == self.signal_topic and (r.op == "c" or (r.op == "d" and self._deletes_close)) \
                    and r.value is not None:
                self._source_signal(r.value, r.order_key, r.position, r.op)
                if self._out:
                    yield run
                    run = []
                    yield from self._drain()
        if run:
            yield run

    def _dedup_block(self, block: ChangeBlock) -> None:
        w = self.window
        if w is None or self.state is None or not self.state.window_opened or block.topic != w.chunk.topic:
            return
        if block.op == "t":
            w.rows.clear()
            return
        for key in (block.keys.to_pylist() if block.keys is not None else [None] * len(block)):
            w.rows.pop(key, None)

    def _source_signal(self, value: str, order_key: tuple[int, ...], position: str, op: str = "c") -> None:
        if op == "d":
            closed = deleted_watermark(value)
            if closed is not None:
                self.apply(closed, order_key=order_key, position=position)
            return
        after = orjson.loads(value).get("after") or {}
        fields = list(after.values())
        if len(fields) < 3:
            log.warning("signal table %s: a row needs the columns id, type, data; got %s",
                        self.signals.table.text if self.signals.table else "?", sorted(after))
            return
        sig_id, kind, data = (None if v is None else str(v) for v in fields[:3])
        if kind is None:
            return
        try:
            signal = parse_signal(sig_id or "", kind, data, where=f"signal table {self.signals.table.text}")  # type: ignore[union-attr]
        except SignalError as exc:
            log.warning("%s: ignored", exc)
            return
        self.apply(signal, order_key=order_key, position=position)

    def _poll_file(self, *, force: bool = False) -> None:
        for signal in self._file.take(force=force):
            self.apply(signal, order_key=None, position=None)

    # -- signals ------------------------------------------------------------------------------

    def apply(self, signal: Signal, *, order_key: tuple[int, ...] | None, position: str | None) -> None:
        """Act on one signal; rows to emit are queued (`_drain`)."""
        a = signal.action
        if isinstance(a, Watermark):
            self._watermark(a, order_key, position)
        elif isinstance(a, ExecuteSnapshot):
            # the id names this signal row (replayed after a restart, it yields the same chunk ids);
            # the whole order key: a binlog order key starts with the file number, shared by many rows
            origin = ".".join(map(str, order_key)) if order_key else str(uuid.uuid4())
            self._execute(signal.id, f"{signal.id}@{origin}", a)
        elif isinstance(a, StopSnapshot):
            self._stop(a)
        elif isinstance(a, PauseSnapshot):
            if self.state is not None:
                log.info("incremental snapshot %s paused", self.state.correlation_id)
                self.state = replace(self.state, paused=True)
        elif isinstance(a, ResumeSnapshot):
            if self.state is not None and self.state.paused:
                log.info("incremental snapshot %s resumed", self.state.correlation_id)
                self.state = replace(self.state, paused=False)
                if self.state.window is None:
                    self._next_chunk()
        elif isinstance(a, LogMessage):
            log.info("signal %s: %s", signal.id, a.message)

    def unavailable(self) -> str | None:
        """Why no incremental snapshot can run (None: one can)."""
        if self.read_only:
            return ("read.only is set, and incremental snapshots on this server write watermarks to the signal "
                    "table (read-only incremental snapshots: PostgreSQL 13+ and MariaDB)")
        if self.signal_topic is None or not self.signals.source_enabled:
            return "incremental snapshots need the signal table (signal.data.collection, channel source)"
        return None

    def snapshot_tables(self, tables: Sequence[tuple[str, str]], correlation_id: str) -> None:
        """Start an incremental snapshot of ``tables`` (or add them to the running one), as an
        ``execute-snapshot`` signal naming them would."""
        q = () if self.qualifier is None else (self.qualifier,)
        names = tuple(CollectionName(".".join((*q, s, t)), (*q, s, t), True) for s, t in tables)
        self._execute(correlation_id, correlation_id, ExecuteSnapshot(names))

    def _execute(self, signal_id: str, correlation_id: str, a: ExecuteSnapshot) -> None:
        if a.kind is SnapshotKind.BLOCKING:
            if self.blocking is None:
                log.warning("signal %s: this connector has no blocking snapshots; use type incremental: ignored",
                            signal_id)
            else:
                signal_table = tuple(self.signals.table.parts) if self.signals.table else ()
                self.blocking.execute(signal_id, correlation_id, a, [t for t in self.tables if t != signal_table])
            return
        why = self.unavailable()
        if why is not None:
            log.error("signal %s: %s: ignored", signal_id, why)
            return
        signal_table = tuple(self.signals.table.parts) if self.signals.table else ()
        names = [t for t in matching(a.collections, self.tables, self.qualifier) if t != signal_table]
        if not names:
            log.warning("signal %s: no captured table matches %s: nothing to snapshot", signal_id,
                        [c.text for c in a.collections])
            return
        added = tuple(SnapshotCollection(s, t, a.condition_for(s, t, self.qualifier), a.surrogate_key)
                      for s, t in names)
        log.info("signal %s: incremental snapshot of %s", signal_id, ", ".join(c.id for c in added))
        if self.state is None:
            self.state = IncrementalState(correlation_id, added)
            self._next_chunk()
        else:  # Debezium adds the tables to the running snapshot; one it holds already is not read twice
            # (the second pass would take the first one's chunk ids, whose watermarks the stream has passed)
            running = {(c.schema, c.table) for c in self.state.collections}
            again = [c.id for c in added if (c.schema, c.table) in running]
            if again:
                log.info("signal %s: %s already in the running snapshot", signal_id, ", ".join(again))
            added = tuple(c for c in added if (c.schema, c.table) not in running)
            self.state = replace(self.state, collections=self.state.collections + added)

    def _stop(self, a: StopSnapshot) -> None:
        if self.state is None or a.kind is not SnapshotKind.INCREMENTAL:
            return
        if not a.collections:
            log.info("incremental snapshot %s stopped", self.state.correlation_id)
            self.state, self.window, self._aborted = None, None, True
            return
        keep = tuple(c for c in self.state.collections
                     if not any(n.matches(c.schema, c.table, self.qualifier) for n in a.collections))
        current_stopped = self.state.current is not None and self.state.current not in keep
        log.info("incremental snapshot %s: stopped for %s", self.state.correlation_id,
                 ", ".join(c.id for c in self.state.collections if c not in keep))
        if current_stopped:
            self.window = None
            self.state = replace(self.state, collections=keep, last_key=None, max_key=None, window=None,
                                 window_opened=False, table_start=None, window_range=None)
            if not keep:
                self.state, self._aborted = None, True
            elif not self.state.paused:
                self._next_chunk()
        else:
            self.state = replace(self.state, collections=keep)

    def _watermark(self, a: Watermark, order_key: tuple[int, ...] | None, position: str | None) -> None:
        st, w = self.state, self.window
        if st is None or st.window != a.chunk_id or order_key is None:
            return  # another run's watermark (replayed), or a stopped snapshot's
        if a.opens:
            self.state = replace(st, window_opened=True)
            self._await_start = st.table_start is None
            return
        if w is None:
            return
        self._emit(w, order_key, position or "{}")
        st = replace(st, window=None, window_opened=False, last_key=w.last_key, window_range=None)
        self.window = None
        self._chunks += 1
        self._rows += len(w.rows)
        self.progress.chunk_emitted(w.collection.id, len(w.rows))
        if w.last_chunk:
            log.info("incremental snapshot %s: %s done, %d rows in %d chunks", st.correlation_id, w.collection.id,
                     self._rows, self._chunks)
            self._chunks = self._rows = 0
        elif self._chunks % 50 == 0:
            log.info("incremental snapshot %s: %s: %d rows in %d chunks so far, up to key %s", st.correlation_id,
                     w.collection.id, self._rows, self._chunks, list(w.last_key or ()))
        self.state = st.next_table() if w.last_chunk else st
        if self.state is not None and not self.state.collections:
            log.info("incremental snapshot %s completed", self.state.correlation_id)
            self.state = None
        elif not self.state.paused:
            self._next_chunk()

    # -- chunks -------------------------------------------------------------------------------

    def _resume(self) -> None:
        """Carry on a snapshot the stored offset says was running: re-read its pending chunk."""
        st = self.state
        if st is None:
            return
        log.info("resuming incremental snapshot %s at %s", st.correlation_id,
                 st.current.id if st.current else "-")
        if st.window is not None:
            self._read_chunk(resumed=True)
        elif not st.paused:
            self._next_chunk()

    def _next_chunk(self) -> None:
        """Read the next chunk (opening its window) of the first table that has rows left."""
        while self.state is not None and self.state.current is not None:
            if self._read_chunk(resumed=False):
                return
            self.state = self.state.next_table()
        if self.state is not None:
            log.info("incremental snapshot %s completed", self.state.correlation_id)
        self.state = None

    def _chunk_id(self, st: IncrementalState) -> str:
        """The id of the chunk after ``st.last_key``: the same when a restart reads that chunk again, so
        the watermarks (and the range) written before the restart are found and the rows line up."""
        assert st.current is not None
        name = f"{st.correlation_id}/{st.current.id}/{orjson.dumps(list(st.last_key or ())).decode()}"
        return str(uuid.uuid5(uuid.NAMESPACE_URL, name))

    def _chunk_key(self, st: IncrementalState) -> tuple[str, ...] | None:
        """The current table's chunk key, or None (logged) when the table is no longer captured or
        has no key to chunk by: the table is then skipped."""
        c = st.current
        assert c is not None
        if (c.schema, c.table) not in self.tables:
            log.warning("incremental snapshot %s: table %s is no longer captured: skipped", st.correlation_id, c.id)
            return None
        key = self.source.chunk_key(c)
        if isinstance(key, str):
            log.error("incremental snapshot %s: table %s: %s: skipped", st.correlation_id, c.id, key)
            return None
        return key

    def _read_chunk(self, *, resumed: bool) -> bool:
        """Insert the open watermark, read the chunk, insert the close watermark (its data: the
        chunk's key range). A chunk whose watermarks exist already (a restart) is read over the
        range its close watermark names. False: the current table has nothing left (or cannot be
        snapshotted) and no window was opened."""
        st = self.state
        assert st is not None and st.current is not None
        c = st.current
        key = self._chunk_key(st)
        if key is None:
            return False
        src = self.source
        chunk_id = self._chunk_id(st)
        if self.signals.watermarking is WatermarkStrategy.INSERT_DELETE:
            return self._read_chunk_deleting(st, key, chunk_id, resumed=resumed)
        present = src.open_watermark(chunk_id)
        known = _range(present.get(f"{chunk_id}-close"))
        if st.max_key is None:  # after the open watermark: a larger key is a row streamed after it
            top = known[2] if known else src.max_key(c, key)
            if top is None:
                log.info("incremental snapshot %s: %s has no rows to read", st.correlation_id, c.id)
                if f"{chunk_id}-close" not in present:
                    src.insert_watermark(chunk_id, opens=False)
                return False
            st = self.state = replace(st, max_key=top)
        if known is not None:  # the same key range as before the restart: rows line up with their order keys
            chunk = replace(src.read_chunk(c, key, st.last_key, known[0], None), last_key=known[0], more=known[1])
        else:
            chunk = src.read_chunk(c, key, st.last_key, st.max_key, self.chunk_size)
            if not chunk.rows:
                if f"{chunk_id}-close" not in present:
                    src.insert_watermark(chunk_id, opens=False)
                return False
            src.insert_watermark(chunk_id, opens=False, data=orjson.dumps(
                {"upto": list(chunk.last_key or ()), "more": chunk.more, "max": list(st.max_key or ())}).decode())
        self.window = _Window(chunk_id, c, chunk)
        self.state = replace(st, window=chunk_id, window_opened=st.window_opened if resumed else False)
        if log.isEnabledFor(logging.DEBUG):  # len: a chunk's rows may still be rendering (`chunk_columns`)
            log.debug("incremental snapshot %s: chunk %s of %s: %d rows up to key %s", st.correlation_id, chunk_id,
                      c.id, len(chunk.rows), chunk.last_key)
        return True

    def _read_chunk_deleting(self, st: IncrementalState, key: Sequence[str], chunk_id: str, *,
                             resumed: bool) -> bool:
        """`_read_chunk` under ``insert_delete``: insert the open watermark, read the chunk, delete
        the open watermark (the close); the chunk's range goes into the state. A chunk the offset
        names with its range (a restart) is read over that range again, the signal table left as it
        is: its watermarks are in the stream already."""
        c = st.current
        assert c is not None
        src = self.source
        if resumed and st.window == chunk_id and st.window_range is not None and st.max_key is not None:
            r = st.window_range
            chunk = replace(src.read_chunk(c, key, st.last_key, r.upto, None), last_key=r.upto, more=r.more)
            self.window = _Window(chunk_id, c, chunk)
            if log.isEnabledFor(logging.DEBUG):  # len: the rows may still be rendering (`chunk_columns`)
                log.debug("incremental snapshot %s: chunk %s of %s read again: %d rows up to key %s",
                          st.correlation_id, chunk_id, c.id, len(chunk.rows), list(r.upto))
            return True
        src.open_watermark(chunk_id)  # an open row left behind by a stopped run is this chunk's open watermark
        if st.max_key is None:  # after the open watermark: a larger key is a row streamed after it
            top = src.max_key(c, key)
            if top is None:
                log.info("incremental snapshot %s: %s has no rows to read", st.correlation_id, c.id)
                src.delete_watermark(chunk_id)
                return False
            st = self.state = replace(st, max_key=top)
        chunk = src.read_chunk(c, key, st.last_key, st.max_key, self.chunk_size)
        src.delete_watermark(chunk_id)
        if not chunk.rows:
            return False
        self.window = _Window(chunk_id, c, chunk)
        self.state = replace(st, window=chunk_id, window_opened=st.window_opened if resumed else False,
                             window_range=WindowRange(tuple(chunk.last_key or ()), chunk.more))
        if log.isEnabledFor(logging.DEBUG):  # len: the rows may still be rendering (`chunk_columns`)
            log.debug("incremental snapshot %s: chunk %s of %s: %d rows up to key %s", st.correlation_id, chunk_id,
                      c.id, len(chunk.rows), chunk.last_key)
        return True

    def _emit(self, w: _Window, order_key: tuple[int, ...], position: str) -> None:
        """Queue the window's rows as ``r`` events right after the close watermark."""
        st = self.state
        assert st is not None
        # a filtered snapshot read part of the table: not marked, silver does not settle it as a re-snapshot
        pos = {**without_state(orjson.loads(position)), POSITION_ID: st.correlation_id,
               POSITION_LAST: w.last_chunk and not w.collection.condition, POSITION_START: st.table_start}
        self._out.extend(self.source.read_events(w.collection, w.chunk, order_key, orjson.dumps(pos).decode()))



def _range(data: str | None) -> tuple[Key, bool, Key] | None:
    """``(upto, more, max)`` from a close watermark's data; None when it names no range."""
    if not data:
        return None
    try:
        d = orjson.loads(data)
        return tuple(d["upto"]), bool(d["more"]), tuple(d["max"])
    except (orjson.JSONDecodeError, KeyError, TypeError):
        return None
