"""One run of the PostgreSQL connector: start-up checks, plan, snapshot, stream, acknowledge."""

from __future__ import annotations

import base64
import logging
import time
import uuid
from collections.abc import Iterator, Mapping
from functools import partial
from typing import Any

import orjson

from cdc_sources.common.blocking_snapshot import BlockingSnapshotter, StoredBlocking
from cdc_sources.common.captured_tables import NEW_TABLES_OPTION, CapturedTables, NewTablesMode
from cdc_sources.common.filters import no_table_matches
from cdc_sources.common.incremental_snapshot import IncrementalSnapshotter
from cdc_sources.common.incremental_state import IncrementalState
from cdc_sources.common.readonly_watermarks import ReadOnlyIncrementalSnapshotter
from cdc_sources.common.signal_options import signal_settings
from cdc_sources.common.snapshot_plan import StoredState, plan_snapshot
from cdc_sources.common.transactions import TransactionTracker
from cdc_sources.postgres import pgoutput as pg
from cdc_sources.postgres import slot as slots
from cdc_sources.postgres.blocking import PostgresBlockingSource
from cdc_sources.postgres.catalog import Catalog, TableInfo
from cdc_sources.postgres.config import PostgresSourceConfig
from cdc_sources.postgres.connection import connect_replication, connect_sql, replication_errors
from cdc_sources.postgres.converters import ConverterSettings
from cdc_sources.postgres.envelope import SourceInfo, dumps
from cdc_sources.postgres.errors import OffsetUnavailableError, classify
from cdc_sources.postgres.incremental import PostgresChunkSource
from cdc_sources.postgres.offset import PostgresOffset
from cdc_sources.postgres.readonly_watermarks import PostgresWatermarks
from cdc_sources.postgres.schema import TableCodec, build_codec
from cdc_sources.postgres.slot_acquire import acquire_slot, slot_retry_policy
from cdc_sources.postgres.snapshot_columnar import PostgresColumnarSnapshotReader, SnapshotTable
from cdc_sources.postgres.stream import RUN_SIZE, PostgresStreamReader, StreamSettings
from cdc_sources.postgres.types import PgColumn
from cdc_sources.spi import Checkpoint, SnapshotPlan, SourceOffset, StreamItem
from cdc_sources.spi.snapshot_progress import SnapshotListener

log = logging.getLogger(__name__)


def converter_settings(config: PostgresSourceConfig) -> ConverterSettings:
    o = config.opt
    return ConverterSettings(
        decimal_handling_mode=o("decimal.handling.mode"), time_precision_mode=o("time.precision.mode"),
        binary_handling_mode=o("binary.handling.mode"), hstore_handling_mode=o("hstore.handling.mode"),
        interval_handling_mode=o("interval.handling.mode"), money_fraction_digits=o("money.fraction.digits"),
        unavailable_value_placeholder=o("unavailable.value.placeholder"),
        include_unknown_datatypes=o("include.unknown.datatypes"),
    )


def bytes_encoder(mode: str) -> Any:
    if mode == "hex":
        return lambda b: b.hex()
    if mode == "base64-url-safe":
        return lambda b: base64.urlsafe_b64encode(b).decode()
    return lambda b: base64.b64encode(b).decode()


def context_headers(config: PostgresSourceConfig) -> dict[str, str]:
    """Debezium's ``__debezium.context.*`` headers (``extended.headers.enabled``), one run id per run."""
    return {
        "__debezium.context.connectorLogicalName": dumps(config.name),
        "__debezium.context.taskId": dumps("0"),
        "__debezium.context.connectorName": dumps("postgresql"),
        "__debezium.context.runId": dumps(str(uuid.uuid4())),
    }


