"""One capture run against Oracle: a snapshot at an SCN, then the LogMiner mining loop.

Everything goes through the gateway (`cdc_sources.oracle.gateway`):

- start-up: the session's NLS and time-zone settings, then the captured tables from the
  dictionary (``ALL_TABLES`` through the include/exclude lists, ``ALL_TAB_COLUMNS``, primary keys);
- snapshot (``snapshot.mode`` ``initial``, ``initial_only``): the current SCN S and the
  transactions in flight (``V$TRANSACTION``), then each table ``AS OF SCN`` S as ``r`` records;
  streaming resumes from the oldest in-flight transaction's start (or S). A transaction
  committed at or below S is in the snapshot and is not emitted again; one committed above it
  is emitted whole, its changes before S included;
- streaming: windows ``(low, current SCN]``, each in its own LogMiner session (the redo logs
  holding ``low`` added, ``START_LOGMNR``, the mining query, ``END_LOGMNR``); rows go through the
  transaction buffer; each committed transaction becomes its records and a checkpoint whose
  offset is Debezium's: ``scn`` where mining restarts (before the oldest open transaction) and
  ``commit_scn`` with the transaction recorded, so a restart skips what was emitted.

Records are ordered by (commit SCN, the commit's rank among commits at that SCN, the record's
index in its transaction): the same on every replay, since a restart re-reads every row of an
SCN it resumes in.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Generator, Iterator, Mapping, Sequence
from dataclasses import replace
from typing import Any

import orjson

from cdc_sources.common.blocking_snapshot import StoredBlocking
from cdc_sources.common.envelope import dumps, envelope
from cdc_sources.common.incremental_state import IncrementalState
from cdc_sources.common.snapshot_plan import StoredState, plan_snapshot
from cdc_sources.oracle import gateway as gw
from cdc_sources.oracle.config import OracleSourceConfig
from cdc_sources.oracle.converters import OracleValueError
from cdc_sources.oracle.ddl import DdlKind, OracleDdlError, apply_ddl, ddl_target
from cdc_sources.oracle.envelope import (
    EventKind,
    EventMaker,
    OracleRecord,
    OracleSchemaChangeError,
    OracleTable,
    utc_ms,
)
from cdc_sources.oracle.incremental_session import OracleSignals
from cdc_sources.oracle.mining_query import mining_query
from cdc_sources.oracle.offset import OracleOffset
from cdc_sources.oracle.redo import RedoParseError
from cdc_sources.oracle.schema_changes import SchemaChangeRecords, create_table_ddl, restore_tables
from cdc_sources.oracle.signal_table import oracle_signal_settings
from cdc_sources.oracle.snapshot_values import redo_value
from cdc_sources.oracle.source import OracleEvent, OracleSourceInfo
from cdc_sources.oracle.tables import table_of
from cdc_sources.oracle.transaction_metadata import OracleTransactionMetadata
from cdc_sources.oracle.transactions import (
    ChangeKind,
    CommittedTransaction,
    LogMinerRow,
    LogMinerRowError,
    TransactionBuffer,
)
from cdc_sources.spi import (
    ChangeRecord,
    Checkpoint,
    HistoryEntry,
    SchemaVersion,
    SnapshotPlan,
    SnapshotProgress,
    SourceError,
    SourceOffset,
    StreamItem,
)
from cdc_sources.spi.errors import Fatal
from cdc_sources.spi.snapshot_progress import SnapshotListener

_SNAPSHOT_ATTEMPTS = 5
_BAD_INPUT = (LogMinerRowError, RedoParseError, OracleValueError, OracleSchemaChangeError)

__all__ = ["OracleCaptureSession", "OracleStreamError"]


class OracleStreamError(SourceError, Fatal):
    """A LogMiner row or snapshot value the connector cannot turn into events (names where)."""

log = logging.getLogger(__name__)


class OracleCaptureSession:
    """A capture run (implements `cdc_sources.spi.CaptureSession`)."""

    def __init__(self, config: OracleSourceConfig, connection: gw.Connection,
                 stored_offset: Mapping[str, Any] | None, history: Sequence[HistoryEntry] = (),
                 connect: Callable[[], gw.Connection] | None = None) -> None:
        self.config = config
        for warning in config.warnings:
            log.warning("source %s: %s", config.name, warning)
        self.gateway = gw.OracleGateway(connection, fetch_size=config.fetch_size)
        self.offset = OracleOffset.from_dict(stored_offset) if stored_offset else None
        self.gateway.run(gw.CATALOGUE[gw.StatementKind.NLS_SESSION])
        self.gateway.run(gw.CATALOGUE[gw.StatementKind.UTC_SESSION])
        tables = {(t.schema, t.name): t for t in self._captured_tables()}
        if self._resumes():  # the structures in force at the offset, not the dictionary's current ones
            assert self.offset is not None
            for (owner, name), table in restore_tables(history, self.offset).items():
                if table is None:
                    tables.pop((owner, name), None)
                elif config.tables.includes_table(owner, name):
                    tables[(owner, name)] = table
        self.tables = [tables[k] for k in sorted(tables)]
        db = str(config.options.values.get("database.pdb.name") or config.connection.service)
        source = OracleSourceInfo(config.name, db)
        self.maker = EventMaker(source, tables, config.envelope, captures=config.tables.includes_table)
        self.schema_records = SchemaChangeRecords(source, config.include_schema_changes)
        opts = config.options.values
        self._tx_metadata = OracleTransactionMetadata(
            topic=f"{config.name}{opts.get('topic.delimiter') or '.'}{opts.get('topic.transaction') or 'transaction'}",
            database=db) if opts.get("provide.transaction.metadata") else None
        self.query = mining_query(config.mining)
        select = self.query[len("SELECT "):self.query.index(" FROM V$LOGMNR_CONTENTS")]
        self._columns = tuple(c.strip() for c in select.split(","))
        self._announced: set[str] = set()
        self._pause_scn: int | None = None
        """Set while a checkpoint ending a mining window (or idle after one) is passed on: the SCN up to
        which every transaction is handed out (where a blocking snapshot may pause, `cdc_sources.oracle.blocking`)."""
        values = config.options.values
        self.signals = OracleSignals(
            gateway=self.gateway, maker=self.maker, source=source, signals=oracle_signal_settings(values, db),
            database=db, tables=lambda: [(t.schema, t.name) for t in self.tables], connect=connect,
            fetch_size=config.fetch_size, chunk_size=int(values.get("incremental.snapshot.chunk.size") or 1024),
            state=IncrementalState.from_offset(stored_offset), blocking=StoredBlocking.from_offset(stored_offset),
            pause_scn=lambda: self._pause_scn)
        self.signals.chunks.announced = self._announced

    def report_snapshots(self, listener: SnapshotListener) -> None:
        """Send signalled snapshots' progress to ``listener`` (`ReportsSnapshots`)."""
        self.signals.driver.listen(listener)

    def _resumes(self) -> bool:
        """Whether this run continues from a stored offset with the recorded structures (not after
        an interrupted snapshot, nor with ``snapshot.mode=recovery``, which records them again)."""
        o = self.offset
        return (o is not None and o.scn is not None and not (o.snapshot is not None and not o.snapshot_completed)
                and self.config.snapshot_mode != "recovery")

    def _snapshot_scn(self) -> int:
        """The snapshot's SCN S, taken when the tables' structures read from the dictionary are
        those in force at S: the dictionary is read again after S, and while it differs from the
        structures known (a DDL committed meanwhile, or structures restored from the history for
        ``always``/``when_needed``), the tables are taken from it and S is taken again. A DDL
        after S is mined."""
        for _ in range(_SNAPSHOT_ATTEMPTS):
            scn = self._scn()
            if self._tables_from_dictionary():
                return scn
        raise OracleStreamError(f"source {self.config.name}: the captured tables' structures changed during each "
                                f"of {_SNAPSHOT_ATTEMPTS} attempts to start the snapshot; retry when no DDL runs")

    def _tables_from_dictionary(self) -> bool:
        """Take the tables from the dictionary; whether they were already known so."""
        now = {(t.schema, t.name): t for t in self._captured_tables()}
        if now == {(t.schema, t.name): t for t in self.tables}:
            return True
        for t in self.tables:
            if (t.schema, t.name) not in now:
                self.maker.set_table(t.schema, t.name, None)
        for (owner, name), table in now.items():
            self.maker.set_table(owner, name, table)
        self.tables = [now[k] for k in sorted(now)]
        return False

    def _captured_tables(self) -> list[OracleTable]:
        out = []
        for owner, name in self.gateway.columns(gw.CAPTURABLE_TABLES)[1]:
            if not self.config.tables.includes_table(owner, name):
                continue
            columns = self.gateway.columns(gw.TABLE_COLUMNS, (owner, name))[1]
            key = [k for (k,) in self.gateway.columns(gw.PRIMARY_KEY, (owner, name))[1]]
            out.append(table_of(owner, name, columns, key))
        return out

    # -- the plan ----------------------------------------------------------------------------

    def plan(self) -> SnapshotPlan:
        """``snapshot.mode`` against the stored offset (Debezium 3.6.3's snapshotters, `plan_snapshot`).

        ``when_needed`` also snapshots when the stored SCN is no longer in the redo or archive
        logs; ``recovery`` streams like ``no_data`` after recording the captured tables' current
        structures in the schema history again (see `stream`)."""
        mode = self.config.snapshot_mode
        o = self.offset
        exists = o is not None and o.scn is not None
        running = exists and o is not None and o.snapshot is not None and not o.snapshot_completed
        available = True
        if exists and not running and mode == "when_needed":
            assert o is not None and o.scn is not None
            available = bool(self.gateway.columns(gw.minable_logs(o.scn))[1])
        state = StoredState(offset_exists=exists, snapshot_completed=exists and not running,
                            offset_available=available)
        plan = plan_snapshot("no_data" if mode == "recovery" else mode, state)
        if not plan.snapshot_data:
            where = f"resuming from SCN {o.scn}" if exists and o is not None else "streaming from the current SCN"
            plan = replace(plan, reason=f"{plan.reason}: {where}")
        if plan.snapshot_data:
            plan = replace(plan, reason=f"{plan.reason}: snapshot of {len(self.tables)} table(s)")
        return plan

    # -- the snapshot ------------------------------------------------------------------------

    def _scn(self) -> int:
        ((scn,),) = self.gateway.columns(gw.CURRENT_SCN)[1]
        return int(scn)

    def snapshot(self) -> Iterator[StreamItem]:
        self.signals.driver.state = None  # this snapshot reads every table anew: a stored incremental one is moot
        self.signals.blocking.interrupted = None  # and so is an interrupted blocking one
        scn = self._snapshot_scn()
        pending = {str(x): int(s) for x, s in self.gateway.columns(gw.OPEN_TRANSACTIONS)[1]}
        start = min([*pending.values(), scn + 1]) - 1
        running = OracleOffset(scn=start, snapshot="INITIAL", snapshot_scn=scn)
        position = dumps(running.to_dict())
        ts_ms = time.time_ns() // 1_000_000
        yield self._start_records(running, scn, ts_ms, "true")
        for index, table in enumerate(self.tables):
            version = self.maker.schema_version(table)
            self._announced.add(version.schema_id)
            yield version
            names = [c.name for c in table.columns]
            rows = self.gateway.rows(gw.snapshot_select(table.schema, table.name, names, scn))
            count = 0
            batch: list[ChangeRecord] = []
            current = next(rows, None)
            while current is not None:
                following = next(rows, None)
                last_table, last = following is None, following is None and index == len(self.tables) - 1
                marker = ("last" if last else "first" if index == 0 and count == 0
                          else "first_in_data_collection" if count == 0
                          else "last_in_data_collection" if last_table else "true")
                try:
                    values = tuple(redo_value(c, v) for c, v in zip(table.columns, current, strict=True))
                    rec = self.maker.read_record(table, values, snapshot_scn=scn, ts_ms=ts_ms, marker=marker)
                except _BAD_INPUT as exc:
                    raise OracleStreamError(f"source {self.config.name}: snapshot of {table.schema}.{table.name}: "
                                            f"{exc}") from None
                batch.append(self._record(rec, version, position, (scn + 1, -1, index, count)))
                count += 1
                if len(batch) >= 1000:
                    yield batch
                    batch = []
                    yield SnapshotProgress(f"{table.schema}.{table.name}", count, index, len(self.tables))
                current = following
            if batch:
                yield batch
            yield SnapshotProgress(f"{table.schema}.{table.name}", count, index + 1, len(self.tables), table_done=True)
        self.offset = OracleOffset(scn=start, snapshot_scn=scn)
        yield Checkpoint(self.offset)

    # -- streaming ---------------------------------------------------------------------------

    def _start_records(self, offset: OracleOffset, scn: int, ts_ms: int, snapshot: str) -> list[ChangeRecord]:
        """The history record (and schema change event) of each captured table's structure at the start."""
        position = {**offset.to_dict(), "snapshot": "INITIAL"}
        out: list[ChangeRecord] = []
        for k, t in enumerate(self.tables):
            event = OracleEvent(schema=t.schema, table=t.name, ts_ms=ts_ms, scn=scn, snapshot=snapshot)
            out += self.schema_records.records(create_table_ddl(t), "CREATE", t.schema, t.name, t, position=position,
                                               order_key=(scn, -1, k), event=event)
        return out

    def stream(self, *, until_idle: bool) -> Iterator[StreamItem]:
        """The mined changes with signals applied and incremental snapshot rows added (`OracleSignals`)."""
        return self.signals.wrap(self._mine(until_idle=until_idle))

    def _stream_start(self) -> Generator[StreamItem, None, OracleOffset]:
        """The records of the start (the structures, when recorded now) and the offset mining starts from."""
        if self.offset is None or self.offset.scn is None:  # no_data without an offset: record the structures
            scn = self._scn()
            yield self._start_records(OracleOffset(scn=scn), scn, time.time_ns() // 1_000_000, "false")
            offset = OracleOffset(scn=scn)
        else:
            offset = self.offset
            if self.config.snapshot_mode == "recovery" and offset.snapshot is None:
                # the structures of the dictionary (read at the start) recorded again, after every
                # record of the history; newer than any DDL record the offset has handled
                scn = self._scn()
                yield self._start_records(offset, scn + 1, time.time_ns() // 1_000_000, "false")
        offset = replace(offset, snapshot=None, snapshot_completed=False, snapshot_pending_tx={})
        self.offset = offset
        return offset

    def _mine(self, *, until_idle: bool) -> Iterator[StreamItem]:
        offset = yield from self._stream_start()
        assert offset.scn is not None
        low = offset.scn
        opts = self.config.mining
        buffer = TransactionBuffer(username_include=opts.username_include, username_exclude=opts.username_exclude,
                                   lob_enabled=opts.lob_enabled)
        ranks: dict[int, int] = {}
        while True:
            high = self._scn()
            if high <= low:
                self._pause_scn = low  # nothing committed above it: everything at or below it is handed out
                yield Checkpoint(offset, idle=True)
                if until_idle and not self.signals.busy():
                    return
                time.sleep(self.config.poll_interval_s)
                continue
            logs = self.gateway.columns(gw.minable_logs(low))[1]
            if not logs:
                raise SourceError(f"SCN {low} is no longer in the redo or archive logs: the offset cannot be "
                                  "resumed; set snapshot.mode=when_needed (or always) to take a new snapshot")
            for i, entry in enumerate(logs):
                self.gateway.call(gw.add_logfile(str(entry[0]), i == 0))
            self.gateway.call(gw.start_logmnr(low, high))
            try:
                for values in self.gateway.rows(gw.mining(self.query), (low, high)):
                    try:
                        committed = buffer.feed(self._row(values))
                    except _BAD_INPUT as exc:
                        raise OracleStreamError(f"source {self.config.name}: {exc}") from None
                    for tx in committed:
                        rank = ranks[tx.commit_scn] = ranks.get(tx.commit_scn, -1) + 1
                        emit = not self._already_emitted(offset, tx)
                        if emit:  # a skipped one is not recorded: the commit SCN never moves back
                            offset = offset.with_commit(tx.thread, tx.commit_scn, tx.xid)
                        offset = replace(offset, scn=_restart(buffer, tx.commit_scn))
                        if emit:
                            yield from (self._ddl(tx, offset, rank) if _is_ddl(tx)
                                        else self._transaction(tx, offset, rank))
                        self.offset = offset
                        self._pause_scn = None  # inside a window: no pause here (commits may share its SCN)
                        yield Checkpoint(offset)
            finally:
                self.gateway.call(gw.end_logmnr())
            low = high
            offset = replace(offset, scn=_restart(buffer, high + 1))
            self.offset = offset
            self._pause_scn = high
            yield Checkpoint(offset)

    def _already_emitted(self, offset: OracleOffset, tx: CommittedTransaction) -> bool:
        if offset.snapshot_scn is not None and tx.commit_scn <= offset.snapshot_scn:
            return True  # committed before the snapshot: its changes are in it
        return offset.handled(tx.thread, tx.commit_scn, tx.xid)

    def _ddl(self, tx: CommittedTransaction, offset: OracleOffset, rank: int) -> list[StreamItem]:
        """A DDL statement on a captured table: the table's new structure (and schema version),
        its history record and schema change event. Other DDL makes nothing."""
        row = tx.changes[0].row
        sql = (row.sql_redo or "").strip()
        default_owner = row.seg_owner or tx.user_name or ""
        target = ddl_target(sql, default_owner)
        if target is None or not self.config.tables.includes_table(target[1], target[2]):
            return []
        _, owner, name = target
        try:
            outcome = apply_ddl(sql, default_owner, self.maker.table(owner, name))
        except OracleDdlError as exc:
            where = f"SCN {row.scn} (XID {tx.xid})"
            if self.config.skip_unparseable_ddl:
                log.warning("source %s: skipping DDL the connector cannot read at %s: %s", self.config.name, where, exc)
                return []
            raise OracleStreamError(
                f"source {self.config.name}: cannot apply the DDL at {where} to {owner}.{name}: {exc}. The table's "
                "columns would be wrong from here on; set schema.history.internal.skip.unparseable.ddl=true to skip "
                "it") from None
        if outcome.kind is DdlKind.OTHER:
            return []
        self.maker.set_table(owner, name, outcome.table)
        out: list[StreamItem] = []
        if outcome.table is not None:
            version = self.maker.schema_version(outcome.table)
            if outcome.renamed:
                version = replace(version, renamed_columns=outcome.renamed)
            self._announced.add(version.schema_id)
            out.append(version)
        offset_ms = self.config.envelope.database_offset
        event = OracleEvent(schema=owner, table=name, ts_ms=utc_ms(row.timestamp, offset_ms), scn=row.scn,
                            commit_scn=tx.commit_scn, xid=tx.xid, user_name=tx.user_name, rs_id=row.rs_id,
                            redo_thread=row.thread, commit_ts_ms=utc_ms(tx.commit_time, offset_ms))
        out.append(self.schema_records.records(sql, outcome.kind.value, owner, name, outcome.table,
                                               position={**offset.to_dict(), "txId": tx.xid},
                                               order_key=(tx.commit_scn, rank, 0), event=event))
        return out

    def _transaction(self, tx: CommittedTransaction, offset: OracleOffset, rank: int) -> list[StreamItem]:
        position = dumps({**offset.to_dict(), "txId": tx.xid})
        out: list[ChangeRecord] = []
        versions: list[StreamItem] = []
        try:
            made = self.maker.transaction(tx)
        except _BAD_INPUT as exc:
            raise OracleStreamError(f"source {self.config.name}: transaction {tx.xid} committed at SCN "
                                    f"{tx.commit_scn}: {exc}") from None
        meta = None if self._tx_metadata is None else self._tx_metadata.records(
            tx, made, position=position, order=(tx.commit_scn, rank))
        for i, rec in enumerate(made):
            version = self.maker.schema_version(rec.table)
            if version.schema_id not in self._announced:
                self._announced.add(version.schema_id)
                versions.append(version)
            block = None if meta is None or rec.value is None else meta.blocks[i]
            with_block = rec if block is None else replace(rec, value={**(rec.value or {}), "transaction": block})
            out.append(self._record(with_block, version, position, (tx.commit_scn, rank, i)))
        if meta is not None and meta.begin is not None and meta.end is not None:
            out = [meta.begin, *out, meta.end]
        return [*versions, out] if out else versions

    def _record(self, rec: OracleRecord, version: SchemaVersion, position: str,
                order_key: tuple[int, ...]) -> ChangeRecord:
        key = None if rec.key is None else dumps(rec.key)
        headers = dict(rec.headers) if rec.headers else None
        if rec.kind is EventKind.TOMBSTONE or rec.value is None:
            return ChangeRecord(version.topic, key, None, None, position, order_key, version.schema_id, headers)
        v = rec.value
        value = envelope(v["before"], v["after"], v["source"], v["op"], v["transaction"])
        return ChangeRecord(version.topic, key, value, v["op"], position, order_key, version.schema_id, headers)

    def _row(self, values: tuple[Any, ...]) -> LogMinerRow:
        r = dict(zip(self._columns, values, strict=True))
        return LogMinerRow(
            scn=int(r["SCN"]), operation_code=int(r["OPERATION_CODE"]), xid=_xid(r["XID"]), sql_redo=r["SQL_REDO"],
            timestamp=r["TIMESTAMP"], csf=bool(r["CSF"]), table_name=r["TABLE_NAME"], seg_owner=r["SEG_OWNER"],
            operation=str(r["OPERATION"] or ""), username=r.get("USERNAME"), row_id=r["ROW_ID"],
            rollback=bool(r["ROLLBACK"]), rs_id=r.get("RS_ID"), status=int(r["STATUS"] or 0), info=r["INFO"],
            ssn=int(r["SSN"] or 0), thread=int(r["THREAD#"] or 1))

    # -- the rest of the SPI -----------------------------------------------------------------

    def acknowledge(self, offset: SourceOffset) -> None:
        """Oracle keeps its redo by its own retention: nothing to acknowledge."""

    def offset_of(self, position: str) -> OracleOffset:
        data = orjson.loads(position)
        if not isinstance(data, dict) or "scn" not in data:
            raise ValueError(f"not an Oracle position: {position[:200]!r}")
        return OracleOffset.from_dict(data)

    def close(self) -> None:
        self.signals.close()
        self.gateway.close()


def _xid(value: Any) -> str:
    """LogMiner's ``XID`` (``RAW(8)``: bytes from the driver) as 16 lower-case hex digits."""
    return value.hex() if isinstance(value, bytes) else str(value).lower()


def _is_ddl(tx: CommittedTransaction) -> bool:
    return len(tx.changes) == 1 and tx.changes[0].kind is ChangeKind.DDL


def _restart(buffer: TransactionBuffer, bound: int) -> int:
    """The SCN mining restarts after: before the oldest open transaction, else before ``bound``."""
    return min([*buffer.open_transactions.values(), bound]) - 1


