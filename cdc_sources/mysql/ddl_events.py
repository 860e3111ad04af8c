"""What a DDL statement produces: schema history records, schema change events and truncates.

Every DDL the binlog (or the snapshot) carries is applied to the `SchemaModel`, so later row
events are decoded with the structure in force at their position, and recorded:

* in the private schema history (`HISTORY_TOPIC`, stored under ``_cdc/<source>/history``), in
  Debezium's ``HistoryRecord`` layout, replayed on restart up to the stored offset;
* as a schema change event on the topic named ``<topic.prefix>`` (``include.schema.changes``),
  key ``{"databaseName"}``;
* ``TRUNCATE`` as one ``op: t`` event per captured table (unless ``skipped.operations`` has ``t``).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from cdc_sources.common.envelope import dumps, truncate_envelope
from cdc_sources.mysql.ddl import (
    DdlEvent,
    DdlOutcome,
    DdlParseError,
    EventKind,
    SchemaModel,
    TableChange,
    history_table_change,
    schema_change_table_change,
)
from cdc_sources.mysql.envelope import SourceInfo
from cdc_sources.mysql.model import TableId
from cdc_sources.mysql.offset import binlog_file_number as file_number
from cdc_sources.mysql.stream import EventContext
from cdc_sources.spi import HISTORY_TOPIC, ChangeRecord, Fatal, HistoryEntry, SchemaVersion, SourceError

log = logging.getLogger(__name__)


class UnparseableDdlError(SourceError, Fatal):
    """A DDL statement could not be parsed and ``schema.history.internal.skip.unparseable.ddl`` is off."""


@dataclass(frozen=True)
class DdlSettings:
    """What the DDL handler needs from the configuration.

    Attributes:
        prefix: ``topic.prefix`` (also the schema change topic).
        include_schema_changes: ``include.schema.changes``.
        skip_unparseable: ``schema.history.internal.skip.unparseable.ddl``.
        store_only_captured_tables: ``schema.history.internal.store.only.captured.tables.ddl``.
        store_only_captured_databases: ``schema.history.internal.store.only.captured.databases.ddl``.
        emit_truncates: ``t`` is not in ``skipped.operations``.
        captures: whether a table is captured (filters).
        captures_database: whether a database is captured (``database.include/exclude.list``).
        headers: the context headers every record carries (``extended.headers.enabled``), or None.
    """

    prefix: str
    include_schema_changes: bool
    skip_unparseable: bool
    store_only_captured_tables: bool
    store_only_captured_databases: bool
    emit_truncates: bool
    captures: Callable[[TableId], bool]
    captures_database: Callable[[str], bool]
    headers: Mapping[str, str] | None = None


class DdlEvents:
    """Implements the stream reader's `DdlHandler` over a `SchemaModel`. Not thread-safe."""

    def __init__(self, model: SchemaModel, settings: DdlSettings, source: SourceInfo,
                 truncate_topic: Callable[[TableId], str]) -> None:
        self.model = model
        self.settings = settings
        self.source = source
        self.truncate_topic = truncate_topic

    def handle(self, ddl: str, database: str, ctx: EventContext,
               snapshot: str = "false") -> list[ChangeRecord | SchemaVersion]:
        """Apply ``ddl`` (run in ``database``) and return the records it produces."""
        try:
            outcome = self.model.apply(ddl, database=database or None)
        except DdlParseError as exc:
            where = f"binlog {ctx.file}:{ctx.event_pos}"
            if self.settings.skip_unparseable:
                log.warning("skipping DDL the parser cannot read at %s (database %r): %s", where, database, exc)
                return []
            raise UnparseableDdlError(
                f"cannot parse the DDL at {where} (database {database!r}): {exc}. The table structures would "
                "be wrong from here on; fix the statement's syntax support or set "
                "schema.history.internal.skip.unparseable.ddl=true to skip it") from exc
        if outcome.ignored:
            return []
        for warning in outcome.warnings:
            log.warning("DDL at binlog %s:%s (database %r): %s", ctx.file, ctx.event_pos, database, warning)
        out: list[ChangeRecord | SchemaVersion] = []
        # one history record and one schema change event per event, as Debezium writes them; a
        # statement without events (CREATE INDEX, ALTER of an unknown table) is one database-level record
        events: list[tuple[str, str, TableId | None, TableChange | None]] = [
            (e.database or database, e.statement, e.table_id, e.change)
            for i, e in enumerate(outcome.events) if e.kind is not EventKind.TRUNCATE_TABLE
            and not _later_variable_of_one_set(outcome.events, i)]
        parsed = bool(outcome.events)
        if not parsed:
            events = [(outcome.database or database, ddl, None, None)]
        for k, (db, statement, table, change) in enumerate(events):
            tables = [table] if table is not None else []
            if self._stored(db, tables):
                out.append(self._history(statement, db, ctx, change, k))
            if self.settings.include_schema_changes and self._published(db, tables, parsed):
                out.append(self._schema_change(statement, db, ctx, table, change, snapshot, k))
        out.extend(self._truncates(outcome, ctx, len(events)))
        return out

    def _stored(self, db: str, tables: list[TableId]) -> bool:
        if self.settings.store_only_captured_tables and tables:
            return any(self.settings.captures(t) for t in tables)
        if self.settings.store_only_captured_databases and db:
            return self.settings.captures_database(db)
        return True

    def _published(self, db: str, tables: list[TableId], parsed: bool) -> bool:
        if tables:
            if any(self.settings.captures(t) for t in tables):
                return True
            # Debezium drops the schema change event of a table outside the filters only when
            # the history keeps captured tables alone; otherwise it is published as it is stored
            return not self.settings.store_only_captured_tables and self._stored(db, tables)
        if not db:
            # a statement of no database that the parser read (the snapshot's ``SET
            # character_set_server=...``) is published with databaseName "", as Debezium does
            return parsed
        return self.settings.captures_database(db)

    def _truncates(self, outcome: DdlOutcome, ctx: EventContext, first: int) -> Iterable[ChangeRecord]:
        if not self.settings.emit_truncates:
            return
        for k, table in enumerate(outcome.truncated, start=first):
            if not self.settings.captures(table):
                continue
            source = self.source.block(db=table.database, table=table.table, ts_ms=ctx.ts_ms, snapshot="false",
                                       server_id=ctx.server_id, gtid=ctx.gtid, file=ctx.file, pos=ctx.event_pos,
                                       row=ctx.source_row, thread=ctx.thread, query=ctx.query)
            yield ChangeRecord(self.truncate_topic(table), None, truncate_envelope(source, None), "t",
                               dumps(ctx.offset(row=0)), ctx.order(0, k), headers=self.settings.headers)

    def _history(self, ddl: str, db: str, ctx: EventContext, change: TableChange | None, k: int) -> ChangeRecord:
        position = ctx.offset(row=0)
        position["pos"] = ctx.event_pos
        record = {
            "source": {"server": self.settings.prefix},
            "position": position,
            "ts_ms": time.time_ns() // 1_000_000,
            "databaseName": db,
            "ddl": ddl,
            "tableChanges": [history_table_change(change)] if change is not None else [],
        }
        return ChangeRecord(HISTORY_TOPIC, dumps({"databaseName": db}), dumps(record), None, dumps(position),
                            ctx.order(0, k))

    def _schema_change(self, ddl: str, db: str, ctx: EventContext, table: TableId | None,
                       change: TableChange | None, snapshot: str, k: int) -> ChangeRecord:
        source = self.source.block(db=db, table=table.table if table is not None else None, ts_ms=ctx.ts_ms,
                                   snapshot=snapshot, server_id=ctx.server_id, gtid=ctx.gtid, file=ctx.file,
                                   pos=ctx.event_pos, row=ctx.source_row, thread=ctx.thread, query=None)
        value = {
            "source": source,
            "ts_ms": time.time_ns() // 1_000_000,
            "databaseName": db,
            "schemaName": None,
            "ddl": ddl,
            "tableChanges": [schema_change_table_change(change)] if change is not None else [],
        }
        return ChangeRecord(self.settings.prefix, dumps({"databaseName": db}), dumps(value), None,
                            dumps(ctx.offset(row=0)), ctx.order(0, k), headers=self.settings.headers)


