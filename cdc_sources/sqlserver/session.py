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

Not built yet (refused at start with a message naming the option): several databases in
``database.names``, transaction metadata, heartbeats, column filters, masks and truncation,
schema change events. A table's columns are read once per run (a capture instance created
while running is picked up at the next start).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Generator, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC
from typing import Any

import orjson

from cdc_sources.common import kschema as ks
from cdc_sources.common.envelope import dumps, envelope, envelope_schema_version, envelope_text
from cdc_sources.common.snapshot_plan import StoredState, plan_snapshot
from cdc_sources.spi import (
    ChangeRecord,
    Checkpoint,
    SchemaVersion,
    SnapshotPlan,
    SnapshotProgress,
    SourceError,
    SourceOffset,
    StreamItem,
)
from cdc_sources.sqlserver.changes import CaptureInstance, ChangeEvent, ChangeStream, EventKind, TableId, merge_rows
from cdc_sources.sqlserver.config import SqlServerSourceConfig
from cdc_sources.sqlserver.converters import ColumnConverter, ConverterSettings, SqlServerColumn, column_converter
from cdc_sources.sqlserver.envelope import key_payload, row_payload
from cdc_sources.sqlserver.gateway import ColumnInfo, Gateway
from cdc_sources.sqlserver.lsn import Lsn, TxLogPosition
from cdc_sources.sqlserver.offset import SnapshotType, SqlServerOffset
from cdc_sources.sqlserver.source_info import SOURCE_SCHEMA, SnapshotRecord, SqlServerSource

__all__ = ["OffsetCarrier", "SqlServerCaptureSession", "order_key"]

log = logging.getLogger(__name__)

_NO_POSITION = TxLogPosition(Lsn.NULL)

_NOT_BUILT: dict[str, Callable[[Any], bool]] = {
    "provide.transaction.metadata": bool,
    "heartbeat.interval.ms": lambda v: int(v or 0) > 0,
    "column.include.list": bool,
    "column.exclude.list": bool,
}
_NOT_BUILT_PREFIXES = ("column.mask.", "column.truncate.to.", "column.propagate.source.type")


@dataclass(frozen=True)
class OffsetCarrier:
    """A `SourceOffset` around `SqlServerOffset` (the bronze writer stores ``to_dict``)."""

    offset: SqlServerOffset

    def to_dict(self) -> dict[str, Any]:
        return self.offset.to_map()


def _lsn_parts(lsn: Lsn) -> tuple[int, int]:
    raw = lsn.binary or bytes(10)
    return int.from_bytes(raw[:8], "big"), int.from_bytes(raw[8:], "big")


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
    converters: dict[str, ColumnConverter | None]
    version: SchemaVersion


