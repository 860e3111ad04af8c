"""Streams changes from a logical replication slot (pgoutput) as Debezium records.

Transactions arrive whole, in commit order. Each record's ``order_key`` is
``(commit LSN, event LSN, n)``, identical when PostgreSQL replays a transaction after a
restart, so the bronze writer can drop replays. A `Checkpoint` carrying the offset to resume
from follows the COMMIT of every transaction that is handed over (and idle keepalives). The
transactions read back to back from the socket (up to `RUN_SIZE` commits, and fewer records than
half a capture batch: `fold_records`) are
handed over together, followed by the last one's checkpoint only, which says how many
transactions it ends (`Checkpoint.transactions`): one-row transactions would otherwise cost a
checkpoint per row in every stage downstream. A transaction holding a record of the signal
table, or one read while an incremental snapshot is busy, ends with its own checkpoint, so that
the signal stages downstream see the stream exactly as they would one transaction at a time.

Runs of Insert messages of one table, and of Update messages without an old tuple, are
rendered column-wise into one `ChangeBlock` each (`stream_blocks`), up to `RUN_ROWS` rows;
anything the columnar path does not handle falls back to rendering message by message, with
the same result.

LSN conventions follow Debezium 3.6 as observed: ``source.lsn`` is the LSN the server sent
the message at (``XLogData`` start), and ``source.sequence`` is
``[lsn_commit, lsn]`` where ``lsn_commit`` is the LSN of the last COMMIT message processed
(its transaction's end), or null before the first one of a run.
"""

from __future__ import annotations

import logging
import select
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from cdc_sources.common.transactions import TransactionTracker
from cdc_sources.postgres import pgoutput as pg
from cdc_sources.postgres.converters import ConverterSettings
from cdc_sources.postgres.envelope import (
    SourceInfo,
    StreamSourceTemplate,
    dumps,
    envelope_text,
    message_envelope,
    sequence,
)
from cdc_sources.postgres.errors import classify
from cdc_sources.postgres.offset import PostgresOffset
from cdc_sources.postgres.pgoutput import ColumnarUnsupportedError
from cdc_sources.postgres.pgoutput.decoder import (
    BEGIN_SIZE,
    COMMIT_SIZE,
    PG_EPOCH_US,
    unpack_begin,
    unpack_commit,
)
from cdc_sources.postgres.schema import TableCodec
from cdc_sources.postgres.stream_blocks import RUN_TUPLE_START, RowRun, RowRunRenderer
from cdc_sources.spi import HEADER_NEW_KEY, HEADER_OLD_KEY, ChangeRecord, Checkpoint, StreamItem

log = logging.getLogger(__name__)

RUN_SIZE = 512
"""Records are handed to the coordinator in runs of up to this many (fewer generator hops), and at
most this many commits are folded into one checkpoint."""

RUN_ROWS = 4096
"""Consecutive inserts (updates) of one table are rendered together in blocks of up to this many rows."""

RUN_MIN_ROWS = 64
"""Runs shorter than this are rendered message by message: a block's fixed cost (Arrow arrays,
vector encoders) is that of dozens of rows, so a block of a few rows (transactions of one or a
few rows, the common OLTP shape) would be many times slower than the row path."""

_RUNS = {ord("I"): ("c", "INSERT"), ord("U"): ("u", "UPDATE")}  # message -> (op, messageType)
_NEW_TUPLE = ord("N")
_BEGIN, _COMMIT = ord("B"), ord("C")
_LSN_MARK = 0xFEDCBA9876543210  # no real LSN: marks where a row's LSN goes in a text
_NO_RUN = b"\xff"  # no message starts with it: the run prefix while no run is open
_RUN_WAIT_S = 0.01
"""How long a pending insert run waits for more messages before it is rendered."""
_CAUGHT_UP_WAIT_S = 0.05
"""The longest wait for the walsender's keepalive when checking whether the stream is caught up."""


@dataclass
class StreamSettings:
    """Streaming behaviour taken from the connector options."""

    slot: str
    publication: str
    skipped: frozenset[str]
    tombstones: bool
    poll_interval_s: float
    status_interval_s: float
    heartbeat_interval_s: float
    heartbeat_topic: str
    message_topic: str
    prefix: str
    include_message: Callable[[str], bool]
    encode_bytes: Callable[[bytes], Any]
    skip_unchanged: bool
    headers: Mapping[str, str] | None = None
    proto_options: dict[str, str] = field(default_factory=dict)