class PostgresCaptureSession:
    """Implements `cdc_sources.spi.CaptureSession` for PostgreSQL. Not thread-safe."""

    def __init__(self, config: PostgresSourceConfig, stored_offset: Mapping[str, Any] | None) -> None:
        self.config = config
        self.stored = PostgresOffset.from_dict(stored_offset) if stored_offset else None
        self.incremental_state = IncrementalState.from_offset(stored_offset)
        self.blocking_stored = StoredBlocking.from_offset(stored_offset)
        self.signals = signal_settings(config.options.values)
        self.incremental: IncrementalSnapshotter | None = None
        self._fold_records = RUN_SIZE
        self._listener: SnapshotListener | None = None
        self.slot = str(config.opt("slot.name"))
        self.policy = config.policy
        self.slot_retry = slot_retry_policy(int(config.opt("slot.max.retries")), int(config.opt("slot.retry.delay.ms")))
        self.settings = converter_settings(config)
        self.source = SourceInfo(config.name, config.connection.dbname)
        self.headers = context_headers(config) if config.opt("extended.headers.enabled") else None
        self.conn = connect_sql(config.connection, initial_statements=config.opt("database.initial.statements"))
        self.catalog = Catalog(self.conn)
        self.repl: Any = None
        self.reader: PostgresStreamReader | None = None
        self._consistent_point: int | None = None
        self._created_for_stream: int | None = None  # where a slot created by `stream` starts
        self._stored_offset = stored_offset
        self._streamed_tables: set[tuple[str, str]] = set()  # captured tables met in the stream
        self._check()

    # -- start-up ------------------------------------------------------------------------------

    def _check(self) -> None:
        slots.check_server(self.conn, self.config.connection.user)
        self.tables = self._captured_tables()
        slots.check_identities(self.tables)
        slots.ensure_publication(self.conn, name=self.config.opt("publication.name"),
                                 mode=self.config.opt("publication.autocreate.mode"), tables=self.tables,
                                 via_root=self.config.opt("publish.via.partition.root"),
                                 no_match=self._no_match)
        self.slot_state = acquire_slot(self._unused_slot_state, slot=self.slot, policy=self.slot_retry)

    def _unused_slot_state(self) -> slots.SlotState | None:
        """The slot's state; `SlotInUseError` while another process streams from it."""
        state = slots.slot_state(self.conn, self.slot)
        if state is not None:
            slots.check_slot(state, dbname=self.config.connection.dbname)
        return state

    def _no_match(self) -> str:
        existing = [(schema, name) for _, schema, name in self.catalog.list_tables()]
        return no_table_matches(self.config.options.raw, existing)

    def _captured_tables(self) -> list[TableInfo]:
        oids = [oid for oid, schema, name in self.catalog.list_tables() if self.policy.captures(schema, name)]
        infos = self.catalog.tables(oids)
        return sorted(infos.values(), key=lambda t: (t.schema, t.name))

    def plan(self) -> SnapshotPlan:
        available = self.slot_state is not None and self.slot_state.wal_status != "lost"
        state = StoredState(
            offset_exists=self.stored is not None,
            snapshot_completed=self.stored is not None and not self.stored.snapshot,
            offset_available=available,
        )
        mode = self.config.opt("snapshot.mode")
        cb = {k.rsplit("configuration.based.", 1)[1]: bool(v)
              for k, v in self.config.options.values.items() if ".configuration.based." in k}
        plan = plan_snapshot(mode, state, cb)
        if not plan.snapshot_data and self.stored is not None and not available:
            raise OffsetUnavailableError(
                f"the stored offset (LSN {self.stored.lsn}) can no longer be streamed: replication slot "
                f"{self.slot!r} is missing or has lost WAL. Changes may have been lost; use "
                "snapshot.mode=when_needed or always to re-snapshot")
        return plan

    # -- snapshot -----------------------------------------------------------------------------

    def snapshot(self) -> Iterator[StreamItem]:
        if self.slot_state is not None:
            log.info("snapshot step 1/4: dropping slot %s to re-create it with an exported snapshot", self.slot)
            slots.drop_slot(self.conn, self.slot)
            self.slot_state = None
        self.repl = connect_replication(self.config.connection)
        created = slots.create_slot(self.repl.cursor(), self.slot, export_snapshot=True)
        self._consistent_point = created.consistent_point
        log.info("snapshot step 2/4: slot %s created at LSN %s", self.slot, created.consistent_point)
        snap_conn = connect_sql(self.config.connection, autocommit=False)
        try:
            snap_conn.execute("BEGIN ISOLATION LEVEL REPEATABLE READ")
            snap_conn.execute(f"SET TRANSACTION SNAPSHOT '{created.snapshot_name}'")
            tx_id = int(snap_conn.execute("SELECT txid_current()").fetchone()[0])
            tables = [SnapshotTable(self._codec_for_info(t), self._select(t), t.oid) for t in self._snapshot_tables()]
            log.info("snapshot step 3/4: reading %d tables", len(tables))
            reader = PostgresColumnarSnapshotReader(
                conn=snap_conn, connection=self.config.connection, snapshot_name=created.snapshot_name,
                settings=self.settings, source=self.source, lsn=created.consistent_point, tx_id=tx_id,
                slot=self.slot, headers=self.headers, max_threads=int(self.config.opt("snapshot.max.threads")))
            yield from reader.read(tables)
            snap_conn.rollback()
        finally:
            snap_conn.close()
        log.info("snapshot step 4/4: completed")
        yield Checkpoint(PostgresOffset(created.consistent_point, slot=self.slot))

    def _snapshot_tables(self) -> list[TableInfo]:
        return [t for t in self.tables if self.policy.snapshots(t.schema, t.name)]

    def _select(self, table: TableInfo) -> str:
        cols = ", ".join(_quote(c.name) for c in table.columns)
        override = self.policy.select_override(table.schema, table.name)
        source = f"({override}) AS s" if override else f"{_quote(table.schema)}.{_quote(table.name)}"
        return f"SELECT {cols} FROM {source}"

    def _codec_for_info(self, t: TableInfo) -> TableCodec:
        return build_codec(prefix=self.config.name, schema=t.schema, table=t.name, columns=t.columns,
                           primary_key=t.primary_key, settings=self.settings, policy=self.policy,
                           origin="snapshot")

    # -- streaming ----------------------------------------------------------------------------

    def stream(self, *, until_idle: bool) -> Iterator[StreamItem]:
        self.reader = acquire_slot(self._start_streaming, slot=self.slot, policy=self.slot_retry)
        delay = int(self.config.opt("streaming.delay.ms"))
        if delay:
            time.sleep(delay / 1000)
        incremental, captured = self._incremental(), self._captured()

        def snapshot(tables: Any, correlation_id: str) -> None:
            chosen = [t for t in tables if self.policy.snapshots(*t)]
            if chosen:
                incremental.snapshot_tables(chosen, correlation_id)

        def start() -> None:
            captured.start(can_snapshot=incremental.unavailable(), snapshot=snapshot)

        yield from captured.wrap(incremental.wrap(self.reader.items(until_idle=until_idle), on_start=start))

    def _captured(self) -> CapturedTables:
        """The captured tables recorded in the offsets, and the tables added since the stored one."""
        return CapturedTables(
            stored_offset=self._stored_offset, tables=self._captured_now, prefix=self.config.name,
            delimiter=self.config.opt("topic.delimiter"), mode=NewTablesMode(self.config.opt(NEW_TABLES_OPTION)),
            snapshotted_now=self._consistent_point is not None)

    def _captured_now(self) -> list[tuple[str, str]]:
        """The tables captured at start, and those the stream has met since (created while capture runs)."""
        return [(t.schema, t.name) for t in self.tables] + sorted(self._streamed_tables)

    def _start_streaming(self) -> PostgresStreamReader:
        """Open the replication connection (if not yet open) and start streaming from the slot
        (creating it first when there is none); on failure the connection is closed, so that a
        retry (`acquire_slot`) starts afresh."""
        try:
            if self.repl is None:
                self.repl = connect_replication(self.config.connection)
            cursor = self.repl.cursor()
            if self._consistent_point is None and self.slot_state is None and self._created_for_stream is None:
                self._created_for_stream = slots.create_slot(cursor, self.slot, export_snapshot=False).consistent_point
            start = self._consistent_point if self._consistent_point is not None else self._created_for_stream
            if start is None:
                start = self.stored.lsn if self.stored else (self.slot_state.confirmed_flush_lsn or 0)  # type: ignore[union-attr]
            reader = PostgresStreamReader(
                settings=self._stream_settings(), source=self.source, cursor=cursor,
                codec_for_relation=self._codec_for_relation, current_wal_lsn=self._current_wal_lsn,
                heartbeat_action=self._heartbeat_action, tx_tracker=self._tx_tracker(),
                last_commit_lsn=self.stored.lsn_commit if self.stored and self._consistent_point is None else None,
                driver_errors=replication_errors(), columnar=self.settings, busy=self._incremental().busy,
                signal_topic=self._incremental().signal_topic, fold_records=self._fold_records,
            )
            try:
                reader.start(start)
            except replication_errors() as exc:
                raise classify(exc, where=f"starting to stream from replication slot {self.slot!r}") from None
            return reader
        except Exception:
            if self.repl is not None:
                self.repl.close()
                self.repl = None
            raise

    def fold_transactions(self, batch_records: int) -> None:
        """Fold the checkpoints of at most half a batch of records (`FoldsTransactions`)."""
        self._fold_records = max(1, min(RUN_SIZE, batch_records // 2))

    def report_snapshots(self, listener: SnapshotListener) -> None:
        """Send signalled snapshots' progress to ``listener`` (`ReportsSnapshots`)."""
        self._listener = listener
        if self.incremental is not None:
            self.incremental.listen(listener)

    def _incremental(self) -> IncrementalSnapshotter:
        """Signals and incremental snapshots over the stream (`cdc_sources.common.incremental_snapshot`)."""
        if self.incremental is None:
            table = self.signals.table
            source = PostgresChunkSource(
                conn=self.conn, tables=self.tables, codec_for=self._codec_for_info, source=self.source,
                signal_table=(table.parts[0], table.parts[1]) if table is not None and len(table.parts) == 2 else None,
                headers=self.headers)
            make = (partial(ReadOnlyIncrementalSnapshotter, watermarks=PostgresWatermarks(self.conn))
                    if self.config.opt("read.only") else IncrementalSnapshotter)
            self.incremental = make(
                source=source, signals=self.signals, tables=[(t.schema, t.name) for t in self.tables],
                prefix=self.config.name, chunk_size=int(self.config.opt("incremental.snapshot.chunk.size")),
                # a snapshot taken by this run read every table anew: an older incremental one is moot
                state=self.incremental_state if self._consistent_point is None else None,
                listener=self._listener, blocking=BlockingSnapshotter(PostgresBlockingSource(source),
                                             self.blocking_stored if self._consistent_point is None else None))
        return self.incremental

    def _tx_tracker(self) -> TransactionTracker | None:
        if not self.config.opt("provide.transaction.metadata"):
            return None
        delim = self.config.opt("topic.delimiter")
        return TransactionTracker(topic=f"{self.config.name}{delim}{self.config.opt('topic.transaction')}")

    def _stream_settings(self) -> StreamSettings:
        o = self.config.opt
        delim = o("topic.delimiter")
        return StreamSettings(
            slot=self.slot, publication=o("publication.name"), skipped=self.config.skipped_operations,
            tombstones=o("tombstones.on.delete"), poll_interval_s=o("poll.interval.ms") / 1000,
            status_interval_s=o("status.update.interval.ms") / 1000,
            heartbeat_interval_s=o("heartbeat.interval.ms") / 1000,
            heartbeat_topic=f"{o('topic.heartbeat.prefix')}{delim}{self.config.name}",
            message_topic=f"{self.config.name}{delim}message", prefix=self.config.name,
            include_message=self.policy.includes_message, encode_bytes=bytes_encoder(o("binary.handling.mode")),
            skip_unchanged=o("skip.messages.without.change"), headers=self.headers,
        )

    def _codec_for_relation(self, rel: pg.Relation) -> TableCodec | None:
        if not self.policy.captures(rel.namespace, rel.name):
            return None
        self._streamed_tables.add((rel.namespace, rel.name))
        info = self.catalog.tables([rel.oid]).get(rel.oid)
        by_name = {c.name: c for c in info.columns} if info else {}
        types = self.catalog.types({c.type_oid for c in rel.columns})
        columns = []
        for i, rc in enumerate(rel.columns):
            known = by_name.get(rc.name)
            columns.append(PgColumn(rc.name, types[rc.type_oid], rc.typmod,
                                    known.nullable if known else True, known.default if known else None, i + 1))
        pk = info.primary_key if info else tuple(c.name for c in rel.columns if c.flags & 1)
        # attnums from the catalog as it is now (a Relation message has none): a column renamed
        # again or dropped since this message has no id here, and is then not followed by silver
        ids = {rc.name: by_name[rc.name].position for rc in rel.columns if rc.name in by_name}
        return build_codec(prefix=self.config.name, schema=rel.namespace, table=rel.name, columns=columns,
                           primary_key=pk, settings=self.settings, policy=self.policy, origin="stream",
                           column_ids=ids)

    def _current_wal_lsn(self) -> int:
        # the insert position: with synchronous_commit=off the write position can lag commits
        text = self.conn.execute("SELECT pg_current_wal_insert_lsn()::text").fetchone()[0]
        hi, lo = text.split("/")
        return (int(hi, 16) << 32) | int(lo, 16)

    def _heartbeat_action(self) -> None:
        query = self.config.opt("heartbeat.action.query")
        if query:
            self.conn.execute(query)

    def acknowledge(self, offset: SourceOffset) -> None:
        if not isinstance(offset, PostgresOffset):
            raise TypeError(f"a PostgreSQL session acknowledges its own offsets, not {type(offset).__name__}")
        if self.reader is None or not self.config.opt("flush.lsn.source") or offset.snapshot:
            return
        self.reader.acknowledge(offset.lsn)

    def offset_of(self, position: str) -> PostgresOffset:
        return PostgresOffset.from_dict(orjson.loads(position))

    def close(self) -> None:
        if self.repl is not None:
            self.repl.close()
        if self.config.opt("slot.drop.on.stop"):
            slots.drop_slot(self.conn, self.slot)
        self.conn.close()


def _quote(ident: str) -> str:
    return '"' + ident.replace('"', '""') + '"'