class SqlServerCaptureSession:
    """Implements `cdc_sources.spi.CaptureSession` for SQL Server. Not thread-safe."""

    def __init__(self, config: SqlServerSourceConfig, gateway: Gateway, stored_offset: Mapping[str, Any] | None,
                 *, sleep: Callable[[float], bool] | None = None) -> None:
        self.config = config
        self.gateway = gateway
        self.stored = SqlServerOffset.load(stored_offset) if stored_offset else None
        self._sleep = sleep or threading.Event().wait
        _refuse_unbuilt(config)
        databases = config.connection.databases
        if len(databases) > 1:
            raise SourceError(f"source {config.name}: database.names lists {len(databases)} databases; this "
                              "connector captures one database per source so far: declare one source per database")
        self.database = databases[0] if databases else gateway.database_name()
        gateway.use_database(self.database)
        self.settings = ConverterSettings(config.opt("decimal.handling.mode"), config.opt("time.precision.mode"),
                                          config.opt("binary.handling.mode"))
        self.tables = self._tables()
        self._snapshot_lsn: Lsn | None = None
        self._source_texts: dict[tuple[str, int, SnapshotRecord], str] = {}
        for warning in config.warnings:
            log.warning("source %s: %s", config.name, warning)

    # -- schema ----------------------------------------------------------------------------
    def _topic(self, table: TableId) -> str:
        d = str(self.config.opt("topic.delimiter"))
        return d.join((self.config.name, table.database, table.schema, table.table))

    def _tables(self) -> dict[str, _Table]:
        out: dict[str, _Table] = {}
        keys = self.config.keys
        for info in self.gateway.capture_instances():
            if not self.config.tables.includes_table(info.source_schema, info.source_table):
                continue
            columns = {c.name: c for c in self.gateway.table_columns(info.source_schema, info.source_table)}
            override = keys.for_table(info.source_schema, info.source_table, info.captured_columns,
                                      catalog=self.database)
            instance = info.capture_instance(self.database, override)
            missing = [c for c in instance.columns if c not in columns]
            if missing:
                raise SourceError(f"capture instance {info.name} captures column(s) {missing} that the source table "
                                  f"{info.source_schema}.{info.source_table} no longer has; create a new capture "
                                  "instance for the table's current columns")
            converters = {c: column_converter(_column(columns[c]), self.settings) for c in instance.columns}
            topic = self._topic(instance.table)
            out[info.name] = _Table(instance, topic, converters, self._version(topic, instance, converters, columns))
        return out

    @staticmethod
    def _version(topic: str, instance: CaptureInstance, converters: Mapping[str, ColumnConverter | None],
                 columns: Mapping[str, ColumnInfo]) -> SchemaVersion:
        def field(name: str, optional: bool) -> dict[str, Any]:
            converter = converters[name]
            assert converter is not None
            return ks.complete(converter.schema, optional=optional, field=name)

        fields = [field(c, columns[c].nullable) for c in instance.columns if converters[c] is not None]
        key_fields = [field(c, False) for c in instance.key_columns if converters.get(c) is not None]
        return envelope_schema_version(topic=topic, table=f"{instance.table.schema}.{instance.table.table}",
                                       fields=fields, key_fields=key_fields, key_names=instance.key_columns,
                                       source_schema={**SOURCE_SCHEMA, "field": "source"})

    # -- plan ------------------------------------------------------------------------------
    def plan(self) -> SnapshotPlan:
        stored = self.stored
        available = True
        if stored is not None and not stored.snapshot_running and stored.commit_lsn.available:
            # a NULL commit LSN (a snapshot taken before anything was captured) reads every
            # instance from its minimum LSN
            lows = [self.gateway.min_lsn(name) for name in self.tables]
            available = all(stored.commit_lsn >= low for low in lows if low.available and low != Lsn(bytes(10)))
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
        value = envelope_text("null", dumps(row_payload(t.instance, row, t.converters)), source, "r", "null")
        return ChangeRecord(t.topic, key_text, value, "r", position, (*_lsn_parts(point), 0, 0, n, index),
                            t.version.schema_id)

    # -- streaming -------------------------------------------------------------------------
    def stream(self, *, until_idle: bool) -> Iterator[StreamItem]:
        resume = self._resume()
        instances = [t.instance for t in self.tables.values()]
        core = ChangeStream(instances, tombstones_on_delete=bool(self.config.opt("tombstones.on.delete")),
                            skipped=self.config.skipped_operations,
                            skip_unchanged=bool(self.config.opt("skip.messages.without.change")),
                            resume=resume if resume.change_lsn.available else None)
        for t in self.tables.values():
            yield t.version
        # the first LSN still to read: after a snapshot, the LSN after its maximum; after a
        # streamed event, its commit LSN again (the core skips what was emitted)
        start = resume.commit_lsn if resume.change_lsn.available else (
            self.gateway.increment_lsn(resume.commit_lsn) if resume.commit_lsn.available else Lsn.NULL)
        poll_s = int(self.config.opt("poll.interval.ms")) / 1000
        last = resume
        while True:
            high = self.gateway.max_lsn()
            if high.available and (not start.available or high >= start):
                for item in self._window(core, start, high):
                    if isinstance(item, Checkpoint):
                        last = item.offset.offset  # type: ignore[attr-defined]
                    yield item
                start = self.gateway.increment_lsn(high)
            yield Checkpoint(OffsetCarrier(last), idle=True)
            if until_idle:
                return
            if self._sleep(poll_s):
                return

    def _resume(self) -> SqlServerOffset:
        if self._snapshot_lsn is not None:
            return SqlServerOffset(self._snapshot_lsn)
        if self.stored is not None:
            return SqlServerOffset(self.stored.commit_lsn, self.stored.change_lsn, self.stored.event_serial_no)
        return SqlServerOffset(self.gateway.max_lsn())

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
        for item in core.events(merge_rows(per_instance)):
            if not isinstance(item, ChangeEvent):
                continue  # a capture-instance switch: one schema per run so far (see the module doc)
            commit = item.position.commit
            if pending_offset is not None and commit != pending_offset.commit_lsn:
                yield pending
                yield Checkpoint(OffsetCarrier(pending_offset))
                pending, pending_offset = [], None
            if commit not in times:
                times[commit] = self._commit_time(commit)
            pending.append(self._change_record(item, times[commit], len(pending)))
            if item.closes_position:
                pending_offset = item.offset()
        if pending:
            yield pending
        if pending_offset is not None:
            yield Checkpoint(OffsetCarrier(pending_offset))

    def _commit_time(self, commit: Lsn) -> int:
        when = self.gateway.lsn_to_time(commit)
        if when is None:
            return time.time_ns()
        return int(when.replace(tzinfo=UTC).timestamp() * 1_000_000) * 1000 if when.tzinfo is None else int(
            when.astimezone(UTC).timestamp() * 1_000_000) * 1000

    def _change_record(self, event: ChangeEvent, ts_ns: int, index: int) -> ChangeRecord:
        t = self.tables[event.instance.name]
        table = t.instance.table
        position = event.offset()
        key_text = None if event.key is None else dumps(_key(t, event.key))
        order = order_key(event.position.commit, event.position.change, event.serial, index)
        if event.kind is EventKind.TOMBSTONE:
            return ChangeRecord(t.topic, key_text, None, None, dumps(position.to_map()), order, t.version.schema_id)
        source = SqlServerSource(self.config.name, ts_ns, table.database, table.schema, table.table,
                                 event.position.commit, event.position.change, event.serial)
        value = envelope(row_payload(t.instance, event.before, t.converters),
                         row_payload(t.instance, event.after, t.converters), source.payload(), event.kind.value, None)
        return ChangeRecord(t.topic, key_text, value, event.kind.value, dumps(position.to_map()), order,
                            t.version.schema_id)

    # -- offsets ---------------------------------------------------------------------------
    def acknowledge(self, offset: SourceOffset) -> None:
        """Nothing to confirm: SQL Server's cleanup job keeps changes by its own retention."""

    def offset_of(self, position: str) -> OffsetCarrier:
        return OffsetCarrier(SqlServerOffset.load(orjson.loads(position)))

    def close(self) -> None:
        self.gateway.connection.close()


def _key(t: _Table, key: tuple[Any, ...]) -> dict[str, Any] | None:
    return key_payload(ChangeEvent(EventKind.CREATE, t.instance, _NO_POSITION, 0, key, None, None), t.converters)


def _column(info: ColumnInfo) -> SqlServerColumn:
    kind = info.type_name.lower()
    if kind in ("decimal", "numeric"):
        return SqlServerColumn(info.name, kind, info.precision, info.scale, info.nullable)
    if kind in ("time", "datetime2", "datetimeoffset"):
        return SqlServerColumn(info.name, kind, None, info.scale, info.nullable)
    return SqlServerColumn(info.name, kind, info.max_length if info.max_length >= 0 else None, None, info.nullable)


def _refuse_unbuilt(config: SqlServerSourceConfig) -> None:
    raw = config.options.raw
    for name, set_ in _NOT_BUILT.items():
        if name in raw and set_(config.opt(name)):
            raise SourceError(f"source {config.name}: option {name} is not supported by this SQL Server connector yet")
    for name in raw:
        if name.startswith(_NOT_BUILT_PREFIXES):
            raise SourceError(f"source {config.name}: option {name} is not supported by this SQL Server connector yet")