class PostgresStreamReader:
    """Reads one replication slot. Not thread-safe; one per session.

    Args:
        settings: streaming behaviour.
        source: the fixed parts of the ``source`` block.
        cursor: a psycopg2 replication cursor.
        codec_for_relation: builds the codec of a Relation message, or None if the table
            is not captured.
        current_wal_lsn: the server's current WAL insert position (for idleness).
        heartbeat_action: runs ``heartbeat.action.query`` (or does nothing).
        tx_tracker: transaction metadata, when ``provide.transaction.metadata`` is on.
        last_commit_lsn: ``lsn_commit`` of the stored offset, if resuming.
        columnar: the converter settings, to render runs of inserts column-wise; None: render
            every message by itself.
        busy: whether work is pending that needs the stream to go on (an incremental
            snapshot): an ``until_idle`` run is not idle while it says so, and the checkpoints of
            the transactions read while it says so are not folded.
        signal_topic: the topic of the signal table, if any: a transaction with a record of it
            ends with its own checkpoint.
        fold_records: a checkpoint is handed over once the transactions folded under it hold
            this many records (at most `RUN_SIZE`).
    """

    def __init__(self, *, settings: StreamSettings, source: SourceInfo, cursor: Any,
                 codec_for_relation: Callable[[pg.Relation], TableCodec | None],
                 current_wal_lsn: Callable[[], int], heartbeat_action: Callable[[], None],
                 tx_tracker: TransactionTracker | None, last_commit_lsn: int | None = None,
                 driver_errors: tuple[type[BaseException], ...] = (),
                 columnar: ConverterSettings | None = None, busy: Callable[[], bool] | None = None,
                 signal_topic: str | None = None, fold_records: int = RUN_SIZE) -> None:
        self.s = settings
        self.busy = busy or (lambda: False)
        self.source = source
        self.cursor = cursor
        self.codec_for_relation = codec_for_relation
        self.current_wal_lsn = current_wal_lsn
        self.heartbeat_action = heartbeat_action
        self.tx = tx_tracker
        self.driver_errors = driver_errors
        self.codecs: dict[int, TableCodec | None] = {}
        self.flushed = 0
        self._xid: int | None = None
        self._commit_lsn = 0
        self._ts_us = 0
        self._last_commit_lsn = last_commit_lsn
        self._n = 0
        self._pending: Any = None
        self._target = 0
        self._source_parts: dict[int, tuple[str, str, str]] = {}
        self._templates: dict[int, tuple[TableCodec, StreamSourceTemplate]] = {}  # per codec, kept across transactions
        self._out: list[ChangeRecord] = []
        self._ready: list[StreamItem] = []
        self._type = "INSERT"
        self._columnar = columnar
        self._renderers: dict[int, tuple[TableCodec, RowRunRenderer]] = {}
        self._run_oid: int | None = None
        self._run_prefix = _NO_RUN
        self._run_payloads: list[bytes] = []
        self._run_lsns: list[int] = []
        self._signal_topic = signal_topic
        self._fold_records = fold_records
        self._eager = False  # the open transaction must end with its own checkpoint
        self._cp: tuple[int, int, int] | None = None  # the folded checkpoint (end LSN, commit LSN, ts), not queued yet
        self._cp_at = 0  # where in _out it goes (the records after it are of a transaction still open)
        self._cp_commits = 0  # commits folded into it
        self._cp_tx = 0  # of them, transactions with change events
        self._loose = False  # a non-transactional message came since the last commit or keepalive

    def start(self, start_lsn: int) -> None:
        """Begin streaming from ``start_lsn`` (transactions committing after it)."""
        self.flushed = start_lsn
        self.cursor.start_replication(
            slot_name=self.s.slot, decode=False, start_lsn=start_lsn,
            options={"proto_version": "1", "publication_names": self.s.publication, "messages": "true",
                     **self.s.proto_options},
            status_interval=max(1.0, self.s.status_interval_s),
        )

    def acknowledge(self, lsn: int) -> None:
        """Confirm to the slot that everything up to ``lsn`` is durable."""
        self.flushed = max(self.flushed, lsn)
        self.cursor.send_feedback(write_lsn=self.flushed, flush_lsn=self.flushed, reply=False, force=True)

    def items(self, *, until_idle: bool) -> Iterator[StreamItem]:
        """Yield records and checkpoints until idle (``until_idle``) or forever.

        Idle means: everything the server had written when streaming started has been
        received and no transaction is open. Changes made later may or may not be included.
        A lost connection surfaces as a retriable `PostgresConnectError`.
        """
        try:
            yield from self._items(until_idle)
        except self.driver_errors as exc:
            raise classify(exc, where=f"streaming from replication slot {self.s.slot!r}") from None

    def _items(self, until_idle: bool) -> Iterator[StreamItem]:
        last_heartbeat = time.monotonic()
        self._target = self.current_wal_lsn() if until_idle else 0
        read, decode, handle, ready = self.cursor.read_message, pg.decode, self._handle, self._ready
        payloads, lsns = self._run_payloads, self._run_lsns
        while True:
            msg, self._pending = (self._pending or read()), None
            if msg is not None:
                payload = msg.payload
                if payload.startswith(self._run_prefix):  # the hot path: the next insert of a run
                    payloads.append(payload)
                    lsns.append(msg.data_start)
                    if len(payloads) >= RUN_ROWS:
                        self._end_run()
                        yield from ready
                        ready.clear()
                    continue
                if payloads:
                    self._end_run()
                kind = payload[0]
                if kind == _BEGIN and len(payload) == BEGIN_SIZE:  # once per transaction: no message object
                    final_lsn, ts, xid = unpack_begin(payload, 1)
                    self._begin(xid, final_lsn, ts + PG_EPOCH_US, msg.data_start)
                elif kind == _COMMIT and len(payload) == COMMIT_SIZE:
                    _flags, _commit_lsn, end_lsn, ts = unpack_commit(payload, 1)
                    self._commit(end_lsn, ts + PG_EPOCH_US, msg.data_start)
                elif kind in _RUNS and self._starts_run(payload):
                    payloads.append(payload)
                    lsns.append(msg.data_start)
                    continue
                else:
                    handle(decode(payload), msg.data_start)
                if ready:
                    yield from ready
                    ready.clear()
                elif len(self._out) >= RUN_SIZE:
                    self._flush()
                    yield from ready
                    ready.clear()
                continue
            if payloads and select.select([self.cursor], [], [], _RUN_WAIT_S)[0]:
                continue  # more of the run is on its way: keep gathering
            idle, last_heartbeat = self._quiet(until_idle, last_heartbeat)
            yield from ready
            ready.clear()
            if idle:
                return
            select.select([self.cursor], [], [], self.s.poll_interval_s)

    def _quiet(self, until_idle: bool, last_heartbeat: float) -> tuple[bool, float]:
        """Nothing more to read for now: queue what was gathered, a heartbeat if due and, between
        transactions, a checkpoint. Returns whether the stream is idle, and the last heartbeat's time."""
        self._end_run()
        self._flush()
        idle = False
        if self._xid is None and self.s.heartbeat_interval_s > 0 and (
            time.monotonic() - last_heartbeat >= self.s.heartbeat_interval_s
        ):
            last_heartbeat = time.monotonic()
            self._heartbeat()
        if self._xid is None:
            idle = until_idle and not self.busy() and self._caught_up()
            wal_end = int(self.cursor.wal_end or 0)
            # also a tick while quiet, so the coordinator can acknowledge finished commits
            self._emit(Checkpoint(self._offset(max(wal_end, self.flushed)), idle=idle))
            self._loose = False
        return idle, last_heartbeat

    def _starts_run(self, payload: bytes) -> bool:
        """Whether an Insert or Update message can start a columnar run (then it does)."""
        if self._columnar is None or len(payload) <= RUN_TUPLE_START or payload[RUN_TUPLE_START - 1] != _NEW_TUPLE:
            return False  # an Update with an old tuple (key change, REPLICA IDENTITY FULL/INDEX)
        oid = int.from_bytes(payload[1:5], "big")
        if self.codecs.get(oid) is None or _RUNS[payload[0]][0] in self.s.skipped:
            return False
        self._run_oid, self._run_prefix = oid, payload[:RUN_TUPLE_START]
        return True

    def _end_run(self) -> None:
        """Render the gathered messages (one block; message by message if the run is shorter than
        `RUN_MIN_ROWS` or the columnar path declines it) and queue them."""
        payloads, lsns, oid, prefix = self._run_payloads, self._run_lsns, self._run_oid, self._run_prefix
        self._run_oid, self._run_prefix = None, _NO_RUN
        if not payloads:
            return
        assert oid is not None
        if len(payloads) < RUN_MIN_ROWS or not self._render_block(oid, prefix, payloads, lsns):
            for payload, lsn in zip(payloads, lsns, strict=True):
                self._handle(pg.decode(payload), lsn)
        payloads.clear()
        lsns.clear()

    def _render_block(self, oid: int, prefix: bytes, payloads: list[bytes], lsns: list[int]) -> bool:
        """Queue the run as one block; False if the columnar path declines it (nothing queued)."""
        codec = self.codecs[oid]
        assert codec is not None
        op, self._type = _RUNS[prefix[0]]
        first = lsns[0]
        if self.tx and self.tx.needs_begin():
            self._out.append(self.tx.begin_record(self._order(first), self._position(first)))
        try:
            block = self._renderer(oid, codec).render(payloads, lsns, self._row_run(op, codec))
        except ColumnarUnsupportedError as exc:
            log.debug("changes of %s rendered one by one: %s", codec.table, exc)
            return False
        self._n += len(block)
        if codec.topic == self._signal_topic:
            self._eager = True
        if self.tx:
            self.tx.count(codec.version.table, len(block))
        self._emit(block)
        return True

    def _renderer(self, oid: int, codec: TableCodec) -> RowRunRenderer:
        known = self._renderers.get(oid)
        if known is None or known[0] is not codec:
            assert self._columnar is not None
            known = self._renderers[oid] = (codec, RowRunRenderer(codec, self._columnar))
        return known[1]

    def _row_run(self, op: str, codec: TableCodec) -> RowRun:
        """What the rows of a run share (the texts around their LSNs, their counters)."""
        mark = str(_LSN_MARK)
        p0, p1, p2 = self._position(_LSN_MARK).split(mark)
        total = collection = None
        if self.tx:
            total, collection = self.tx.next_orders(codec.version.table)
        return RowRun(op, self._source_parts_of(codec), self._last_commit_lsn, (p0, p1, p2), self._xid, total,
                      collection, self._commit_lsn, self._n + 1, self.s.headers)

    def _flush(self) -> None:
        """Move the records gathered so far to the ready queue as one run, with the folded checkpoint
        (if any) after the records of the transactions it ends."""
        out, cp = self._out, self._cp
        if cp is not None:
            at = self._cp_at
            if at:
                self._ready.append(out if at == len(out) else out[:at])
            end_lsn, commit_lsn, ts_us = cp
            self._ready.append(Checkpoint(PostgresOffset(end_lsn, commit_lsn, None, ts_us, slot=self.s.slot),
                                          transactions=max(self._cp_tx, 1)))
            self._cp, self._cp_commits, self._cp_tx = None, 0, 0
            if at < len(out):
                self._ready.append(out[at:])
            self._out = []
        elif out:
            self._ready.append(out)
            self._out = []

    def _emit(self, item: StreamItem) -> None:
        """Queue a non-record item after the records before it."""
        self._flush()
        self._ready.append(item)

    def _caught_up(self) -> bool:
        """Whether everything up to the target LSN has been received and processed.

        ``wal_end`` comes from the last message received (the walsender's sent position);
        the stream is ordered, so once it passes the target, nothing before the target is
        still in flight.
        """
        if int(self.cursor.wal_end or 0) >= self._target:
            return True
        self.cursor.send_feedback(reply=True)
        # the walsender answers with a keepalive carrying its position: wait for it, not longer
        select.select([self.cursor], [], [], _CAUGHT_UP_WAIT_S)
        self._pending = self.cursor.read_message()
        if self._pending is not None:  # new data arrived: not idle, process it next
            return False
        return int(self.cursor.wal_end or 0) >= self._target

    def _offset(self, lsn: int) -> PostgresOffset:
        return PostgresOffset(lsn, self._last_commit_lsn, self._xid, self._ts_us or None, slot=self.s.slot)

    def _handle(self, m: Any, lsn: int) -> None:
        kind = type(m)
        if kind is pg.Insert:
            self._insert(m, lsn)
        elif kind is pg.Update:
            self._update(m, lsn)
        elif kind is pg.Delete:
            self._delete(m, lsn)
        elif kind is pg.Begin:
            self._begin(m.xid, m.final_lsn, m.commit_ts_us, lsn)
        elif kind is pg.Commit:
            self._commit(m.end_lsn, m.commit_ts_us, lsn)
        elif kind is pg.Relation:
            self._relation(m)
        elif kind is pg.Truncate:
            self._truncate(m, lsn)
        elif kind is pg.Message:
            self._message(m, lsn)

    def _relation(self, m: pg.Relation) -> None:
        old = self.codecs.get(m.oid)
        codec = self.codec_for_relation(m)
        self.codecs[m.oid] = codec
        if codec is not None and (old is None or old.schema_id != codec.schema_id):
            self._emit(codec.version)

    def _begin(self, xid: int, final_lsn: int, ts_us: int, lsn: int) -> None:
        self._xid, self._commit_lsn, self._ts_us, self._n = xid, final_lsn, ts_us, 0
        self._source_parts.clear()
        if self.tx:
            self.tx.begin(f"{xid}:{lsn}", ts_us // 1000)

    def _commit(self, end_lsn: int, ts_us: int, lsn: int) -> None:
        self._last_commit_lsn = lsn
        if self.tx:
            self._type = "COMMIT"
            end = self.tx.end_record(self._order(lsn), self._position(lsn), tx_id=f"{self._xid}:{lsn}")
            if end is not None:
                self._out.append(end)
        # the transaction's records (and its END) are of order (commit LSN, ., n >= 1): _n counts them
        if self._n or self._loose:  # as the coordinator counts: change events since the last checkpoint
            self._cp_tx += 1
            self._loose = False
        self._xid = None
        self._cp, self._cp_at = (end_lsn, lsn, ts_us), len(self._out)
        self._cp_commits += 1
        if self._eager or self._cp_at >= self._fold_records or self._cp_commits >= RUN_SIZE or self.busy():
            self._eager = False
            self._flush()

    def _order(self, lsn: int) -> tuple[int, int, int]:
        self._n += 1
        return (self._commit_lsn, lsn, self._n)

    def _position(self, lsn: int) -> str:
        commit = "" if self._last_commit_lsn is None else f'"lsn_commit":{self._last_commit_lsn},'
        tx = "" if self._xid is None else f'"txId":{self._xid},'
        return f'{{"lsn_proc":{lsn},"messageType":"{self._type}",{commit}"lsn":{lsn},{tx}"ts_usec":{self._ts_us}}}'

    def _source_parts_of(self, codec: TableCodec) -> tuple[str, str, str]:
        """The parts of the ``source`` block fixed for a transaction (cached)."""
        parts = self._source_parts.get(id(codec))
        if parts is None:
            template = self._templates.get(id(codec))
            if template is None or template[0] is not codec:
                template = self._templates[id(codec)] = (
                    codec, self.source.stream_template(schema=codec.schema, table=codec.table))
            parts = self._source_parts[id(codec)] = template[1].parts(ts_us=self._ts_us, tx_id=self._xid)
        return parts

    def _source(self, codec: TableCodec, lsn: int) -> str:
        """The ``source`` block's JSON text."""
        head, mid, tail = self._source_parts_of(codec)
        commit = self._last_commit_lsn
        seq = f'"[\\"{commit}\\",\\"{lsn}\\"]"' if commit is not None else f'"[null,\\"{lsn}\\"]"'
        return f"{head}{seq}{mid}{lsn}{tail}"

    def _record(self, codec: TableCodec, key: str | None, value: str | None, op: str | None, lsn: int,
                headers: Mapping[str, str] | None = None) -> None:
        if codec.topic == self._signal_topic:
            self._eager = True
        position = self._position(lsn)
        if self.tx and op is not None and self.tx.needs_begin():
            self._out.append(self.tx.begin_record(self._order(lsn), position))
        if headers is None:
            headers = self.s.headers  # shared, read-only
        elif self.s.headers:
            headers = {**headers, **self.s.headers}
        self._out.append(ChangeRecord(codec.topic, key, value, op, position, self._order(lsn), codec.schema_id,
                                      headers))

    def _block(self, codec: TableCodec, lsn: int) -> str:
        return dumps(self.tx.block(codec.version.table, tx_id=f"{self._xid}:{lsn}")) if self.tx else "null"

    def _key(self, codec: TableCodec, values: Any) -> str | None:
        render = codec.render_key
        return None if render is None else render(values)

    def _insert(self, m: pg.Insert, lsn: int) -> None:
        codec = self.codecs.get(m.relation_oid)
        if codec is None or "c" in self.s.skipped:
            return
        self._type = "INSERT"
        value = envelope_text("null", codec.render_row(m.new, None), self._source(codec, lsn), "c",
                              self._block(codec, lsn))
        self._record(codec, self._key(codec, m.new), value, "c", lsn)

    def _update(self, m: pg.Update, lsn: int) -> None:
        codec = self.codecs.get(m.relation_oid)
        if codec is None:
            return
        self._type = "UPDATE"
        new_key = self._key(codec, m.new)
        old_key = self._key(codec, m.old) if m.old is not None else None
        if old_key is not None and old_key != new_key:
            self._key_change(codec, m, lsn, old_key, new_key)
            return
        if "u" in self.s.skipped:
            return
        after = codec.render_row(m.new, m.old)
        before = codec.render_row(m.old, None) if m.old is not None and m.old_kind == "O" else "null"
        if self.s.skip_unchanged and before == after:
            return
        value = envelope_text(before, after, self._source(codec, lsn), "u", self._block(codec, lsn))
        self._record(codec, new_key, value, "u", lsn)

    def _key_change(self, codec: TableCodec, m: pg.Update, lsn: int, old_key: str,
                    new_key: str | None) -> None:
        assert m.old is not None
        if "d" not in self.s.skipped:
            value = envelope_text(codec.render_row(m.old, None), "null", self._source(codec, lsn), "d",
                                  self._block(codec, lsn))
            newkey = {HEADER_NEW_KEY: new_key or "null"}
            self._record(codec, old_key, value, "d", lsn, newkey)
            if self.s.tombstones:  # Debezium puts the newkey header on the tombstone too
                self._record(codec, old_key, None, None, lsn, newkey)
        if "c" not in self.s.skipped:
            after = codec.render_row(m.new, m.old)
            value = envelope_text("null", after, self._source(codec, lsn), "c", self._block(codec, lsn))
            self._record(codec, new_key, value, "c", lsn, {HEADER_OLD_KEY: old_key})

    def _delete(self, m: pg.Delete, lsn: int) -> None:
        codec = self.codecs.get(m.relation_oid)
        if codec is None or "d" in self.s.skipped:
            return
        self._type = "DELETE"
        key = self._key(codec, m.old) if m.old is not None else None
        before = codec.render_row(m.old, None) if m.old is not None else "null"
        value = envelope_text(before, "null", self._source(codec, lsn), "d", self._block(codec, lsn))
        self._record(codec, key, value, "d", lsn)
        if self.s.tombstones:
            self._record(codec, key, None, None, lsn)

    def _truncate(self, m: pg.Truncate, lsn: int) -> None:
        if "t" in self.s.skipped:
            return
        self._type = "TRUNCATE"
        for oid in m.relation_oids:
            codec = self.codecs.get(oid)
            if codec is not None:
                value = envelope_text("null", "null", self._source(codec, lsn), "t", self._block(codec, lsn))
                self._record(codec, None, value, "t", lsn)

    def _message(self, m: pg.Message, lsn: int) -> None:
        if not self.s.include_message(m.prefix):
            return
        self._type = "MESSAGE"
        transactional = m.transactional and self._xid is not None
        if not transactional:
            self._last_commit_lsn = lsn  # Debezium treats it as its own commit
            self._loose = True
        source = self.source.block(schema="", table="", ts_us=self._ts_us, snapshot="false",
                                   tx_id=self._xid if transactional else None, lsn=lsn,
                                   sequence=sequence(self._last_commit_lsn, lsn))
        block = self.tx.block("", tx_id=f"{self._xid}:{lsn}") if self.tx and transactional else None
        value = message_envelope(source, block, m.prefix, self.s.encode_bytes(m.content))
        key = dumps({"prefix": m.prefix})
        order = self._order(lsn) if transactional else (lsn, lsn, 0)
        self._out.append(ChangeRecord(self.s.message_topic, key, value, "m", self._position(lsn), order, None))

    def _heartbeat(self) -> None:
        self.heartbeat_action()
        now_ms = time.time_ns() // 1_000_000
        lsn = max(int(self.cursor.wal_end or 0), self.flushed)
        offset = self._offset(lsn)
        self._out.append(ChangeRecord(self.s.heartbeat_topic, dumps({"serverName": self.s.prefix}),
                                      dumps({"ts_ms": now_ms}), None, dumps(offset.to_dict()), (lsn, 0, 0), None))
        self._emit(Checkpoint(offset))
        self._loose = False
