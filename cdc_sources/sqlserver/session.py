"""One run of the SQL Server connector: plan, snapshot, then stream by polling the change tables.

Everything reaches the server through the `Gateway` (catalogue statements only):

- **plan**: ``snapshot.mode`` against the stored offset (`plan_snapshot`); an interrupted
  snapshot is taken again;
- **snapshot**: in one transaction at ``snapshot.isolation.mode`` (``exclusive`` and
  ``repeatable_read`` first lock each captured table with ``TABLOCKX`` after ``SET LOCK_TIMEOUT``,
  as Debezium does; the locks are kept to the end of the snapshot in both modes, where Debezium
  releases them after the schema read in ``repeatable_read`` through a savepoint), the maximum
  LSN is read first and every captured table is read once (through its newest capture instance)
  as ``r`` records marked ``first``/``first_in_data_collection``/``true``/
  ``last_in_data_collection``/``last``; the checkpoint after the last row stores that LSN with
  ``snapshot_completed``;
- **stream**: every ``poll.interval.ms`` the maximum LSN is read; when it moved, each capture
  instance's rows between its own lower bound (the LSN after the snapshot's, the stored commit
  LSN, or the instance's minimum LSN, whichever is highest) and the maximum are read
  (``data.query.mode``), merged, and turned into events by the change-stream core
  (`ChangeStream`), which also skips what a restart already emitted. A checkpoint follows each
  transaction's last event (a commit LSN ends), so bronze commits hold whole transactions and
  the stored offset is exactly the one Debezium stores.

Also: the column options (`cdc_sources.sqlserver.columns`), transaction metadata
(`cdc_sources.common.transactions`: BEGIN/END around each transaction's events, in its bronze
commit), heartbeats at idle points (after ``heartbeat.action.query``), and capture instances
followed while streaming: each poll that finds changes reads them again, a new instance's schema
version is written at once and the ``ALTER`` schema change event
(`cdc_sources.sqlserver.schema_changes`) just before its first event; a disabled instance whose
table has another one is dropped from the reads.

The snapshot writes a ``CREATE`` schema change event per table before its rows.

Signals and incremental snapshots (``signal.data.collection``, `cdc_sources.sqlserver.incremental`)
wrap the stream (`cdc_sources.common.incremental_snapshot`): signals come from the signal table's
change rows; the snapshot's progress rides in the offset; an ``--until-idle`` run polls on while
a snapshot is running. Blocking snapshots (`cdc_sources.sqlserver.blocking`) run at transaction ends.

A session captures one database (``database``); several in ``database.names`` are driven
by `cdc_sources.sqlserver.databases.MultiDatabaseSession`, one session per database.

Each schema change event also goes to the connector's private history
(`cdc_sources.sqlserver.history`); at a start from a stored offset, a captured table the
history does not record (its capture enabled while the connector was stopped) gets its ``CREATE``
schema change event before anything is streamed, as Debezium emits it, and is not snapshotted
(its changes stream from its capture instance's start).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Generator, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC
from typing import Any

import orjson

from cdc_sources.common.blocking_snapshot import BlockingSnapshotter, StoredBlocking
from cdc_sources.common.envelope import dumps, envelope, envelope_schema_version, envelope_text
from cdc_sources.common.incremental_snapshot import IncrementalSnapshotter
from cdc_sources.common.incremental_state import IncrementalState
from cdc_sources.common.signal_options import SignalChannel, signal_settings
from cdc_sources.common.signals import CollectionName
from cdc_sources.common.snapshot_plan import StoredState, plan_snapshot
from cdc_sources.common.transactions import TransactionBlock, TransactionTracker
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
from cdc_sources.spi.snapshot_progress import SnapshotListener
from cdc_sources.sqlserver.blocking import SqlServerBlockingSource
from cdc_sources.sqlserver.changes import (
    CaptureInstance,
    ChangeEvent,
    ChangeStream,
    EventKind,
    SchemaSwitch,
    TableId,
    merge_rows,
)
from cdc_sources.sqlserver.columns import ColumnPolicy, TableFields, jdbc_metadata
from cdc_sources.sqlserver.config import SqlServerSourceConfig
from cdc_sources.sqlserver.converters import ConverterSettings, SqlServerColumn, column_converter
from cdc_sources.sqlserver.defaults import schema_default
from cdc_sources.sqlserver.gateway import CaptureInstanceInfo, ColumnInfo, Gateway
from cdc_sources.sqlserver.history import history_record, recorded_tables
from cdc_sources.sqlserver.incremental import CapturedTable, SqlServerChunkSource
from cdc_sources.sqlserver.lsn import Lsn
from cdc_sources.sqlserver.offset import SnapshotType, SqlServerOffset
from cdc_sources.sqlserver.schema_changes import SchemaChangeType, SchemaColumn, schema_change_value
from cdc_sources.sqlserver.source_info import SOURCE_SCHEMA, SnapshotRecord, SqlServerSource

__all__ = ["OffsetCarrier", "SqlServerCaptureSession", "order_key"]

log = logging.getLogger(__name__)

_AFTER_ALL = 2**63 - 1
"""An order-key element above every serial: a heartbeat sorts after the events of its offset."""
_AFTER_OFFSET = 2**62
"""An index above every record of one serial: the start's ``CREATE`` events sort after the stored
offset's event and before the next one."""
_AFTER_START = _AFTER_OFFSET + 2**61
"""Above the start's ``CREATE`` events: a table's first capture instance found at the first poll."""


