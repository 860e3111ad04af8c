"""One run of the MySQL/MariaDB connector: start-up checks, plan, snapshot, stream.

The schema model is rebuilt from the stored schema history (up to the stored offset) when the
session opens, so the first row event streamed is decoded with the structure in force at its
position; the snapshot rebuilds it from ``SHOW CREATE TABLE`` at the snapshot's read view.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Iterator, Mapping, Sequence
from functools import partial
from typing import Any

import orjson

from cdc_sources.common.blocking_snapshot import BlockingSnapshotter, StoredBlocking
from cdc_sources.common.captured_tables import NEW_TABLES_OPTION, CapturedTables, NewTablesMode
from cdc_sources.common.envelope import VERSION, dumps
from cdc_sources.common.incremental_snapshot import IncrementalSnapshotter
from cdc_sources.common.incremental_state import IncrementalState
from cdc_sources.common.readonly_watermarks import ReadOnlyIncrementalSnapshotter
from cdc_sources.common.signal_options import signal_settings
from cdc_sources.common.snapshot_plan import StoredState, plan_snapshot
from cdc_sources.mysql import connection
from cdc_sources.mysql.blocking import MySqlBlockingSource
from cdc_sources.mysql.checks import CheckNeeds, check_flavor, run_startup_checks
from cdc_sources.mysql.codec import TableCodec, build_codec
from cdc_sources.mysql.config import MySqlSourceConfig
from cdc_sources.mysql.converters import SNAPSHOT_CONVERSIONS, MySqlConverterSettings
from cdc_sources.mysql.ddl import SchemaModel
from cdc_sources.mysql.ddl_events import DdlEvents, DdlSettings, replay_history
from cdc_sources.mysql.envelope import SourceInfo
from cdc_sources.mysql.errors import BinlogUnavailableError
from cdc_sources.mysql.gtid import new_gtid_tracker
from cdc_sources.mysql.incremental import MySqlChunkSource
from cdc_sources.mysql.incremental_columnar import ColumnarChunkReader
from cdc_sources.mysql.model import TableDef, TableId
from cdc_sources.mysql.offset import MySqlOffset
from cdc_sources.mysql.offset import binlog_file_number as file_number
from cdc_sources.mysql.readonly_watermarks import MariaDbWatermarks
from cdc_sources.mysql.snapshot import SnapshotRowReader, SnapshotTable, snapshot_complete_checkpoint
from cdc_sources.mysql.snapshot_columnar import MySqlColumnarSnapshotReader
from cdc_sources.mysql.snapshot_prepare import prepare_snapshot
from cdc_sources.mysql.snapshot_process import SnapshotWorker
from cdc_sources.mysql.stream import BinlogResume, EventContext, MySqlStreamReader, StreamSettings
from cdc_sources.mysql.table_filters import check_tables_match
from cdc_sources.spi import (
    HISTORY_TOPIC,
    ChangeRecord,
    HistoryEntry,
    SnapshotPlan,
    SourceError,
    SourceOffset,
    StreamItem,
)
from cdc_sources.spi.snapshot_progress import SnapshotListener

log = logging.getLogger(__name__)


def converter_settings(config: MySqlSourceConfig) -> MySqlConverterSettings:
    o = config.opt
    return MySqlConverterSettings(
        decimal_handling_mode=o("decimal.handling.mode"), time_precision_mode=o("time.precision.mode"),
        bigint_unsigned_handling_mode=o("bigint.unsigned.handling.mode"),
        binary_handling_mode=o("binary.handling.mode"), enable_time_adjuster=o("enable.time.adjuster"),
        event_processing_failure_handling_mode=o("event.processing.failure.handling.mode"),
    )


class MySqlCaptureSession:
    """Implements `cdc_sources.spi.CaptureSession` for MySQL and MariaDB. Not thread-safe.

    ``columnar_snapshot`` (class attribute): read snapshot tables and incremental snapshot chunks
    with a reader process when possible (see `snapshot_columnar`, `incremental_columnar`); False
    always reads them row by row.
    """

    columnar_snapshot = True

    def __init__(self, config: MySqlSourceConfig, stored_offset: Mapping[str, Any] | None,
                 history: Sequence[HistoryEntry]) -> None:
        self.config = config
        self.flavor = config.flavor
        self.stored = MySqlOffset.from_dict(stored_offset) if stored_offset else None
        self.incremental_state = IncrementalState.from_offset(stored_offset)
        self._stored_offset = stored_offset
        self.blocking_stored = StoredBlocking.from_offset(stored_offset)
        self.signals = signal_settings(config.options.values)
        self.incremental: IncrementalSnapshotter | None = None
        self._listener: SnapshotListener | None = None
        self._chunks: MySqlChunkSource | None = None
        self.policy = config.policy
        self.settings = converter_settings(config)
        self.source = SourceInfo(config.connector_name, config.name, VERSION)
        self.headers = self._context_headers() if config.opt("extended.headers.enabled") else None
        for warning in config.warnings:
            log.warning("source %s: %s", config.name, warning)
        self.conn = connection.connect(config.connection)
        self.server = connection.server_info(self.conn)
        check_flavor(config, self.server)
        run_startup_checks(self.conn, config, self.server,
                           CheckNeeds.for_run(config, offset_exists=self.stored is not None))
        self.model = self._new_model()
        self._history_replayed = 0
        if self.stored is not None and not self.stored.in_snapshot:
            until = (file_number(self.stored.file), self.stored.pos) if self.stored.file else None
            self._history_replayed = replay_history(self.model, history, until=until,
                                                    skip_unparseable=self._skip_unparseable)
        self._codecs: dict[TableId, tuple[TableDef, TableCodec]] = {}
        self._snapshot_point: Any = None
        self._schema_only = False
        self._ddl = DdlEvents(self.model, self._ddl_settings(), self.source, self._topic)

    def _new_model(self) -> SchemaModel:
        """An empty schema model knowing the server's charset and ``sql_mode`` (``ANSI_QUOTES``), as
        Debezium seeds its model at start-up."""
        model = SchemaModel()
        variables = connection.query_rows(self.conn, "SELECT @@character_set_server, @@collation_server, @@sql_mode")[0]
        model.set_system_variables({"character_set_server": str(variables[0]), "collation_server": str(variables[1]),
                                    "sql_mode": str(variables[2])})
        return model

    @property
    def _skip_unparseable(self) -> bool:
        return bool(self.config.opt("schema.history.internal.skip.unparseable.ddl"))

    def _context_headers(self) -> dict[str, str]:
        return {
            "__debezium.context.connectorLogicalName": dumps(self.config.name),
            "__debezium.context.taskId": dumps("0"),
            "__debezium.context.connectorName": dumps(self.config.connector_name),
            "__debezium.context.runId": dumps(str(uuid.uuid4())),
        }

    def _topic(self, table: TableId) -> str:
        d = self.config.opt("topic.delimiter")
        return f"{self.config.name}{d}{table.database}{d}{table.table}"

    def _ddl_settings(self) -> DdlSettings:
        o = self.config.opt
        return DdlSettings(
            prefix=self.config.name, include_schema_changes=bool(o("include.schema.changes")),
            skip_unparseable=self._skip_unparseable,
            store_only_captured_tables=bool(o("schema.history.internal.store.only.captured.tables.ddl")),
            store_only_captured_databases=bool(o("schema.history.internal.store.only.captured.databases.ddl")),
            emit_truncates="t" not in self.config.skipped_operations,
            captures=lambda t: self.policy.captures(t.database, t.table),
            captures_database=self.policy.captures_database,
            headers=self.headers,
        )

    # -- plan ------------------------------------------------------------------------------------

    def plan(self) -> SnapshotPlan:
        available = self.stored is not None and bool(connection.position_available(
            self.conn, self.server, file=self.stored.file, gtids=self.stored.gtids,
            gtid_filter=self.config.gtid_filter, ignore_gtids=bool(self.config.opt("gtid.ignore.on.recovery"))))
        state = StoredState(offset_exists=self.stored is not None,
                            snapshot_completed=self.stored is not None and not self.stored.in_snapshot,
                            offset_available=available)
        mode = self.config.snapshot_mode
        plan = plan_snapshot("no_data" if mode == "recovery" else mode, state, self.config.configuration_based)
        if not plan.snapshot_data and self.stored is not None and not self.stored.in_snapshot and not available:
            raise BinlogUnavailableError(
                f"the stored binlog position {self.stored.file}:{self.stored.pos} is no longer available on the "
                "server (the binlog was purged). Changes may have been lost; a new snapshot is required: set "
                "snapshot.mode=when_needed (or always) to take one automatically")
        self._schema_only = not plan.snapshot_data and plan.stream and (
            self.stored is None or mode == "recovery" or self.stored.in_snapshot)
        return plan

    # -- snapshot --------------------------------------------------------------------------------

    def snapshot(self) -> Iterator[StreamItem]:
        yield from self._snapshot(with_data=True)

    def _snapshot(self, *, with_data: bool) -> Iterator[StreamItem]:
        """The snapshot; without data it only records the current structure (``no_data``, ``recovery``).

        With data, a reader process (`SnapshotWorker`) connects before the lock is taken; it joins
        the read view under the global read lock and reads the tables column by column (see
        `snapshot`, step 3b).
        """
        o = self.config.opt
        check_tables_match(self.conn, self.config.options.raw, self.policy.captures_database,
                           lambda t: self.policy.captures(t.database, t.table))
        snap = connection.connect(self.config.connection, autocommit=False, conversions=SNAPSHOT_CONVERSIONS)
        worker = None
        try:
            if with_data and self.columnar_snapshot:
                worker = SnapshotWorker.start(self.config.connection)
            prepared = prepare_snapshot(
                snap, flavor=self.flavor, locking_mode=self.config.locking_mode if with_data else "minimal",
                lock_timeout_ms=int(o("snapshot.lock.timeout.ms")),
                captures_database=self.policy.captures_database,
                captures=lambda t: self.policy.captures(t.database, t.table),
                store_only_captured_tables=bool(o("schema.history.internal.store.only.captured.tables.ddl")),
                binlog_status_sql=self.server.binlog_status_sql,
                gtid_position=lambda cur, f, p: connection.gtid_position_at(cur, self.server, f, p),
                reader=worker)
            if worker is not None and not prepared.joined:
                log.info("snapshot: no global read lock (snapshot.locking.mode=%s or no RELOAD privilege): tables "
                         "are read row by row on the snapshot connection", self.config.locking_mode)
                worker.close()
                worker = None
            point = prepared.point
            self._snapshot_point = point
            self.model = self._new_model()
            self._ddl.model = self.model
            self._codecs.clear()
            ctx = EventContext(file=point.file, event_pos=point.pos, ts_ms=time.time_ns() // 1_000_000, server_id=0,
                               gtid=None, begin_pos=point.pos, events_in_tx=0, gtids=point.gtids)
            position = MySqlOffset.for_snapshot(point.file, point.pos, point.gtids, ts_sec=ctx.ts_ms // 1000).to_dict()
            for i, stmt in enumerate(prepared.statements):
                for j, item in enumerate(self._ddl.handle(stmt.ddl, stmt.database, ctx, snapshot="true")):
                    yield _snapshot_history(item, position, (file_number(point.file), point.pos, i, j))
            if not with_data:
                snap.commit()
                return
            tables = [self._snapshot_table(t) for t in prepared.tables
                      if self.policy.captures(t.database, t.table) and self.policy.snapshots(t.database, t.table)]
            log.info("snapshot: reading %d tables%s", len(tables), " column by column" if worker else "")
            fetch_size = int(o("snapshot.fetch.size") or 0)
            rows = SnapshotRowReader(snap, lambda: connection.unbuffered_cursor(snap), self.source, point,
                                     position, fetch_size or 10_000, self.headers)
            # snapshot.fetch.size, when set, also caps the reader process's blocks (rows per block)
            reader = (MySqlColumnarSnapshotReader(rows, worker, self.settings, block_rows=fetch_size) if fetch_size
                      else MySqlColumnarSnapshotReader(rows, worker, self.settings))
            yield from reader.read([t for t in tables if t is not None])
            snap.commit()
            if prepared.locked:
                snap.cursor().execute("UNLOCK TABLES")
        finally:
            if worker is not None:
                worker.close()
            snap.close()
        yield snapshot_complete_checkpoint(point)

    def _snapshot_table(self, table: TableId) -> SnapshotTable | None:
        definition = self.model.table(table)
        if definition is None:
            return None
        codec = build_codec(prefix=self.config.name, connector=self.config.connector_name, table=definition,
                            settings=self.settings, policy=self.policy, origin="snapshot",
                            delimiter=self.config.opt("topic.delimiter"))
        cols = ", ".join(_quote(c.name) for c in definition.columns)
        override = self.policy.select_override(table.database, table.table)
        source = f"({override}) AS s" if override else f"{_quote(table.database)}.{_quote(table.table)}"
        return SnapshotTable(table, codec, f"SELECT {cols} FROM {source}")

    # -- streaming -------------------------------------------------------------------------------

    def stream(self, *, until_idle: bool) -> Iterator[StreamItem]:
        o = self.config.opt
        if self._schema_only and self._snapshot_point is None:
            log.info("recording the current table structures (snapshot.mode=%s takes no data snapshot)",
                     self.config.snapshot_mode)
            yield from self._snapshot(with_data=False)
        resume = self._resume()
        gtids = new_gtid_tracker(self.flavor, resume.gtids or None)
        delim = o("topic.delimiter")
        settings = StreamSettings(
            prefix=self.config.name, skipped=self.config.skipped_operations,
            tombstones=bool(o("tombstones.on.delete")), include_query=bool(o("include.query")),
            heartbeat_interval_s=int(o("heartbeat.interval.ms")) / 1000,
            heartbeat_topic=f"{o('topic.heartbeat.prefix')}{delim}{self.config.name}",
            poll_interval_s=int(o("poll.interval.ms")) / 1000,
            transaction_topic=(f"{self.config.name}{delim}{o('topic.transaction')}"
                               if o("provide.transaction.metadata") else None),
            headers=self.headers, skip_unchanged=bool(o("skip.messages.without.change")),
            failure_mode=str(o("event.processing.failure.handling.mode")),
        )
        incremental = self._incremental(resume.file)
        reader = MySqlStreamReader(settings, self.source, self._open_binlog, self._codec_for, self._ddl, gtids,
                                   self._heartbeat_action, resume, binlog_end=self._binlog_end,
                                   busy=incremental.busy)
        captured = CapturedTables(
            stored_offset=self._stored_offset, tables=self._captured_tables, prefix=self.config.name,
            delimiter=o("topic.delimiter"), mode=NewTablesMode(o(NEW_TABLES_OPTION)),
            snapshotted_now=self._snapshot_point is not None and not self._schema_only)

        def snapshot(tables: Any, correlation_id: str) -> None:
            chosen = [t for t in tables if self.policy.snapshots(*t)]
            if chosen:
                incremental.snapshot_tables(chosen, correlation_id)

        def start() -> None:
            captured.start(can_snapshot=incremental.unavailable(), snapshot=snapshot)

        yield from captured.wrap(incremental.wrap(reader.items(until_idle=until_idle), on_start=start))

    def report_snapshots(self, listener: SnapshotListener) -> None:
        """Send signalled snapshots' progress to ``listener`` (`ReportsSnapshots`)."""
        self._listener = listener
        if self.incremental is not None:
            self.incremental.listen(listener)

    def _incremental(self, binlog_file: str) -> IncrementalSnapshotter:
        """Signals and incremental snapshots over the stream (`cdc_sources.common.incremental_snapshot`);
        chunks are read on a connection of their own, with the snapshot's conversions. With
        ``read.only`` on MariaDB, read-only ones (`cdc_sources.mysql.readonly_watermarks`);
        ``binlog_file``: the file the stream starts in."""
        if self.incremental is None:
            table = self.signals.table
            read_only = bool(self.config.opt("read.only"))
            read_only_mariadb = read_only and self.flavor == "mariadb"
            source = self._chunks = MySqlChunkSource(
                connect=self._chunk_connection, table_def=self._current_table,
                codec_for=self._snapshot_codec, source=self.source,
                signal_table=(table.parts[0], table.parts[1]) if table is not None and len(table.parts) == 2 else None,
                headers=self.headers,
                # a read-only chunk is read inside the consistent snapshot on this connection, not in the
                # reader process (whose own connection would see another point in time)
                columnar=ColumnarChunkReader(lambda: SnapshotWorker.start(self.config.connection), self.settings)
                if self.columnar_snapshot and not read_only_mariadb else None)
            make = (partial(ReadOnlyIncrementalSnapshotter, watermarks=MariaDbWatermarks(source, binlog_file))
                    if read_only_mariadb else partial(IncrementalSnapshotter, read_only=read_only))
            self.incremental = make(
                source=source, signals=self.signals, tables=self._captured_tables, prefix=self.config.name,
                chunk_size=int(self.config.opt("incremental.snapshot.chunk.size")),
                # a snapshot taken by this run read every table anew: an older incremental one is moot
                state=self.incremental_state if self._snapshot_point is None else None,
                delimiter=self.config.opt("topic.delimiter"),
                listener=self._listener, blocking=BlockingSnapshotter(MySqlBlockingSource(source),
                                             self.blocking_stored if self._snapshot_point is None else None))
        return self.incremental

    def _chunk_connection(self) -> Any:
        return connection.connect(self.config.connection, conversions=SNAPSHOT_CONVERSIONS)

    def _captured_tables(self) -> list[tuple[str, str]]:
        """The captured tables the schema model knows at the stream's position (tables created while
        capture runs included)."""
        return [(t.database, t.table) for t in self.model.table_ids() if self.policy.captures(t.database, t.table)]

    def _current_table(self, table: TableId) -> TableDef | None:
        """A table's structure at the stream's position (the model is replaced by a snapshot)."""
        return self.model.table(table)

    def _snapshot_codec(self, definition: TableDef) -> TableCodec:
        return build_codec(prefix=self.config.name, connector=self.config.connector_name, table=definition,
                           settings=self.settings, policy=self.policy, origin="snapshot",
                           delimiter=self.config.opt("topic.delimiter"))

    def _resume(self) -> BinlogResume:
        point = self._snapshot_point
        if point is not None:
            return BinlogResume(point.file, point.pos, point.gtids)
        if self.stored is not None:
            s = self.stored
            return BinlogResume(s.file, s.pos, s.gtids or "", s.event, s.row)
        here = connection.current_position(self.conn, self.server)
        return BinlogResume(here.file, here.pos, here.gtids)

    def _binlog_end(self) -> tuple[str, int]:
        here = connection.current_position(self.conn, self.server)
        return here.file, here.pos

    def _open_binlog(self, file: str, pos: int, blocking: bool) -> Any:
        return connection.open_binlog_stream(
            self.config.connection, server_id=self.config.server_id, file=file, pos=pos,
            blocking=blocking, heartbeat_s=max(0.1, int(self.config.opt("poll.interval.ms")) / 1000),
            mariadb=self.flavor == "mariadb", annotate=bool(self.config.opt("include.query")),
            report_as=connection.report_host(self.config.name))

    def _codec_for(self, table: TableId) -> TableCodec | None:
        if not self.policy.captures(table.database, table.table):
            return None
        definition = self.model.table(table)
        if definition is None:
            raise SourceError(
                f"a row event for {table} arrived but its structure is unknown (no DDL for it in the schema "
                "history); the table was created before the history started. Re-snapshot with "
                "snapshot.mode=always or recovery")
        cached = self._codecs.get(table)
        if cached is not None and cached[0] is definition:
            return cached[1]
        codec = build_codec(prefix=self.config.name, connector=self.config.connector_name, table=definition,
                            settings=self.settings, policy=self.policy, origin="binlog",
                            delimiter=self.config.opt("topic.delimiter"))
        self._codecs[table] = (definition, codec)
        return codec

    def _heartbeat_action(self) -> None:
        query = self.config.opt("heartbeat.action.query")
        if query:
            with self.conn.cursor() as cur:
                cur.execute(query)
            self.conn.commit()

    def acknowledge(self, offset: SourceOffset) -> None:
        """Nothing to confirm: the server keeps binlogs by its own retention settings."""

    def offset_of(self, position: str) -> MySqlOffset:
        return MySqlOffset.from_dict(orjson.loads(position))

    def close(self) -> None:
        if self._chunks is not None:
            self._chunks.close()
        self.conn.close()


def _snapshot_history(item: StreamItem, position: dict[str, Any], order: tuple[int, ...]) -> StreamItem:
    """Snapshot DDL records: the snapshot's offset (marked ``snapshot``) and one order key per statement."""
    if not isinstance(item, ChangeRecord):
        return item
    value = item.value
    if item.topic == HISTORY_TOPIC and value is not None:
        record = orjson.loads(value)
        record["position"] = position
        value = dumps(record)
    return ChangeRecord(item.topic, item.key, value, item.op, dumps(position), order, item.schema_id, item.headers)


def _quote(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"