def _later_variable_of_one_set(events: Sequence[DdlEvent], i: int) -> bool:
    """Whether event ``i`` is the second or later variable of one ``SET a=..., b=...``: Debezium
    records such a statement once (its ``SetVariableEvent`` of order 0 only)."""
    event = events[i]
    if event.kind is not EventKind.SET_VARIABLE or i == 0:
        return False
    previous = events[i - 1]
    return previous.kind is EventKind.SET_VARIABLE and previous.statement == event.statement


def replay_history(model: SchemaModel, history: Iterable[HistoryEntry], *, until: tuple[int, int] | None,
                   skip_unparseable: bool) -> int:
    """Rebuild the schema model from the stored history. Returns the records applied.

    Streamed DDL is applied if it lies before ``until`` (``(binlog file number, pos)`` of the
    stored offset; None: everything): later records were written by a run that crashed before
    storing its offset, and the binlog is read again from there. Snapshot records (position
    marked ``snapshot``) are always applied: an interrupted snapshot's records are deleted
    before it restarts, so those left belong to completed snapshots.
    """
    applied = 0
    for entry in history:
        record: dict[str, Any] = orjson.loads(entry.value)
        position = record.get("position") or {}
        here = (file_number(str(position.get("file", ""))), int(position.get("pos", 0)))
        if until is not None and here >= until and not position.get("snapshot"):
            continue
        try:
            model.apply(str(record["ddl"]), database=record.get("databaseName") or None)
        except DdlParseError as exc:
            if not skip_unparseable:
                raise UnparseableDdlError(
                    f"cannot replay the stored schema history at {position}: {exc}") from exc
            log.warning("skipping unparseable DDL in the schema history at %s: %s", position, exc)
        applied += 1
    return applied
