"""Signals and incremental snapshots for PostgreSQL, applied to the stream as it is read.

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

Exactly-once: the emitted rows take the order keys following the close watermark's
(``(commit LSN, LSN, n, i)``), and the snapshot's progress rides in every checkpoint's offset
(`IncrementalState`). A restart re-reads the pending chunk and emits it at the same close
watermark, under the same order keys, which bronze drops if it has them already.
"""

from __future__ import annotations

import logging
import os
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import orjson

from cdc_sources.common.envelope import envelope_text
from cdc_sources.common.incremental_state import (
    POSITION_ID,
    POSITION_LAST,
    POSITION_START,
    IncrementalState,
    SnapshotCollection,
    without_state,
)
from cdc_sources.common.signal_options import SignalSettings
from cdc_sources.common.signals import (
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
from cdc_sources.postgres.catalog import TableInfo
from cdc_sources.postgres.envelope import SourceInfo, sequence
from cdc_sources.postgres.schema import TableCodec
from cdc_sources.spi import ChangeBlock, ChangeRecord, Checkpoint, StreamItem

log = logging.getLogger(__name__)

__all__ = ["IncrementalSnapshotter", "read_signal_file"]


@dataclass
class _Window:
    """A chunk read and buffered until its close watermark."""

    chunk_id: str
    collection: SnapshotCollection
    codec: TableCodec
    rows: dict[str | None, str]
    """key JSON text -> the row's ``after`` JSON text, in key order."""
    last_key: tuple[str | None, ...] | None
    last_chunk: bool


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


class IncrementalSnapshotter:
    """Applies signals and runs incremental snapshots over one session's stream. Not thread-safe.

    Args:
        conn: an autocommit psycopg connection (watermarks, chunk queries).
        signals: the signal settings.
        tables: the captured tables (signals may name only these).
        codec_for: the snapshot codec of a captured table.
        source: the fixed parts of the ``source`` block.
        prefix: ``topic.prefix``.
        chunk_size: ``incremental.snapshot.chunk.size``.
        state: the progress stored in the offset, if a snapshot was running.
        headers: the records' Debezium headers.
        read_only: ``read.only``: nothing may be written to the source, so no snapshot is started.
    """

    def __init__(self, *, conn: Any, signals: SignalSettings, tables: Sequence[TableInfo],
                 codec_for: Callable[[TableInfo], TableCodec], source: SourceInfo, prefix: str, chunk_size: int,
                 state: IncrementalState | None, headers: Any = None, read_only: bool = False) -> None:
        self.conn = conn
        self.signals = signals
        self.tables = {(t.schema, t.name): t for t in tables}
        self.codec_for = codec_for
        self.source = source
        self.chunk_size = chunk_size
        self.state = state
        self.headers = headers
        self.read_only = read_only
        self.window: _Window | None = None
        self._announced: set[str] = set()
        self._out: list[StreamItem] = []
        self._last_poll = 0.0
        self._await_start = False
        self._chunks = self._rows = 0  # of the current table, in this run (progress lines)
        tbl = signals.table
        self.signal_topic = f"{prefix}.{tbl.parts[0]}.{tbl.parts[1]}" if tbl is not None and len(tbl.parts) == 2 \
            else None
        self._signal_sql = _qualified(*tbl.parts) if tbl is not None and len(tbl.parts) == 2 else None

    # -- the stream ---------------------------------------------------------------------------

    def busy(self) -> bool:
        """Whether a snapshot is running and not paused, or a chunk awaits its close watermark (an
        ``--until-idle`` run waits for it)."""
        st = self.state
        return st is not None and bool(st.collections) and (st.window is not None or not st.paused)

    def wrap(self, items: Iterator[StreamItem]) -> Iterator[StreamItem]:
        """The stream with signals applied and incremental snapshot rows inserted."""
        self._poll_file(force=True)
        self._resume()
        yield from self._drain()
        for item in items:
            if type(item) is list:
                yield from self._records(item)
            elif isinstance(item, ChangeRecord | ChangeBlock):
                yield from self._records([item])
            elif isinstance(item, Checkpoint):
                self._poll_file()
                yield from self._drain()
                yield self._with_state(item)
            else:
                yield item

    def _drain(self) -> Iterator[StreamItem]:
        out, self._out = self._out, []
        yield from out

    def _with_state(self, cp: Checkpoint) -> Checkpoint:
        if self._await_start and self.state is not None and cp.offset.get("lsn_commit") is not None:
            # the checkpoint right after the table's first open watermark: its commit LSN
            self.state = replace(self.state, table_start=int(cp.offset["lsn_commit"]))
            self._await_start = False
        offset = without_state(cp.offset)
        if self.state is not None:
            offset.update(self.state.to_offset())
        return Checkpoint(offset, idle=cp.idle and not self.busy())

    def _records(self, records: Iterable[ChangeRecord | ChangeBlock]) -> Iterator[StreamItem]:
        run: list[ChangeRecord] = []
        for r in records:
            if isinstance(r, ChangeBlock):
                if run:
                    yield run
                    run = []
                self._dedup_block(r)
                yield r
                if r.topic == self.signal_topic and r.op == "c":
                    for i in range(len(r)):
                        self._source_signal(r.values[i].as_py(), r.order_key(i), str(r.positions[i]))
                        yield from self._drain()
                continue
            run.append(r)
            w = self.window
            if w is not None and self.state is not None and self.state.window_opened and r.topic == w.codec.topic:
                if r.op == "t":  # a truncate removed every buffered row
                    w.rows.clear()
                else:
                    w.rows.pop(r.key, None)
            if r.topic == self.signal_topic and r.op == "c" and r.value is not None:
                self._source_signal(r.value, r.order_key, r.position)
                if self._out:
                    yield run
                    run = []
                    yield from self._drain()
        if run:
            yield run

    def _dedup_block(self, block: ChangeBlock) -> None:
        w = self.window
        if w is None or self.state is None or not self.state.window_opened or block.topic != w.codec.topic:
            return
        if block.op == "t":
            w.rows.clear()
            return
        for key in (block.keys.to_pylist() if block.keys is not None else [None] * len(block)):
            w.rows.pop(key, None)

    def _source_signal(self, value: str, order_key: tuple[int, ...], position: str) -> None:
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
        if not self.signals.file_enabled:
            return
        now = time.monotonic()
        if not force and now - self._last_poll < self.signals.poll_interval_s:
            return
        self._last_poll = now
        for n, line in read_signal_file(self.signals.file):
            try:
                signal = parse_signal_line(line, where=f"{self.signals.file}:{n}")
            except SignalError as exc:
                log.warning("%s: ignored", exc)
                continue
            if isinstance(signal.action, Watermark):
                log.warning("%s:%d: watermarks come only from the signal table: ignored", self.signals.file, n)
                continue
            self.apply(signal, order_key=None, position=None)

    # -- signals ------------------------------------------------------------------------------

    def apply(self, signal: Signal, *, order_key: tuple[int, ...] | None, position: str | None) -> None:
        """Act on one signal; rows to emit are queued (`_drain`)."""
        a = signal.action
        if isinstance(a, Watermark):
            self._watermark(a, order_key, position)
        elif isinstance(a, ExecuteSnapshot):
            self._execute(signal.id, a)
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

    def _execute(self, signal_id: str, a: ExecuteSnapshot) -> None:
        if a.kind is SnapshotKind.BLOCKING:
            log.warning("signal %s: blocking snapshots are not supported; use type incremental: ignored", signal_id)
            return
        if self.read_only:
            log.error("signal %s: read.only is set, and incremental snapshots write watermarks to the signal "
                      "table (read-only incremental snapshots are not supported yet): ignored", signal_id)
            return
        if self._signal_sql is None or not self.signals.source_enabled:
            log.warning("signal %s: incremental snapshots need the signal table (signal.data.collection, "
                        "channel source) for their watermarks: ignored", signal_id)
            return
        signal_table = tuple(self.signals.table.parts) if self.signals.table else ()
        names = [t for t in matching(a.collections, self.tables) if t != signal_table]
        if not names:
            log.warning("signal %s: no captured table matches %s: nothing to snapshot", signal_id,
                        [c.text for c in a.collections])
            return
        added = tuple(SnapshotCollection(s, t, a.condition_for(s, t), a.surrogate_key) for s, t in names)
        log.info("signal %s: incremental snapshot of %s", signal_id, ", ".join(c.id for c in added))
        if self.state is None:
            self.state = IncrementalState(signal_id or str(uuid.uuid4()), added)
            self._next_chunk()
        else:  # Debezium adds the tables to the running snapshot
            self.state = replace(self.state, collections=self.state.collections + added)

    def _stop(self, a: StopSnapshot) -> None:
        if self.state is None or a.kind is not SnapshotKind.INCREMENTAL:
            return
        if not a.collections:
            log.info("incremental snapshot %s stopped", self.state.correlation_id)
            self.state, self.window = None, None
            return
        keep = tuple(c for c in self.state.collections if not any(n.matches(c.schema, c.table) for n in a.collections))
        current_stopped = self.state.current is not None and self.state.current not in keep
        log.info("incremental snapshot %s: stopped for %s", self.state.correlation_id,
                 ", ".join(c.id for c in self.state.collections if c not in keep))
        if current_stopped:
            self.window = None
            self.state = replace(self.state, collections=keep, last_key=None, max_key=None, window=None,
                                 window_opened=False)
            if not keep:
                self.state = None
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
        st = replace(st, window=None, window_opened=False, last_key=w.last_key)
        self.window = None
        self._chunks += 1
        self._rows += len(w.rows)
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
            self._read_chunk(st.window, existing=True)
        elif not st.paused:
            self._next_chunk()

    def _next_chunk(self) -> None:
        """Read the next chunk (opening its window) of the first table that has rows left."""
        while self.state is not None and self.state.current is not None:
            if self._read_chunk(str(uuid.uuid4()), existing=False):
                return
            self.state = self.state.next_table()
        if self.state is not None:
            log.info("incremental snapshot %s completed", self.state.correlation_id)
        self.state = None

    def _read_chunk(self, chunk_id: str, *, existing: bool) -> bool:
        """Insert the open watermark, read the chunk, insert the close watermark. False: the
        current table has nothing left (or cannot be snapshotted) and no window was opened."""
        st = self.state
        assert st is not None and st.current is not None
        c = st.current
        info = self.tables.get((c.schema, c.table))
        if info is None:
            log.warning("incremental snapshot %s: table %s is no longer captured: skipped", st.correlation_id, c.id)
            return False
        keys = (c.surrogate_key,) if c.surrogate_key else tuple(info.primary_key)
        names = [col.name for col in info.columns]
        if not keys or any(k not in names for k in keys):
            log.error("incremental snapshot %s: table %s has no primary key%s: skipped", st.correlation_id, c.id,
                      f" column {c.surrogate_key!r}" if c.surrogate_key else " (give a surrogate-key)")
            return False
        types = self._key_types(info, keys)
        present = self._watermarks_present(chunk_id) if existing else set()
        if f"{chunk_id}-open" not in present:
            self._insert_watermark(chunk_id, opens=True)
        if st.max_key is None:  # after the open watermark: a larger key is a row streamed after it
            top = self._max_key(info, keys, c.condition)
            if top is None:
                log.info("incremental snapshot %s: %s has no rows to read", st.correlation_id, c.id)
                self._insert_watermark(chunk_id, opens=False)
                return False
            st = self.state = replace(st, max_key=top)
        rows = self._select(info, keys, types, c.condition, st.last_key, st.max_key)
        last_chunk = len(rows) <= self.chunk_size
        rows = rows[: self.chunk_size]
        if not rows:
            if existing and f"{chunk_id}-close" not in present:
                self._insert_watermark(chunk_id, opens=False)
            return False
        codec = self.codec_for(info)
        index = [names.index(k) for k in keys]
        render_key, render_row = codec.render_key, codec.render_row
        buffered = {render_key(v) if render_key else None: render_row(v, None) for v in rows}
        last_key = tuple(rows[-1][i] for i in index)
        self.window = _Window(chunk_id, c, codec, buffered, last_key, last_chunk)
        if f"{chunk_id}-close" not in present:
            self._insert_watermark(chunk_id, opens=False)
        self.state = replace(st, window=chunk_id, window_opened=st.window_opened if existing else False)
        log.debug("incremental snapshot %s: chunk %s of %s: %d rows up to key %s", st.correlation_id, chunk_id,
                  c.id, len(rows), last_key)
        return True

    def _emit(self, w: _Window, order_key: tuple[int, ...], position: str) -> None:
        """Queue the window's rows as ``r`` events right after the close watermark."""
        st = self.state
        assert st is not None
        codec = w.codec
        if codec.topic not in self._announced:
            self._out.append(codec.version)
            self._announced.add(codec.topic)
        if not w.rows:
            return
        lsn = order_key[1] if len(order_key) > 1 else order_key[0]
        pos = orjson.loads(position)
        commit = pos.get("lsn_commit")
        pos = {**without_state(pos), POSITION_ID: st.correlation_id, POSITION_LAST: w.last_chunk,
               POSITION_START: st.table_start}
        pos_text = orjson.dumps(pos).decode()
        now_us = time.time_ns() // 1000
        source = orjson.dumps(self.source.block(schema=codec.schema, table=codec.table, ts_us=now_us,
                                                snapshot="incremental", tx_id=None, lsn=lsn,
                                                sequence=sequence(commit, lsn))).decode()
        records = [ChangeRecord(codec.topic, key, envelope_text("null", after, source, "r", "null"), "r", pos_text,
                                (*order_key, i), codec.schema_id, self.headers)
                   for i, (key, after) in enumerate(w.rows.items(), 1)]
        self._out.append(records)

    # -- SQL ----------------------------------------------------------------------------------

    def _key_types(self, info: TableInfo, keys: Sequence[str]) -> list[str]:
        rows = self.conn.execute(
            "SELECT attname, format_type(atttypid, atttypmod) FROM pg_attribute WHERE attrelid = %s AND attnum > 0",
            (info.oid,)).fetchall()
        by_name = dict(rows)
        return [str(by_name[k]) for k in keys]

    def _max_key(self, info: TableInfo, keys: Sequence[str], condition: str | None) -> tuple[str | None, ...] | None:
        cols = ", ".join(f"{_q(k)}::text" for k in keys)
        where = f" WHERE ({condition})" if condition else ""
        order = ", ".join(f"t.{_q(k)} DESC" for k in keys)  # t.: not the text output columns
        row = self.conn.execute(f"SELECT {cols} FROM {_qualified(info.schema, info.name)} AS t{where} "
                                f"ORDER BY {order} LIMIT 1").fetchone()
        return None if row is None else tuple(row)

    def _select(self, info: TableInfo, keys: Sequence[str], types: Sequence[str], condition: str | None,
                after: tuple[str | None, ...] | None, upto: tuple[str | None, ...] | None) -> list[tuple[Any, ...]]:
        cols = ", ".join(f"{_q(c.name)}::text" for c in info.columns)
        tuple_sql = "(" + ", ".join(f"t.{_q(k)}" for k in keys) + ")"
        params_sql = "(" + ", ".join(f"%s::{t}" for t in types) + ")"
        where: list[str] = []
        params: list[Any] = []
        if after is not None:
            where.append(f"{tuple_sql} > {params_sql}")
            params.extend(after)
        if upto is not None:
            where.append(f"{tuple_sql} <= {params_sql}")
            params.extend(upto)
        if condition:
            where.append(f"({condition})")
        sql = (f"SELECT {cols} FROM {_qualified(info.schema, info.name)} AS t"
               + (" WHERE " + " AND ".join(where) if where else "")
               + " ORDER BY " + ", ".join(f"t.{_q(k)}" for k in keys) + f" LIMIT {self.chunk_size + 1}")
        return list(self.conn.execute(sql, params).fetchall())

    def _insert_watermark(self, chunk_id: str, *, opens: bool) -> None:
        kind = "snapshot-window-open" if opens else "snapshot-window-close"
        self.conn.execute(f"INSERT INTO {self._signal_sql} VALUES (%s, %s, NULL)",
                          (f"{chunk_id}-{'open' if opens else 'close'}", kind))

    def _watermarks_present(self, chunk_id: str) -> set[str]:
        rows = self.conn.execute(
            f"SELECT s.id FROM (SELECT * FROM {self._signal_sql}) AS s(id, type, data) "
            "WHERE s.id IN (%s, %s)", (f"{chunk_id}-open", f"{chunk_id}-close")).fetchall()
        return {str(r[0]) for r in rows}


def _q(ident: str) -> str:
    return '"' + ident.replace('"', '""') + '"'


def _qualified(schema: str, table: str) -> str:
    return f"{_q(schema)}.{_q(table)}"