@dataclass(frozen=True)
class OffsetCarrier:
    """A `SourceOffset` around `SqlServerOffset` (the bronze writer stores ``to_dict``)."""

    offset: SqlServerOffset

    def to_dict(self) -> dict[str, Any]:
        return self.offset.to_map()


def _lsn_parts(lsn: Lsn) -> tuple[int, int]:
    return lsn.halves()


def order_key(commit: Lsn, change: Lsn, serial: int, index: int) -> tuple[int, ...]:
    """A record's order key: commit LSN, change LSN (each as 8 + 2 bytes), serial, index among the
    records sharing that serial (a key change's ``d``, tombstone, ``c``). Snapshot records use the
    snapshot's LSN with a NULL change LSN (below every streamed change of that LSN)."""
    return (*_lsn_parts(commit), *_lsn_parts(change), serial, index)


@dataclass
class _Table:
    """A captured capture instance with its converters and schema version."""

    instance: CaptureInstance
    topic: str
    fields: TableFields
    version: SchemaVersion
    columns: tuple[SchemaColumn, ...]
    primary_key: tuple[str, ...]


class SqlServerCaptureSession:
    """Implements `cdc_sources.spi.CaptureSession` for SQL Server. Not thread-safe."""

    def __init__(self, config: SqlServerSourceConfig, gateway: Gateway, stored_offset: Mapping[str, Any] | None,
                 *, sleep: Callable[[float], bool] | None = None, database: str | None = None,
                 open_gateway: Callable[[], Gateway] | None = None, history: Sequence[HistoryEntry] = ()) -> None:
        """``open_gateway``: opens another connection to the server, for the incremental
        snapshot's statements (default: ``gateway``'s, for a test that drives the session).
        ``history``: the connector's history records bronze holds (`cdc_sources.sqlserver.history`)."""
        self.config = config
        self.gateway = gateway
        self.stored = SqlServerOffset.load(stored_offset) if stored_offset else None
        self.incremental_state = IncrementalState.from_offset(stored_offset)
        self.blocking_stored = StoredBlocking.from_offset(stored_offset)
        self.incremental: IncrementalSnapshotter | None = None
        self.file_signals = True
        """Whether this session reads the ``file`` signal channel itself (a several-database
        session reads it once for all its databases)."""
        self._open_gateway = open_gateway
        self._side: Gateway | None = None
        self._listener: SnapshotListener | None = None
        self._sleep = sleep or threading.Event().wait
        databases = config.connection.databases
        if database is None and len(databases) > 1:
            raise SourceError(f"source {config.name}: a session captures one database; "
                              "several in database.names go through SqlServerConnector.open")
        self.database = database or (databases[0] if databases else gateway.database_name())
        gateway.use_database(self.database)
        if not gateway.cdc_enabled(self.database):
            raise SourceError(f"source {config.name}: database {self.database} (in database.names) is not enabled "
                              "for change data capture: run EXEC sys.sp_cdc_enable_db in it, then enable its "
                              "tables with sys.sp_cdc_enable_table, or remove it from database.names")
        self.settings = ConverterSettings(config.opt("decimal.handling.mode"), config.opt("time.precision.mode"),
                                          config.opt("binary.handling.mode"))
        self.columns = ColumnPolicy.from_options(config.options.raw, config.columns)
        self.tables = self._tables()
        self.recorded = recorded_tables(history, self.database, self.stored)
        self._snapshot_lsn: Lsn | None = None
        self._last_heartbeat = time.monotonic()  # the heartbeat interval runs from the connection on
        self._transactions = TransactionTracker(
            topic=f"{config.name}{config.opt('topic.delimiter')}{config.opt('topic.transaction')}",
        ) if config.opt("provide.transaction.metadata") else None
        self._source_texts: dict[tuple[str, int, SnapshotRecord], str] = {}
        self._core: ChangeStream | None = None
        self._start = Lsn.NULL
        self._last = SqlServerOffset(Lsn.NULL)
        for warning in config.warnings:
            log.warning("source %s: %s", config.name, warning)

    # -- schema ----------------------------------------------------------------------------
    def _topic(self, table: TableId) -> str:
        d = str(self.config.opt("topic.delimiter"))
        return d.join((self.config.name, table.database, table.schema, table.table))

    def _tables(self) -> dict[str, _Table]:
        return {info.name: self._table(info) for info in self._captured_infos()}

    def _captured_infos(self) -> list[CaptureInstanceInfo]:
        """The capture instances of the tables ``table.include.list``/``exclude.list`` keep."""
        return [info for info in self.gateway.capture_instances()
                if self.config.tables.includes_table(info.source_schema, info.source_table)]

    def _table(self, info: CaptureInstanceInfo) -> _Table:
        columns = {c.name: c for c in self.gateway.table_columns(info.source_schema, info.source_table)}
        override = self.config.keys.for_table(info.source_schema, info.source_table, info.captured_columns,
                                              catalog=self.database)
        instance = info.capture_instance(self.database, override)
        missing = [c for c in instance.columns if c not in columns]
        if missing:
            raise SourceError(f"capture instance {info.name} captures column(s) {missing} that the source table "
                              f"{info.source_schema}.{info.source_table} no longer has; create a new capture "
                              "instance for the table's current columns")
        converters = {c: column_converter(_column(columns[c]), self.settings) for c in instance.columns}
        metadata = {c: jdbc_metadata(columns[c].type_name, columns[c].max_length, columns[c].precision,
                                     columns[c].scale) for c in instance.columns}
        parse = self.gateway.parse_default
        defaults = {c: schema_default(c, columns[c].type_name, columns[c].default, converter, parse)
                    for c, converter in converters.items() if converter is not None}
        fields = self.columns.fields(instance, converters, metadata, {c: columns[c].nullable for c in instance.columns},
                                     defaults)
        topic = self._topic(instance.table)
        described = tuple(SchemaColumn(c, metadata[c], columns[c].nullable, columns[c].default)
                          for c in instance.columns)
        return _Table(instance, topic, fields, self._version(topic, instance, fields), described, info.index_columns)

    @staticmethod
    def _version(topic: str, instance: CaptureInstance, fields: TableFields) -> SchemaVersion:
        return envelope_schema_version(topic=topic, table=f"{instance.table.schema}.{instance.table.table}",
                                       fields=[f.schema for f in fields.values],
                                       key_fields=[f.schema for f in fields.keys], key_names=instance.key_columns,
                                       source_schema={**SOURCE_SCHEMA, "field": "source"})

    # -- plan ------------------------------------------------------------------------------
    def plan(self) -> SnapshotPlan:
        stored = self.stored
        available = True
        if stored is not None and not stored.snapshot_running and stored.commit_lsn.available:
            # a NULL commit LSN (a snapshot taken before anything was captured) reads every
            # instance from its minimum LSN
            # a table is readable from the offset when one of its instances still holds it: a
            # newer instance (a schema change) starts later, and the older one covers the offset
            covered: dict[TableId, bool] = {}
            new = self._new_tables()
            for name, t in self.tables.items():
                if t.instance.table in new:
                    continue  # new to the capture: streamed from its instance's start (see stream_start)
                low = self.gateway.min_lsn(name)
                holds = not low.available or low == Lsn(bytes(10)) or stored.commit_lsn >= low
                covered[t.instance.table] = covered.get(t.instance.table, False) or holds
            available = all(covered.values())
        state = StoredState(offset_exists=stored is not None,
                            snapshot_completed=stored is not None and not stored.snapshot_running,
                            offset_available=available)
        cb = {k.removeprefix("snapshot.mode.configuration.based."): bool(v)
              for k, v in self.config.options.values.items() if k.startswith("snapshot.mode.configuration.based.")}
        mode = str(self.config.opt("snapshot.mode"))
        plan = plan_snapshot("no_data" if mode == "recovery" else mode, state, cb)
        if not plan.snapshot_data and stored is not None and not available:
            raise SourceError(f"source {self.config.name}: the stored commit LSN {stored.commit_lsn} is below a "
                              "capture instance's minimum LSN (the CDC cleanup job removed changes not yet captured): "
                              "set "
                              "snapshot.mode=when_needed (or always) to take a new snapshot")
        return plan

    # -- snapshot --------------------------------------------------------------------------
    def snapshot(self) -> Iterator[StreamItem]:
        gw = self.gateway
        mode = str(self.config.opt("snapshot.isolation.mode"))
        newest: dict[TableId, _Table] = {}
        for t in self.tables.values():
            held = newest.get(t.instance.table)
            if held is None or t.instance.start_lsn > held.instance.start_lsn:
                newest[t.instance.table] = t
        tables = list(newest.values())
        gw.begin_snapshot(mode)
        try:
            if mode in ("exclusive", "repeatable_read"):
                gw.set_lock_timeout(int(self.config.opt("snapshot.lock.timeout.ms")))
                for t in tables:
                    gw.lock_table(t.instance.table.schema, t.instance.table.table)
            point = gw.max_lsn()
            self._snapshot_lsn = point
            running = SqlServerOffset(point, snapshot=SnapshotType.INITIAL)
            position = dumps(running.to_map())
            for t in tables:
                yield t.version
            ts_ns = time.time_ns()
            for n, t in enumerate(tables):
                yield from self._recorded(self._create_record(t, point, position, ts_ns, n))
            for n, t in enumerate(tables):
                rows = yield from self._snapshot_table(t, n, tables, point, position)
                yield SnapshotProgress(f"{t.instance.table.schema}.{t.instance.table.table}", rows, n + 1,
                                       len(tables), table_done=True)
        finally:
            gw.end_snapshot()
        yield Checkpoint(OffsetCarrier(SqlServerOffset(point, snapshot=SnapshotType.INITIAL, snapshot_completed=True)))

    def _snapshot_table(self, t: _Table, n: int, tables: Sequence[_Table], point: Lsn,
                        position: str) -> Generator[StreamItem, None, int]:
        """The table's ``r`` records; returns how many."""
        table = t.instance.table
        rows = self.gateway.snapshot_rows(table.schema, table.table, t.instance.columns)
        ts_ns = time.time_ns()
        previous: tuple[Any, ...] | None = None
        index = 0
        for row in rows:
            if previous is not None:
                yield self._read_record(t, previous, n, index, point, position, ts_ns, first=index == 0,
                                        last_in_table=False, last=False, first_overall=n == 0 and index == 0)
                index += 1
            previous = row
        if previous is not None:
            yield self._read_record(t, previous, n, index, point, position, ts_ns, first=index == 0,
                                    last_in_table=True, last=n == len(tables) - 1,
                                    first_overall=n == 0 and index == 0)
            return index + 1
        return 0

    def _read_record(self, t: _Table, row: tuple[Any, ...], n: int, index: int, point: Lsn, position: str,
                     ts_ns: int, *, first: bool, last_in_table: bool, last: bool,
                     first_overall: bool) -> ChangeRecord:
        marker = (SnapshotRecord.LAST if last else SnapshotRecord.FIRST if first_overall
                  else SnapshotRecord.FIRST_IN_DATA_COLLECTION if first
                  else SnapshotRecord.LAST_IN_DATA_COLLECTION if last_in_table else SnapshotRecord.TRUE)
        source = self._source_texts.get((t.instance.name, ts_ns, marker))
        if source is None:  # one text per table and marker: rendered once, not per row
            table = t.instance.table
            self._source_texts = {k: v for k, v in self._source_texts.items() if k[1] == ts_ns}
            source = self._source_texts[(t.instance.name, ts_ns, marker)] = dumps(SqlServerSource(
                self.config.name, ts_ns, table.database, table.schema, table.table, point, snapshot=marker).payload())
        key = t.instance.key_of(row)
        key_text = None if key is None else dumps(_key(t, key))
        value = envelope_text("null", dumps(t.fields.row(row)), source, "r", "null")
        return ChangeRecord(t.topic, key_text, value, "r", position, (*_lsn_parts(point), 0, 0, n, index),
                            t.version.schema_id)

    # -- streaming -------------------------------------------------------------------------
    def stream(self, *, until_idle: bool) -> Iterator[StreamItem]:
        incremental = self._incremental()
        if incremental is None:
            yield from self._stream(until_idle=until_idle, busy=lambda: False)
        else:
            yield from incremental.wrap(self._stream(until_idle=until_idle, busy=incremental.busy))

    def rounds(self, round_end: Callable[[], None]) -> Iterator[StreamItem]:
        """The stream without end for a caller that interleaves it with others' (several
        databases): `stream_start`, then one `poll` after another, with signals and incremental
        snapshots applied; ``round_end`` is called just before each poll's last (idle)
        checkpoint is passed on, so the caller stops pulling once it comes out."""
        incremental = self._incremental()

        def polls() -> Iterator[StreamItem]:
            yield from self.stream_start()
            while True:
                pending: StreamItem | None = None
                for item in self.poll():
                    if pending is not None:
                        yield pending
                    pending = item
                round_end()
                if pending is not None:
                    yield pending

        return polls() if incremental is None else incremental.wrap(polls())

    def busy(self) -> bool:
        """Whether a signalled snapshot is running (an ``--until-idle`` run waits for it)."""
        return self.incremental is not None and self.incremental.busy()

    def _stream(self, *, until_idle: bool, busy: Callable[[], bool]) -> Iterator[StreamItem]:
        yield from self.stream_start()
        poll_s = int(self.config.opt("poll.interval.ms")) / 1000
        while True:
            yield from self.poll()
            if until_idle and not busy():  # a running incremental snapshot is not idle
                return
            if self._sleep(poll_s):
                return

    # -- signals and incremental snapshots ---------------------------------------------------
    def report_snapshots(self, listener: SnapshotListener) -> None:
        """Send signalled snapshots' progress to ``listener`` (`ReportsSnapshots`)."""
        self._listener = listener
        if self.incremental is not None:
            self.incremental.listen(listener)

    def _incremental(self) -> IncrementalSnapshotter | None:
        """Signals and incremental snapshots over the stream, when a signal table is set."""
        signal_table = self.config.signal_table_for(self.database)
        if self.incremental is None and signal_table is not None:
            if self._side is None:
                self._side = self._open_gateway() if self._open_gateway is not None else self.gateway
                if self._side is not self.gateway:
                    self._side.use_database(self.database)
            if not any((t.instance.table.schema, t.instance.table.table) == (signal_table.schema, signal_table.table)
                       for t in self.tables.values()):
                log.warning("signal table %s has no capture instance: its signals and an incremental snapshot's "
                            "watermarks never reach the connector; enable change data capture on it (EXEC "
                            "sys.sp_cdc_enable_table @source_schema = N'%s', @source_name = N'%s', "
                            "@role_name = NULL)", signal_table.text, signal_table.schema, signal_table.table)
            d = str(self.config.opt("topic.delimiter"))
            source = SqlServerChunkSource(gateway=self._side, tables=self.snapshot_tables, name=self.config.name,
                                          database=self.database, signal_table=signal_table)
            signals = replace(signal_settings(self.config.options.values), table=CollectionName(
                signal_table.text, (signal_table.database, signal_table.schema, signal_table.table), True))
            if not self.file_signals:  # read by the several-database session, once for all (see databases.py)
                signals = replace(signals, channels=signals.channels - {SignalChannel.FILE})
            self.incremental = IncrementalSnapshotter(
                source=source, signals=signals,
                tables=lambda: list(self.snapshot_tables()), prefix=self.config.name, delimiter=d,
                chunk_size=int(self.config.opt("incremental.snapshot.chunk.size")),
                # a snapshot taken by this run read every table anew: an older incremental one is moot
                state=self.incremental_state if self._snapshot_lsn is None else None, listener=self._listener,
                blocking=BlockingSnapshotter(SqlServerBlockingSource(source),
                                             self.blocking_stored if self._snapshot_lsn is None else None,
                                             qualifier=self.database),
                signal_topic=d.join((self.config.name, self.database, signal_table.schema, signal_table.table)),
                qualifier=self.database)
        return self.incremental

    def snapshot_tables(self) -> dict[tuple[str, str], CapturedTable]:
        """The captured tables an incremental snapshot may read (not the signal table), each with
        its newest capture instance."""
        signal = self.config.signal_table_for(self.database)
        out: dict[tuple[str, str], _Table] = {}
        for t in self.tables.values():
            name = (t.instance.table.schema, t.instance.table.table)
            if signal is not None and name == (signal.schema, signal.table):
                continue
            held = out.get(name)
            if held is None or t.instance.start_lsn > held.instance.start_lsn:
                out[name] = t
        return dict(out)

    def stream_start(self) -> Iterator[StreamItem]:
        """Sets the stream up at the resume point (the snapshot's LSN or the stored offset) and
        yields the tables' schema versions; `poll` then reads."""
        resume = self._resume()
        self._core = ChangeStream([t.instance for t in self.tables.values()],
                                  tombstones_on_delete=bool(self.config.opt("tombstones.on.delete")),
                                  skipped=self.config.skipped_operations,
                                  skip_unchanged=bool(self.config.opt("skip.messages.without.change")),
                                  resume=resume if resume.change_lsn.available else None,
                                  current=self._current_instances(resume.commit_lsn))
        for t in self.tables.values():
            yield t.version
        if self._snapshot_lsn is None:
            yield from self._start_records(resume)
        # the first LSN still to read: after a snapshot, the LSN after its maximum; after a
        # streamed event, its commit LSN again (the core skips what was emitted)
        self._start = resume.commit_lsn if resume.change_lsn.available else (
            self.gateway.increment_lsn(resume.commit_lsn) if resume.commit_lsn.available else Lsn.NULL)
        self._last = resume

    def poll(self) -> Iterator[StreamItem]:
        """One streaming iteration (after `stream_start`): the changes up to the current maximum
        LSN, a heartbeat when due, then an idle checkpoint."""
        core, start = self._core, self._start
        if core is None:
            raise RuntimeError("poll() before stream_start()")
        heartbeat_s = int(self.config.opt("heartbeat.interval.ms")) / 1000
        high = self.gateway.max_lsn()
        if high.available and (not start.available or high >= start):
            yield from self._new_instances(core, start, self._last)
            for item in self._window(core, start, high):
                if isinstance(item, Checkpoint):
                    self._last = item.offset.offset  # type: ignore[attr-defined]
                yield item
            self._start = self.gateway.increment_lsn(high)
        if heartbeat_s > 0 and time.monotonic() - self._last_heartbeat >= heartbeat_s:
            self._last_heartbeat = time.monotonic()
            yield [self._heartbeat(self._last)]
        yield Checkpoint(OffsetCarrier(self._last), idle=True)

    def _current_instances(self, position: Lsn) -> dict[TableId, str]:
        """Per table, the newest instance that started at or before ``position``: its schema is the
        one in force there (the snapshot read through it, or the stream switched to it before a
        restart), so no switch is announced again."""
        out: dict[TableId, CaptureInstance] = {}
        if position.available:
            for t in self.tables.values():
                held = out.get(t.instance.table)
                if t.instance.start_lsn <= position and (held is None or t.instance.start_lsn > held.start_lsn):
                    out[t.instance.table] = t.instance
        return {table: instance.name for table, instance in out.items()}

    def _resume(self) -> SqlServerOffset:
        if self._snapshot_lsn is not None:
            return SqlServerOffset(self._snapshot_lsn)
        if self.stored is not None:
            return SqlServerOffset(self.stored.commit_lsn, self.stored.change_lsn, self.stored.event_serial_no)
        return SqlServerOffset(self.gateway.max_lsn())

    def _new_instances(self, core: ChangeStream, start: Lsn, offset: SqlServerOffset) -> Iterator[StreamItem]:
        """Follows the capture instances created and dropped while streaming (a schema change's
        new instance; the old one disabled once the new one is in use), as Debezium does each
        iteration. A new instance's schema version goes to bronze now; its events follow it
        from its start LSN (the core switches there). A table's first instance also gets the
        ``CREATE`` schema change event (source at ``offset``, the stored one, and now), as in
        Debezium. ``start``: the first LSN not read yet."""
        infos = {info.name: info for info in self._captured_infos()}
        added = [self._table(info) for name, info in infos.items() if name not in self.tables]
        dropped = [name for name in self.tables if name not in infos]
        for name in dropped:
            table = self.tables[name].instance.table
            others = [info for info in infos.values() if info.capture_instance(self.database).table == table]
            if not others:
                continue  # the table's only instance: `_window` names it in its error
            log.info("capture instance %s was disabled; table %s goes on with its other instance", name, table)
            later = [info for info in others if start.available and info.start_lsn > start]
            if later:
                # the old instance alone held the changes before the new one's start: what was not
                # read of them is gone (if there was any); Debezium goes on silently here
                log.warning("capture instance %s was disabled before the stream reached the start LSN %s of "
                            "%s: changes of table %s from %s up to it, if any, were only in %s and are not "
                            "captured; take a new snapshot (snapshot.mode=always, or an incremental snapshot) "
                            "if there were", name, later[0].start_lsn, later[0].name, table, start, name)
            del self.tables[name]
        # a table the history records (its capture disabled, now enabled again) is not new, as in Debezium
        known = {t.instance.table for t in self.tables.values()} | self.recorded.tables
        for k, t in enumerate(added):
            log.info("capture instance %s of table %s appeared (start LSN %s): its schema applies from there",
                     t.instance.name, t.instance.table, t.instance.start_lsn)
            self.tables[t.instance.name] = t
            yield t.version
            if t.instance.table not in known:
                # ordered after everything read so far (the start's CREATE events at ``offset``
                # included), before the changes still to read
                order = max((*_lsn_parts(start), 0, 0, 0, k), order_key(
                    offset.commit_lsn, offset.change_lsn, offset.event_serial_no, _AFTER_START + k))
                yield self._recorded(self._schema_record(SchemaChangeType.CREATE, t, offset, time.time_ns(), order))
        if added or dropped:
            core.set_instances([t.instance for t in self.tables.values()])

    def _window(self, core: ChangeStream, start: Lsn, high: Lsn) -> Iterator[StreamItem]:
        function = self.config.opt("data.query.mode") == "function"
        per_instance = {}
        for name, t in self.tables.items():
            low = self.gateway.min_lsn(name)
            if not low.available or low == Lsn(bytes(10)):
                raise SourceError(f"capture instance {name} no longer exists on the server (it was disabled); "
                                  "restart the capture to pick up the table's capture instances again")
            begin = max(low, start) if start.available else low
            if begin <= high:
                per_instance[name] = self.gateway.changes(t.instance, begin, high, function=function)
        times: dict[Lsn, int] = {}
        pending: list[ChangeRecord] = []
        pending_offset: SqlServerOffset | None = None
        tx = self._transactions
        skip_unchanged = bool(self.config.opt("skip.messages.without.change"))
        for item in core.events(merge_rows(per_instance)):
            commit = item.position.commit
            if pending_offset is not None and commit != pending_offset.commit_lsn:
                yield from self._close_transaction(pending, pending_offset)
                pending, pending_offset = [], None
            if commit not in times:
                times[commit] = self._commit_time(commit)
            if isinstance(item, SchemaSwitch):
                log.info("table %s: events now come from capture instance %s (was %s) from commit LSN %s",
                         item.table, item.new.name, item.old.name, commit)
                pending.extend(self._recorded(self._alter_record(item, times[commit], len(pending))))
                continue
            if item.kind is EventKind.UPDATE and skip_unchanged and self._unchanged(item):
                if item.closes_position:
                    pending_offset = item.offset()
                continue
            block = None
            if tx is not None and item.kind is not EventKind.TOMBSTONE:
                if tx.id != str(commit):
                    tx.begin(str(commit), times[commit] // 1_000_000)
                if tx.needs_begin():
                    pending.append(tx.begin_record(order_key(commit, Lsn.NULL, 0, 0), dumps(item.offset().to_map())))
                table = item.instance.table
                block = tx.block(f"{table.database}.{table.schema}.{table.table}")
            pending.append(self._change_record(item, times[commit], len(pending), block))
            if item.closes_position:
                pending_offset = item.offset()
        if pending_offset is not None:
            yield from self._close_transaction(pending, pending_offset)

    def _unchanged(self, event: ChangeEvent) -> bool:
        """Whether an update's value images are equal as written: ``skip.messages.without.change``
        compares them after the column filters and masks, as Debezium compares its value structs
        (the core already dropped updates whose captured columns are all equal)."""
        fields = self.tables[event.instance.name].fields
        return fields.row(event.before) == fields.row(event.after)

    def _close_transaction(self, pending: list[ChangeRecord], offset: SqlServerOffset) -> Iterator[StreamItem]:
        """A transaction's records (with its END record), then the checkpoint after it."""
        if self._transactions is not None:
            end = self._transactions.end_record(
                order_key(offset.commit_lsn, offset.change_lsn, offset.event_serial_no, len(pending)),
                dumps(offset.to_map()))
            if end is not None:
                pending.append(end)
        if pending:
            yield pending
        yield Checkpoint(OffsetCarrier(offset))

    def _recorded(self, event: ChangeRecord, start_index: int | None = None) -> list[ChangeRecord]:
        """A schema change event's history record, and the event itself with
        ``include.schema.changes``."""
        assert event.value is not None
        record = history_record(self.config.name, orjson.loads(event.value), event.position, event.order_key,
                                start_index)
        return [record, event] if self.config.opt("include.schema.changes") else [record]

    def _new_tables(self) -> frozenset[TableId]:
        """The captured tables new to the capture at this start: not known to the history as of the
        stored offset (every table when there is no offset; none when the stored offset comes
        without any history, as written before the connector kept one)."""
        captured = frozenset(t.instance.table for t in self.tables.values())
        if self.stored is None:
            return captured
        if not self.recorded.recorded:
            return frozenset()
        return captured - self.recorded.tables

    def _start_records(self, resume: SqlServerOffset) -> Iterator[StreamItem]:
        """At a start without a snapshot: the ``CREATE`` schema change event (and history record) of
        each table new to the capture, as Debezium emits it at its first iteration (source at the
        resume offset, time now), ordered just after the resume offset's event; the oldest capture
        instance describes the table. A table a start at this same offset already recorded gets
        its event again with the same order key (see `cdc_sources.sqlserver.history`). Without any
        history but with an offset, the tables are only recorded (no event: they were described
        before the connector kept a history)."""
        legacy = self.stored is not None and not self.recorded.recorded
        tables = frozenset(t.instance.table for t in self.tables.values()) if legacy else self._new_tables()
        records: list[ChangeRecord] = []
        ts_ns = time.time_ns()
        fresh = self.recorded.next_index()
        for n, t in enumerate(self._oldest_instances(tables)):
            if self.stored is None:  # no_data without an offset: the schema snapshot's events
                records += self._recorded(self._create_record(t, resume.commit_lsn, dumps(resume.to_map()), ts_ns, n))
                continue
            if legacy:  # recorded only, below the keys of the CREATE events a start makes
                event = self._schema_record(SchemaChangeType.CREATE, t, resume, ts_ns,
                                            order_key(resume.commit_lsn, resume.change_lsn, resume.event_serial_no,
                                                      _AFTER_OFFSET - len(tables) + n))
                records += self._recorded(event)[:1]
                continue
            index = self.recorded.replayed.get(t.instance.table)
            if index is None:
                index, fresh = fresh, fresh + 1
                log.info("source %s: table %s is new to the capture (capture instance %s)", self.config.name,
                         t.instance.table, t.instance.name)
            event = self._schema_record(SchemaChangeType.CREATE, t, resume, ts_ns,
                                        order_key(resume.commit_lsn, resume.change_lsn, resume.event_serial_no,
                                                  _AFTER_OFFSET + index))
            records += self._recorded(event, index)
        if legacy and records:
            log.info("source %s: no schema history of database %s yet: its %d captured table(s) recorded as they "
                     "are", self.config.name, self.database, len(records))
        if records:
            yield records

    def _oldest_instances(self, tables: set[TableId] | frozenset[TableId]) -> list[_Table]:
        """Per table of ``tables``, its oldest capture instance, in table order."""
        out: dict[TableId, _Table] = {}
        for t in self.tables.values():
            held = out.get(t.instance.table)
            if t.instance.table in tables and (held is None or t.instance.start_lsn < held.instance.start_lsn):
                out[t.instance.table] = t
        return [out[k] for k in sorted(out, key=lambda k: (k.schema, k.table))]

    def _schema_record(self, kind: SchemaChangeType, t: _Table, offset: SqlServerOffset, ts_ns: int,
                       order: tuple[int, ...]) -> ChangeRecord:
        """A schema change event of ``t`` with its source at ``offset``."""
        table = t.instance.table
        source = SqlServerSource(self.config.name, ts_ns, table.database, table.schema, table.table,
                                 offset.commit_lsn, offset.change_lsn, offset.event_serial_no).payload()
        value = schema_change_value(kind, source, table.database, table.schema, table.table, t.columns,
                                    t.primary_key)
        return ChangeRecord(self.config.name, dumps({"databaseName": table.database}), dumps(value), None,
                            dumps(offset.to_map()), order)

    def _create_record(self, t: _Table, point: Lsn, position: str, ts_ns: int, n: int) -> ChangeRecord:
        """The snapshot's ``CREATE`` schema change event of a table (before any of its rows)."""
        table = t.instance.table
        source = SqlServerSource(self.config.name, ts_ns, table.database, table.schema, table.table, point,
                                 snapshot=SnapshotRecord.TRUE).payload()
        value = schema_change_value(SchemaChangeType.CREATE, source, table.database, table.schema, table.table,
                                    t.columns, t.primary_key)
        return ChangeRecord(self.config.name, dumps({"databaseName": table.database}), dumps(value), None, position,
                            (*_lsn_parts(point), 0, 0, 0, n))

    def _alter_record(self, switch: SchemaSwitch, ts_ns: int, index: int) -> ChangeRecord:
        """The ``ALTER`` schema change event of a capture-instance switch, ordered just before the
        first event read from the new instance."""
        t = self.tables[switch.new.name]
        table = switch.table
        position = switch.position
        source = SqlServerSource(self.config.name, ts_ns, table.database, table.schema, table.table,
                                 position.commit, position.change).payload()
        value = schema_change_value(SchemaChangeType.ALTER, source, table.database, table.schema, table.table,
                                    t.columns, t.primary_key)
        offset = dumps(SqlServerOffset(position.commit, position.change, 0).to_map())
        return ChangeRecord(self.config.name, dumps({"databaseName": table.database}), dumps(value), None, offset,
                            order_key(position.commit, position.change, 0, index))

    def _heartbeat(self, offset: SqlServerOffset) -> ChangeRecord:
        """A heartbeat record carrying ``offset`` (after ``heartbeat.action.query``, when set)."""
        query = self.config.opt("heartbeat.action.query")
        if query:
            self.gateway.heartbeat_action(str(query))
        d = str(self.config.opt("topic.delimiter"))
        topic = f"{self.config.opt('topic.heartbeat.prefix')}{d}{self.config.name}"
        now_ms = time.time_ns() // 1_000_000
        # after every event of the offset; the time keeps heartbeats at one offset apart (bronze
        # drops a record whose order key is not above its table's last one)
        order = (*order_key(offset.commit_lsn, offset.change_lsn, offset.event_serial_no, 0)[:-2], _AFTER_ALL, now_ms)
        value = dumps({"ts_ms": now_ms})
        return ChangeRecord(topic, dumps({"serverName": self.config.name}), value, None, dumps(offset.to_map()), order)

    def _commit_time(self, commit: Lsn) -> int:
        when = self.gateway.lsn_to_time(commit)
        if when is None:
            return time.time_ns()
        return int(when.replace(tzinfo=UTC).timestamp() * 1_000_000) * 1000 if when.tzinfo is None else int(
            when.astimezone(UTC).timestamp() * 1_000_000) * 1000

    def _change_record(self, event: ChangeEvent, ts_ns: int, index: int,
                       transaction: TransactionBlock | None) -> ChangeRecord:
        t = self.tables[event.instance.name]
        table = t.instance.table
        position = event.offset()
        key_text = None if event.key is None else dumps(_key(t, event.key))
        order = order_key(event.position.commit, event.position.change, event.serial, index)
        if event.kind is EventKind.TOMBSTONE:
            return ChangeRecord(t.topic, key_text, None, None, dumps(position.to_map()), order, t.version.schema_id)
        source = SqlServerSource(self.config.name, ts_ns, table.database, table.schema, table.table,
                                 event.position.commit, event.position.change, event.serial)
        value = envelope(t.fields.row(event.before), t.fields.row(event.after), source.payload(), event.kind.value,
                         transaction)
        return ChangeRecord(t.topic, key_text, value, event.kind.value, dumps(position.to_map()), order,
                            t.version.schema_id)

    # -- offsets ---------------------------------------------------------------------------
    def acknowledge(self, offset: SourceOffset) -> None:
        """Nothing to confirm: SQL Server's cleanup job keeps changes by its own retention."""

    def offset_of(self, position: str) -> OffsetCarrier:
        return OffsetCarrier(SqlServerOffset.load(orjson.loads(position)))

    def close(self) -> None:
        if self._side is not None and self._side is not self.gateway:
            self._side.connection.close()
        self.gateway.connection.close()


def _key(t: _Table, key: tuple[Any, ...]) -> dict[str, Any] | None:
    return t.fields.key(key)


def _column(info: ColumnInfo) -> SqlServerColumn:
    kind = info.type_name.lower()
    if kind in ("decimal", "numeric"):
        return SqlServerColumn(info.name, kind, info.precision, info.scale, info.nullable)
    if kind in ("time", "datetime2", "datetimeoffset"):
        return SqlServerColumn(info.name, kind, None, info.scale, info.nullable)
    return SqlServerColumn(info.name, kind, info.max_length if info.max_length >= 0 else None, None, info.nullable)
