"""Streaming from the binlog: row events in commit order, DDL, truncates, transactions, heartbeats.

python-mysql-replication (``pymysqlreplication``) reads and decodes the binlog; this module turns
its events into Debezium records. Positions follow Debezium's binlog connectors:

* A record's offset (its bronze ``position``) is the restart point after it: ``pos`` is the
  position of the transaction's first event (GTID or ``BEGIN``), ``event`` the events of the
  transaction already handled and ``row`` the rows of the next event already emitted, so a
  restart resumes mid-transaction without duplicates (`BinlogResume`).
* Checkpoints are emitted only at transaction ends (XID, ``COMMIT``, a standalone DDL), with
  ``pos`` after the commit event and the GTID set including the transaction.
* Order keys are ``(binlog file number, event position, row index, record index)``: the
  same when the binlog is read again, so the bronze writer drops replays. Events at or
  before the last one handled are skipped, which also guards against the library silently
  reconnecting and re-sending events after a dropped connection.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from cdc_sources.common.envelope import dumps, envelope_text
from cdc_sources.common.transactions import TransactionTracker
from cdc_sources.mysql import binlog_values
from cdc_sources.mysql.binlog_values import InvalidTemporalError
from cdc_sources.mysql.codec import TableCodec
from cdc_sources.mysql.converters import restore_empty_sets
from cdc_sources.mysql.envelope import SourceInfo
from cdc_sources.mysql.model import TableId
from cdc_sources.mysql.offset import MySqlOffset
from cdc_sources.mysql.offset import binlog_file_number as file_number
from cdc_sources.mysql.rows import decode_rows
from cdc_sources.mysql.transactions import transaction_id
from cdc_sources.spi import (
    HEADER_NEW_KEY,
    HEADER_OLD_KEY,
    ChangeRecord,
    Checkpoint,
    SchemaVersion,
    StreamItem,
)

if TYPE_CHECKING:
    from cdc_sources.mysql.stream_blocks import RowTexts

log = logging.getLogger(__name__)

RUN_SIZE = 512
"""Records handed to the coordinator in one list."""

INSERT_BLOCKS = True
"""Whether the rows of write and update events go to the coordinator as `ChangeBlock`s
(`stream_blocks`) when no transaction metadata is asked for; False: one `ChangeRecord` per row."""

BLOCK_ROWS = 8192
"""Rows of consecutive write events of one table version joined into one block, at most (each
block costs the bronze writer a fixed amount of work, a write event holds about 8 KiB of rows)."""

BLOCK_MIN_ROWS = 64
"""Runs of fewer rows than this go to the coordinator as records, not as a block: a block's fixed
cost (Arrow arrays, and its own pass through the bronze writer) is that of dozens of records, and
one-row transactions, the common OLTP shape, would each make a one-row block."""

_SENTINEL = -7_777_777_777
"""A number no real row index or position takes: where templates are cut."""


@dataclass(frozen=True, slots=True)
class BinlogResume:
    """Where to start reading: a binlog position plus Debezium's in-transaction skip counters.

    Attributes:
        file / pos: the binlog file and position to request.
        gtids: the GTID set (text) of completed transactions at ``pos``.
        skip_events: events of the transaction at ``pos`` already handled (offset ``event``).
        skip_rows: rows of the next event already emitted (offset ``row``).
    """

    file: str
    pos: int
    gtids: str = ""
    skip_events: int = 0
    skip_rows: int = 0


@dataclass(frozen=True)
class StreamSettings:
    """What the stream reader needs from the connector configuration."""

    prefix: str
    skipped: frozenset[str]
    tombstones: bool
    include_query: bool
    heartbeat_interval_s: float
    heartbeat_topic: str
    poll_interval_s: float
    transaction_topic: str | None
    headers: Mapping[str, str] | None = None
    skip_unchanged: bool = False
    failure_mode: str = "fail"
    """``event.processing.failure.handling.mode``: what an invalid binlog date does (`binlog_values`)."""


class DdlHandler(Protocol):
    """Applies a DDL statement to the schema model and returns the records it produces
    (history, schema change events, truncates)."""

    def handle(self, ddl: str, database: str, ctx: EventContext) -> list[ChangeRecord | SchemaVersion]: ...


class GtidTracker(Protocol):
    """The GTID set of completed transactions."""

    def add(self, gtid: str) -> None: ...

    def text(self) -> str: ...


@dataclass(slots=True)
class EventContext:
    """Where the reader is: the current event and transaction, for sources, offsets and order keys."""

    file: str
    event_pos: int
    ts_ms: int
    server_id: int
    gtid: str | None
    begin_pos: int
    events_in_tx: int
    thread: int | None = None
    query: str | None = None
    gtids: str = ""
    source_row: int = 0
    _position_parts: tuple[str, str] | None = None
    source_parts: tuple[str, str] | None = None
    _file_number: int | None = None

    def order(self, row: int, k: int = 0) -> tuple[int, int, int, int]:
        number = self._file_number
        if number is None:
            number = self._file_number = file_number(self.file)
        return (number, self.event_pos, row, k)

    def position_parts(self) -> tuple[str, str]:
        """``dumps(self.offset(row=row))`` before and after ``row`` (>= 1), made once per event."""
        parts = self._position_parts
        if parts is None:
            head, _, tail = dumps(self.offset(row=_SENTINEL)).partition(str(_SENTINEL))
            parts = self._position_parts = (head, tail)
        return parts

    def position_text(self, row: int) -> str:
        """``dumps(self.offset(row=row))`` for ``row`` >= 1, from a template made once per event."""
        head, tail = self.position_parts()
        return f"{head}{row}{tail}"

    def offset(self, *, row: int, server_id: int | None = None) -> dict[str, Any]:
        """Debezium's offset after the ``row``-th row (1-based) of the current event."""
        out: dict[str, Any] = {"ts_sec": self.ts_ms // 1000, "file": self.file, "pos": self.begin_pos}
        if self.gtids:
            out["gtids"] = self.gtids
        if self.events_in_tx:
            out["event"] = self.events_in_tx
        if row:
            out["row"] = row
        sid = self.server_id if server_id is None else server_id
        if sid:
            out["server_id"] = sid
        return out


@dataclass
class _Tx:
    gtid: str | None
    begin_pos: int
    standalone: bool
    tx_id: str
    ts_ms: int
    events: int = 0
    emitted: bool = False
    thread: int | None = None


@dataclass
class _IdleEnd:
    """Where an ``--until-idle`` run ends: the binlog end as (file number, position) when it was
    read (None: unknown), and whether work done since has written past it (`MySqlStreamReader._ends_at`)."""

    target: tuple[int, int] | None
    stale: bool = False


@dataclass
class MySqlStreamReader:
    """Reads the binlog from `BinlogResume` and yields `StreamItem`s. Not thread-safe.

    Attributes:
        settings: stream settings.
        source: the fixed parts of ``source`` blocks.
        open_binlog: opens a python-mysql-replication ``BinLogStreamReader`` at (file, pos,
            blocking); injected so the session owns connection settings and credentials. The
            reader always blocks, with server heartbeats every ``poll.interval.ms``: a heartbeat
            means the server has sent everything. (A non-blocking dump of MariaDB drops the
            connection on large transactions, and the library then re-reads them from their
            start, forever.)
        codec_for: the codec of a table's current version, or None if the table is not captured.
        ddl: applies DDL and returns its records.
        gtids: the completed GTID set, updated at each commit.
        heartbeat_action: runs ``heartbeat.action.query`` (or nothing).
        resume: where to start.
        binlog_end: the server's binlog end (file, position) right now, for ``--until-idle``:
            the run ends once everything up to the end read when streaming started has been
            handled and no transaction is open (at once, without opening the binlog, when the
            resume position is already there), or at a heartbeat, whichever comes first. None:
            only a heartbeat ends it.
        busy: whether work is pending that needs the stream to go on (an incremental snapshot's
            chunk awaiting its watermarks): ``--until-idle`` does not end meanwhile, and once the
            work is done reads on to the binlog's end as it stands then (asked for once, not at
            every transaction end while busy).

    Driver errors while reading (the server went away, refused the reconnection, killed the
    dump thread) are raised as `cdc_sources.mysql.errors.classify` classifies them: a lost or
    refused connection is Retriable, so the capture reopens the session at the stored offset.
    """

    settings: StreamSettings
    source: SourceInfo
    open_binlog: Callable[[str, int, bool], Any]
    codec_for: Callable[[TableId], TableCodec | None]
    ddl: DdlHandler
    gtids: GtidTracker
    heartbeat_action: Callable[[], None]
    resume: BinlogResume
    binlog_end: Callable[[], tuple[str, int]] | None = None
    busy: Callable[[], bool] = field(default=lambda: False)
    _out: list[StreamItem] = field(default_factory=list, init=False)
    _run: list[ChangeRecord] = field(default_factory=list, init=False)
    _blocks: list[RowTexts] = field(default_factory=list, init=False)
    _block_rows: int = field(default=0, init=False)
    _tx: _Tx | None = field(default=None, init=False)
    _last: tuple[int, int] = field(default=(0, 0), init=False)
    _file: str = field(default="", init=False)
    _query: str | None = field(default=None, init=False)
    _tracker: TransactionTracker | None = field(default=None, init=False)
    _skip_events: int = field(default=0, init=False)
    _skip_rows: int = field(default=0, init=False)
    _announced: set[str] = field(default_factory=set, init=False)
    # Debezium's source.thread and source.row outside row events: the thread of the last BEGIN
    # (none on MariaDB, whose transactions start with a GTID event) and the index of the last
    # row read, until the next binlog file; a DDL or TRUNCATE carries them as they stand
    _thread: int | None = field(default=None, init=False)
    _last_row: int = field(default=0, init=False)

    def __post_init__(self) -> None:
        self._file = self.resume.file
        self._skip_events = self.resume.skip_events
        self._skip_rows = self.resume.skip_rows
        if self.settings.transaction_topic:
            self._tracker = TransactionTracker(topic=self.settings.transaction_topic)

    # -- main loop -------------------------------------------------------------------------------

    def items(self, *, until_idle: bool) -> Iterator[StreamItem]:
        """Stream until idle (``until_idle``) or forever; Checkpoints at transaction ends."""
        from pymysqlreplication import event as ev
        from pymysqlreplication import row_event as rev

        handlers: dict[type, Callable[[Any, int], None]] = {
            ev.MariadbGtidEvent: self._on_gtid, ev.GtidEvent: self._on_gtid, ev.QueryEvent: self._on_query,
            ev.XidEvent: self._on_xid, rev.WriteRowsEvent: self._on_write, rev.UpdateRowsEvent: self._on_update,
            rev.DeleteRowsEvent: self._on_delete, ev.MariadbAnnotateRowsEvent: self._on_annotate,
            ev.RowsQueryLogEvent: self._on_annotate,
        }
        last_heartbeat = time.monotonic()
        pos = self.resume.pos
        end = _IdleEnd(self._idle_target()) if until_idle else None
        if end is not None and end.target is not None and self._reached(end.target, pos) and not self.busy():
            # nothing to read: no dump
            yield Checkpoint(self._idle_offset(pos), idle=True)
            return
        while True:  # reopened only if the server ends the dump (a lost connection raises)
            # inside a transaction, reopen at its start: the events already handled are skipped
            stream = self.open_binlog(self._file, self._tx.begin_pos if self._tx is not None else pos, True)
            try:
                for event in _classified(stream, f"reading the binlog from {self._file}:{pos}"):
                    self._file = stream.log_file
                    if isinstance(event, ev.HeartbeatLogEvent):
                        # the server sends heartbeats only when it has sent everything it has
                        if self.settings.heartbeat_interval_s > 0 and self._tx is None and (
                                time.monotonic() - last_heartbeat >= self.settings.heartbeat_interval_s):
                            last_heartbeat = time.monotonic()
                            self._heartbeat(pos)
                        if self._tx is None:
                            yield from self._drain()
                            # the server heartbeats every poll.interval.ms while there is nothing to send:
                            # a checkpoint each time lets the coordinator notice a stop request (it commits
                            # one only when the position moved)
                            yield Checkpoint(self._idle_offset(pos), idle=True)
                            if until_idle and not self.busy():
                                return
                        continue
                    packet = event.packet
                    start = int(packet.log_pos) - int(packet.event_size)
                    if isinstance(event, ev.RotateEvent):
                        self._file = event.next_binlog
                        self._last_row = 0
                        continue
                    here = (file_number(self._file), start)
                    if packet.log_pos and here <= self._last:
                        continue  # replayed by a reconnect
                    handler = handlers.get(type(event))
                    if handler is not None:
                        handler(event, start)
                    if packet.log_pos:
                        self._last = here
                        pos = int(packet.log_pos)
                    if self._out:
                        yield from self._drain()
                    if end is not None and self._tx is None and packet.log_pos and self._ends_at(end, pos):
                        yield Checkpoint(self._idle_offset(pos), idle=True)
                        return
            finally:
                stream.close()

    def _ends_at(self, end: _IdleEnd, pos: int) -> bool:
        """Whether an ``--until-idle`` run ends at ``pos`` of the current file, a transaction end:
        at or past the end, with nothing busy. Past the end while busy, the end is stale (an
        incremental snapshot wrote watermarks after it, and the stream reads on to them: they are
        in the binlog); it is read again once, when the work is done, not at every chunk."""
        if end.target is None or not self._reached(end.target, pos):
            return False
        if self.busy():
            end.stale = True
            return False
        if end.stale:
            end.target, end.stale = self._idle_target(), False
            return end.target is not None and self._reached(end.target, pos)
        return True

    def _idle_target(self) -> tuple[int, int] | None:
        """The binlog end as (file number, position), if the session can tell it."""
        if self.binlog_end is None:
            return None
        file, pos = self.binlog_end()
        return file_number(file), pos

    def _reached(self, target: tuple[int, int], pos: int) -> bool:
        """Whether ``pos`` of the current file, outside a resumed transaction, is at or past ``target``."""
        if self._tx is not None or self._skip_events or self._skip_rows:
            return False
        return (file_number(self._file), pos) >= target

    def _drain(self) -> Iterator[StreamItem]:
        self._flush_run()
        out, self._out = self._out, []
        yield from out

    def _emit(self, record: ChangeRecord) -> None:
        if self._blocks:
            self._flush_blocks()
        self._run.append(record)
        if len(self._run) >= RUN_SIZE:
            self._flush_run()

    def _flush_run(self) -> None:
        """Hand over the records (or blocks: only one of the two is ever pending) not yet handed over."""
        if self._run:
            self._out.append(self._run)
            self._run = []
        if self._blocks:
            self._flush_blocks()

    def _flush_blocks(self) -> None:
        """Hand the pending rows over: one block, or records if they are fewer than `BLOCK_MIN_ROWS`."""
        from cdc_sources.mysql.stream_blocks import joined

        if self._block_rows < BLOCK_MIN_ROWS:
            self._out.append(_records(self._blocks))
        else:
            self._out.append(joined(self._blocks))
        self._blocks, self._block_rows = [], 0

    def _idle_offset(self, pos: int) -> MySqlOffset:
        return MySqlOffset(self._file, pos, self.gtids.text() or None)

    # -- transactions ----------------------------------------------------------------------------

    def _on_gtid(self, event: Any, start: int) -> None:
        gtid = str(event.gtid)
        standalone = bool(getattr(event, "flags", 0) & 1) if hasattr(event, "domain_id") else False
        self._begin(gtid, start, standalone, int(event.timestamp) * 1000)

    def _begin(self, gtid: str | None, start: int, standalone: bool, ts_ms: int) -> None:
        tx_id = transaction_id(gtid, self._file, start)
        self._tx = _Tx(gtid, start, standalone, tx_id, ts_ms)
        if self._tracker is not None:
            self._tracker.begin(tx_id, ts_ms)

    def _on_annotate(self, event: Any, start: int) -> None:
        text = getattr(event, "sql_statement", None) or getattr(event, "query", None)
        if isinstance(text, bytes):
            text = text.decode("utf-8", "replace")
        self._query = text if self.settings.include_query else None

    def _on_query(self, event: Any, start: int) -> None:
        query = str(event.query).strip()
        upper = query[:16].upper()
        if upper.startswith("BEGIN") or upper.startswith("XA START"):
            if self._tx is None:
                self._begin(None, start, False, int(event.timestamp) * 1000)
            if self._tx is not None:
                self._tx.thread = int(event.slave_proxy_id)
            self._thread = int(event.slave_proxy_id)
            return
        if upper.startswith("COMMIT") or upper.startswith("XA COMMIT") or upper.startswith("XA END") \
                or upper.startswith("XA PREPARE"):
            if upper.startswith("COMMIT") or upper.startswith("XA COMMIT"):
                self._commit(event, start)
            return
        if upper.startswith("ROLLBACK") or upper.startswith("SAVEPOINT") or upper.startswith("RELEASE"):
            return
        database = event.schema.decode() if isinstance(event.schema, bytes) else str(event.schema or "")
        tx = self._tx
        ctx = self._context(event, start)
        ctx.thread, ctx.source_row = self._thread, self._last_row
        for item in self.ddl.handle(query, database, ctx):
            if isinstance(item, ChangeRecord):
                self._emit(item)
            else:
                self._flush_run()
                self._out.append(item)
        if tx is None or tx.standalone:
            self._commit(event, start)

    def _on_xid(self, event: Any, start: int) -> None:
        self._commit(event, start)

    def _commit(self, event: Any, start: int) -> None:
        tx = self._tx
        end = int(event.packet.log_pos)
        if tx is not None and tx.gtid:
            self.gtids.add(tx.gtid)
        self._tx = None
        self._query = None
        offset = MySqlOffset(self._file, end, self.gtids.text() or None, int(event.packet.server_id),
                             ts_sec=int(event.timestamp))
        if tx is not None and tx.emitted and self._tracker is not None:
            end_record = self._tracker.end_record((file_number(self._file), start, 0, 0), dumps(offset.to_dict()))
            if end_record is not None:
                self._emit(end_record)
        self._flush_run()
        self._out.append(Checkpoint(offset))

    def _count_event(self) -> None:
        """A row event is done (Debezium's ``event`` counter counts row events)."""
        if self._tx is not None:
            self._tx.events += 1

    # -- rows ------------------------------------------------------------------------------------

    def _context(self, event: Any, start: int, thread: int | None = None) -> EventContext:
        tx = self._tx
        return EventContext(
            file=self._file, event_pos=start, ts_ms=int(event.timestamp) * 1000,
            server_id=int(event.packet.server_id), gtid=tx.gtid if tx else None,
            begin_pos=tx.begin_pos if tx else start, events_in_tx=tx.events if tx else 0,
            thread=thread if thread is not None else (tx.thread if tx else None), query=self._query,
            gtids=self.gtids.text())

    def _rows_of(self, event: Any) -> tuple[TableCodec | None, list[Any]]:
        codec = self.codec_for(TableId(str(event.schema), str(event.table)))
        if codec is not None and codec.schema_id not in self._announced:
            self._announced.add(codec.schema_id)
            self._flush_run()
            self._out.append(codec.version)
        rows: list[Any] = self._decode(event) if codec is not None else []
        if rows:
            self._last_row = len(rows) - 1
        if self._skip_events:
            self._skip_events -= 1
            return None, []
        if self._skip_rows:  # already emitted before the restart; keep their indices for row numbers
            skip = min(self._skip_rows, len(rows))
            rows, self._skip_rows = [None] * skip + rows[skip:], 0
        return codec, rows

    def _decode(self, event: Any) -> list[Any]:
        """The event's rows; an invalid date (``fail`` mode) is an error naming the table and position."""
        binlog_values.failure_mode(self.settings.failure_mode)
        try:
            return decode_rows(event)
        except InvalidTemporalError as exc:
            raise InvalidTemporalError(f"table {event.schema}.{event.table}, binlog {self._file} at "
                                       f"{event.packet.log_pos - event.event_size}: {exc}") from None

    def _on_write(self, event: Any, start: int) -> None:
        codec, rows = self._rows_of(event)
        if codec is not None and "c" not in self.settings.skipped and rows:
            ctx = self._context(event, start)
            if self._blocks_wanted():
                self._insert_block(codec, ctx, rows)
                self._count_event()
                return
            for i, row in enumerate(rows):
                if row is None:
                    continue
                values = restore_empty_sets(row["values"], row["none_sources"])
                self._record(codec, ctx, i, 0, "c", None, codec.row(values), codec.key(values))
        self._count_event()

    def _on_delete(self, event: Any, start: int) -> None:
        codec, rows = self._rows_of(event)
        if codec is not None and "d" not in self.settings.skipped:
            ctx = self._context(event, start)
            if self._blocks_wanted() and rows:
                self._delete_records(codec, ctx, rows)
                self._count_event()
                return
            for i, row in enumerate(rows):
                if row is None:
                    continue
                values = restore_empty_sets(row["values"], row["none_sources"])
                key = codec.key(values)
                self._record(codec, ctx, i, 0, "d", codec.row(values), None, key)
                if self.settings.tombstones:
                    self._tombstone(codec, ctx, i, 1, key)
        self._count_event()

    def _on_update(self, event: Any, start: int) -> None:
        codec, rows = self._rows_of(event)
        if codec is not None and rows:
            ctx = self._context(event, start)
            if "u" not in self.settings.skipped and self._blocks_wanted() and self._update_block(codec, ctx, rows):
                self._count_event()
                return
            for i, row in enumerate(rows):
                if row is None:
                    continue
                self._update(codec, ctx, i, restore_empty_sets(row["before_values"], row["before_none_sources"]),
                             restore_empty_sets(row["after_values"], row["after_none_sources"]))
        self._count_event()

    def _update(self, codec: TableCodec, ctx: EventContext, i: int, old: Mapping[str, Any],
                new: Mapping[str, Any]) -> None:
        before, after = codec.row(old), codec.row(new)
        old_key, new_key = codec.key(old), codec.key(new)
        if old_key == new_key:
            if "u" in self.settings.skipped or (self.settings.skip_unchanged and before == after):
                return
            self._record(codec, ctx, i, 0, "u", before, after, new_key)
            return
        # a primary key change: delete (+ tombstone) of the old key, create of the new one
        new_key_text, old_key_text = dumps(new_key), dumps(old_key)
        if "d" not in self.settings.skipped:
            self._record(codec, ctx, i, 0, "d", before, None, old_key, {HEADER_NEW_KEY: new_key_text})
            if self.settings.tombstones:
                self._tombstone(codec, ctx, i, 1, old_key, {HEADER_NEW_KEY: new_key_text})
        if "c" not in self.settings.skipped:
            self._record(codec, ctx, i, 2, "c", None, after, new_key, {HEADER_OLD_KEY: old_key_text})

    def _blocks_wanted(self) -> bool:
        """Whether rows events go out as blocks: no per-row transaction blocks are asked for."""
        return self._tracker is None and INSERT_BLOCKS

    def _insert_block(self, codec: TableCodec, ctx: EventContext, rows: list[Any]) -> None:
        """The event's rows as one block of ``c`` records (`stream_blocks`)."""
        from cdc_sources.mysql.stream_blocks import insert_block

        self._add_block(insert_block(codec, rows, self._templates(codec, ctx)))

    def _update_block(self, codec: TableCodec, ctx: EventContext, rows: list[Any]) -> bool:
        """The event's rows as one block of ``u`` records; False (nothing emitted) if a row's key changes."""
        from cdc_sources.mysql.stream_blocks import KeyChangedError, update_block

        try:
            block = update_block(codec, rows, self._templates(codec, ctx), skip_unchanged=self.settings.skip_unchanged)
        except KeyChangedError:
            return False
        self._add_block(block)
        return True

    def _delete_records(self, codec: TableCodec, ctx: EventContext, rows: list[Any]) -> None:
        """The event's rows as delete records (and tombstones), made from the event's templates."""
        from cdc_sources.mysql.stream_blocks import delete_records

        records = delete_records(codec, rows, self._templates(codec, ctx), tombstones=self.settings.tombstones)
        if not records:
            return
        if self._tx is not None:
            self._tx.emitted = True
        if self._blocks:
            self._flush_blocks()
        self._run.extend(records)
        if len(self._run) >= RUN_SIZE:
            self._flush_run()

    def _templates(self, codec: TableCodec, ctx: EventContext) -> Any:
        from cdc_sources.mysql.stream_blocks import EventTemplates

        return EventTemplates(self._source_parts(codec, ctx), ctx.position_parts(),
                              (ctx.order(0)[0], ctx.event_pos), self.settings.headers)

    def _add_block(self, block: RowTexts | None) -> None:
        """Hand ``block`` over after what is pending, joined to the rows before it if it `extends` them."""
        from cdc_sources.mysql.stream_blocks import extends

        if block is None:
            return
        if self._tx is not None:
            self._tx.emitted = True
        if self._run or (self._blocks and not extends(self._blocks[-1], block)):
            self._flush_run()
        self._blocks.append(block)
        self._block_rows += len(block)
        if self._block_rows >= BLOCK_ROWS:
            self._flush_blocks()

    def _source_parts(self, codec: TableCodec, ctx: EventContext) -> tuple[str, str]:
        """The ``source`` block JSON before and after the row index, made once per event."""
        parts = ctx.source_parts  # a rows event is of one table: one template per event
        if parts is None:
            block = self.source.block(db=codec.table.id.database, table=codec.table.id.table, ts_ms=ctx.ts_ms,
                                      snapshot="false", server_id=ctx.server_id, gtid=ctx.gtid, file=ctx.file,
                                      pos=ctx.event_pos, row=_SENTINEL, thread=ctx.thread, query=ctx.query)
            head, _, tail = dumps(block).partition(str(_SENTINEL))
            parts = ctx.source_parts = (head, tail)
        return parts

    def _source_text(self, codec: TableCodec, ctx: EventContext, row: int) -> str:
        """The ``source`` block JSON; everything but ``row`` is made once per event."""
        head, tail = self._source_parts(codec, ctx)
        return f"{head}{row}{tail}"

    def _record(self, codec: TableCodec, ctx: EventContext, row: int, k: int, op: str, before: Any, after: Any,
                key: Any, extra_headers: Mapping[str, str] | None = None) -> None:
        transaction = None
        if self._tracker is not None and self._tx is not None:
            if self._tracker.needs_begin():
                self._emit(self._tracker.begin_record((file_number(ctx.file), ctx.begin_pos, 0, 0),
                                                      dumps(ctx.offset(row=0))))
            transaction = self._tracker.block(f"{codec.table.id.database}.{codec.table.id.table}")
        if self._tx is not None:
            self._tx.emitted = True
        value = envelope_text("null" if before is None else dumps(before), "null" if after is None else dumps(after),
                              self._source_text(codec, ctx, row), op,
                              "null" if transaction is None else dumps(transaction))
        headers = self.settings.headers
        if extra_headers:
            headers = {**(headers or {}), **extra_headers}
        self._emit(ChangeRecord(codec.topic, None if key is None else dumps(key), value, op,
                                ctx.position_text(row + 1), ctx.order(row, k), codec.schema_id, headers))

    def _tombstone(self, codec: TableCodec, ctx: EventContext, row: int, k: int, key: Any,
                   extra_headers: Mapping[str, str] | None = None) -> None:
        """A tombstone; it carries the headers of the delete it follows (``extra_headers``), as Debezium's do."""
        headers = self.settings.headers
        if extra_headers:
            headers = {**(headers or {}), **extra_headers}
        self._emit(ChangeRecord(codec.topic, None if key is None else dumps(key), None, None,
                                ctx.position_text(row + 1), ctx.order(row, k), codec.schema_id, headers))

    # -- heartbeats ------------------------------------------------------------------------------

    def _heartbeat(self, pos: int) -> None:
        self.heartbeat_action()
        now_ms = time.time_ns() // 1_000_000
        offset = self._idle_offset(pos)
        self._out.append([ChangeRecord(
            self.settings.heartbeat_topic, dumps({"serverName": self.settings.prefix}), dumps({"ts_ms": now_ms}),
            None, dumps(offset.to_dict()), (file_number(self._file), pos, 1, now_ms), None, self.settings.headers)])
        self._out.append(Checkpoint(offset, idle=True))


def _records(runs: list[RowTexts]) -> list[ChangeRecord]:
    """The records of rendered rows (`stream_blocks.RowTexts`), one by one: what a block of them holds."""
    return [ChangeRecord(r.topic, key, value, r.op, position, order_key, r.schema_id, r.headers)
            for r in runs
            for key, value, position, order_key in zip(r.keys if r.keyed else [None] * len(r), r.values, r.positions,
                                                       r.order_keys, strict=True)]


def _classified(stream: Any, where: str) -> Iterator[Any]:
    """The events of ``stream``; driver errors are raised as connector errors (`classify`).

    python-mysql-replication reconnects by itself after a lost connection, but a refused
    reconnection (server down) or an error packet (server shutting down) escapes as a pymysql
    error, which would otherwise end the capture instead of being retried.
    """
    import pymysql

    from cdc_sources.mysql.errors import classify

    try:
        yield from stream
    except (pymysql.err.MySQLError, OSError) as exc:
        raise classify(exc, where=where) from exc
