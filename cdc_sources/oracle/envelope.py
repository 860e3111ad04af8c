"""Debezium 3.6.3's Oracle change events from the transaction buffer's committed transactions.

`EventMaker.transaction` turns one `CommittedTransaction` into the records Debezium's buffered
LogMiner adapter dispatches at its commit, in the transaction's change order:

- insert: ``c``; update: ``u`` with the full before and after images; delete: ``d`` then, with
  ``tombstones.on.delete``, a tombstone (the key, a null value);
- an update that changes the key: ``d`` of the old key (header ``__debezium.newkey``), its
  tombstone, and ``c`` of the new key (header ``__debezium.oldkey``);
- ``TRUNCATE TABLE``: ``t`` with a null key, unless ``t`` is in ``skipped.operations`` (its
  default); other DDL is handled by the session before it reaches the maker
  (`cdc_sources.oracle.schema_changes`): here it is an error (`OracleSchemaChangeError`).
  Changes of tables not captured make no record.

The ``source`` block is filled as Debezium's commit handler fills it: ``scn`` the change's SCN,
``commit_scn`` the commit's, ``txId`` the XID, ``txSeq`` the change's position in its transaction
(from 1), ``start_scn``/``start_ts_ms`` those of the transaction's first change, ``user_name``
the transaction's user, ``ts_ms`` and ``commit_ts_ms`` LogMiner's ``TIMESTAMP`` (the database's
local time, whole seconds) shifted to UTC by the database's offset, ``redo_sql`` only with
``log.mining.include.redo.sql``; ``ssn`` stays 0 (Debezium 3.6.3 never sets it). Tables not in
the maker's table map are not captured: their changes make no record.

Pure: the envelope's processing-time ``ts_*`` fields are added when a record is rendered
(`cdc_sources.common.envelope`).
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from cdc_sources.common import kschema as ks
from cdc_sources.common.envelope import dumps, envelope_schema_version
from cdc_sources.oracle.converters import OracleColumn, OracleConverterSettings, convert, field_schema
from cdc_sources.oracle.lob_merge import merge_lobs
from cdc_sources.oracle.redo import DmlKind, RedoColumn, RedoDml, RedoTable, RedoValue, parse_redo
from cdc_sources.oracle.source import OracleEvent, OracleSourceInfo, source_schema
from cdc_sources.oracle.transactions import BufferedChange, ChangeKind, CommittedTransaction
from cdc_sources.spi import HEADER_NEW_KEY, HEADER_OLD_KEY, SchemaVersion

__all__ = [
    "EnvelopeSettings",
    "EventKind",
    "EventMaker",
    "OracleRecord",
    "OracleSchemaChangeError",
    "OracleTable",
    "utc_ms",
]


_DML_OF = {ChangeKind.INSERT: DmlKind.INSERT, ChangeKind.UPDATE: DmlKind.UPDATE, ChangeKind.DELETE: DmlKind.DELETE}


class OracleSchemaChangeError(ValueError):
    """A DDL statement other than ``TRUNCATE TABLE`` (names its SCN, XID and text)."""


class EventKind(enum.Enum):
    CREATE = "c"
    UPDATE = "u"
    DELETE = "d"
    READ = "r"
    TRUNCATE = "t"
    TOMBSTONE = "tombstone"


@dataclass(frozen=True, slots=True)
class OracleTable:
    """A captured table: its owner, name, columns in table order and key columns (empty: keyless)."""

    schema: str
    name: str
    columns: tuple[OracleColumn, ...]
    key: tuple[str, ...] = ()
    _redo: RedoTable = field(init=False, repr=False, compare=False)
    _key_index: tuple[int, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        names = [c.name for c in self.columns]
        missing = [k for k in self.key if k not in names]
        if missing:
            raise ValueError(f"table {self.schema}.{self.name}: key column(s) {missing} not among its columns")
        redo = RedoTable(tuple(RedoColumn.of_type(c.name, c.type.value, c.length) for c in self.columns))
        object.__setattr__(self, "_redo", redo)
        object.__setattr__(self, "_key_index", tuple(names.index(k) for k in self.key))

    @property
    def redo_table(self) -> RedoTable:
        return self._redo

    def topic(self, prefix: str) -> str:
        """Debezium's topic (and bronze table): ``<topic.prefix>.<SCHEMA>.<TABLE>``."""
        return f"{prefix}.{self.schema}.{self.name}"


@dataclass(frozen=True, slots=True)
class EnvelopeSettings:
    """The options that shape events."""

    converters: OracleConverterSettings = field(default_factory=OracleConverterSettings)
    tombstones_on_delete: bool = True
    """``tombstones.on.delete``."""
    skipped_operations: frozenset[str] = frozenset({"t"})
    """``skipped.operations`` (Debezium's default skips truncates)."""
    include_redo_sql: bool = False
    """``log.mining.include.redo.sql``."""
    database_offset: timedelta = timedelta(0)
    """The database's offset from UTC: LogMiner's ``TIMESTAMP`` is the database's local time."""
    lob_enabled: bool = False
    """``lob.enabled``: LOB operations are merged into their row changes (`cdc_sources.oracle.lob_merge`)."""


@dataclass(frozen=True, slots=True)
class OracleRecord:
    """One record bound for a table's topic.

    ``value`` is the envelope without its processing-time ``ts_*`` fields (None for a tombstone);
    ``scn``/``commit_scn``/``xid``/``thread``/``tx_sequence`` place it in the stream.
    """

    kind: EventKind
    table: OracleTable
    key: dict[str, Any] | None
    value: dict[str, Any] | None
    scn: int
    commit_scn: int
    xid: str
    thread: int
    tx_sequence: int
    headers: tuple[tuple[str, str], ...] = ()


def utc_ms(t: datetime | None, offset: timedelta) -> int:
    """LogMiner's local ``TIMESTAMP`` as epoch milliseconds (an aware value is taken as is)."""
    if t is None:
        return 0
    if t.tzinfo is None:
        t = t.replace(tzinfo=UTC) - offset
    return int(t.timestamp()) * 1000 + t.microsecond // 1000


class EventMaker:
    """Makes the records of committed transactions for the tables in ``tables``.

    Args:
        source: the run's fixed ``source`` fields (``topic.prefix``, database name).
        tables: the captured tables by (owner, name).
        settings: the options that shape events.
        captures: whether the table filters take a table (owner, name); a change of such a table
            missing from ``tables`` (created after the start) is an error, not silently dropped.
    """

    def __init__(self, source: OracleSourceInfo, tables: Mapping[tuple[str, str], OracleTable],
                 settings: EnvelopeSettings = EnvelopeSettings(),
                 captures: Callable[[str, str], bool] | None = None) -> None:
        self._source = source
        self._tables = dict(tables)
        self._captures: Callable[[str, str], bool] = captures or (lambda owner, name: False)
        self._settings = settings
        self._schemas: dict[OracleTable, SchemaVersion] = {}

    def table(self, owner: str, name: str) -> OracleTable | None:
        """The captured table (owner, name) as the maker knows it now."""
        return self._tables.get((owner, name))

    def set_table(self, owner: str, name: str, table: OracleTable | None) -> None:
        """Change a table's structure from here on (None: the table is no longer captured)."""
        if table is None:
            self._tables.pop((owner, name), None)
        else:
            self._tables[(owner, name)] = table

    def schema_version(self, table: OracleTable) -> SchemaVersion:
        """The key and envelope schemas of ``table``'s topic."""
        found = self._schemas.get(table)
        if found is not None:
            return found
        topic = table.topic(self._source.name)
        fields = [ks.complete(field_schema(c, self._settings.converters), optional=c.optional, field=c.name)
                  for c in table.columns]
        by_name = {f["field"]: f for f in fields}
        found = self._schemas[table] = envelope_schema_version(
            topic=topic, table=f"{table.schema}.{table.name}", fields=fields,
            key_fields=[by_name[k] for k in table.key], key_names=table.key,
            source_schema={**source_schema(), "field": "source"})
        return found

    def row(self, table: OracleTable, values: tuple[RedoValue, ...]) -> dict[str, Any]:
        """A row image as the ``before``/``after`` struct, column by column in table order."""
        s = self._settings.converters
        return {c.name: convert(c, v, s) for c, v in zip(table.columns, values, strict=True)}

    def read_record(self, table: OracleTable, values: tuple[RedoValue, ...], *, snapshot_scn: int, ts_ms: int,
                    marker: str) -> OracleRecord:
        """A snapshot row's ``r`` record. ``marker`` is ``source.snapshot``: ``first``, ``first_in_data_collection``,
        ``true``, ``last_in_data_collection`` or ``last``; ``scn`` is the snapshot's SCN."""
        after = self.row(table, values)
        source = self._source.block(OracleEvent(schema=table.schema, table=table.name, ts_ms=ts_ms,
                                                scn=snapshot_scn, snapshot=marker))
        value = {"before": None, "after": after, "source": source, "transaction": None, "op": "r"}
        return OracleRecord(EventKind.READ, table, self._key(table, after), value, snapshot_scn, 0, "", 0, 0)

    def transaction(self, tx: CommittedTransaction) -> list[OracleRecord]:
        """The records of one committed transaction, in its change order."""
        if self._settings.lob_enabled:
            return self._lob_transaction(tx)
        out: list[OracleRecord] = []
        first = tx.changes[0].row if tx.changes else None
        for seq, change in enumerate(tx.changes, start=1):
            row = change.row
            owner, name = row.seg_owner or "", row.table_name or ""
            table = self._tables.get((owner, name))
            if table is None and self._captures(owner, name):
                raise OracleSchemaChangeError(
                    f"SCN {row.scn} (XID {row.xid}): {owner}.{name} is captured by the table filters but was not "
                    "when the capture started (created since?): restart the capture to take it in")
            if table is None:
                continue
            if change.kind is ChangeKind.DDL:
                raise OracleSchemaChangeError(
                    f"DDL at SCN {row.scn} (XID {row.xid}) on {owner}.{name}: "
                    f"{(row.sql_redo or '').strip()!r}: DDL must be applied before the maker sees it")
            assert first is not None
            event = OracleEvent(
                schema=table.schema, table=table.name,
                ts_ms=utc_ms(row.timestamp, self._settings.database_offset),
                scn=row.scn, commit_scn=tx.commit_scn, xid=tx.xid, tx_sequence=seq, user_name=tx.user_name,
                rs_id=row.rs_id, ssn=0, redo_thread=row.thread,
                commit_ts_ms=utc_ms(tx.commit_time, self._settings.database_offset),
                start_scn=first.scn, start_ts_ms=utc_ms(first.timestamp, self._settings.database_offset),
                redo_sql=row.sql_redo if self._settings.include_redo_sql else None, row_id=row.row_id)
            source = self._source.block(event)
            out.extend(self._records(change, table, source, tx, seq))
        return out

    def _lob_transaction(self, tx: CommittedTransaction) -> list[OracleRecord]:
        """With ``lob.enabled``: the changes as Debezium's commit consumer hands them out, LOB
        operations merged into them; ``txSeq``, ``start_scn`` and ``start_ts_ms`` count and come
        from the changes handed out (Debezium's dispatch index), not the rows buffered."""
        for change in tx.changes:
            row = change.row
            owner, name = row.seg_owner or "", row.table_name or ""
            if (owner, name) not in self._tables and self._captures(owner, name):
                raise OracleSchemaChangeError(
                    f"SCN {row.scn} (XID {row.xid}): {owner}.{name} is captured by the table filters but was not "
                    "when the capture started (created since?): restart the capture to take it in")
            if change.kind is ChangeKind.DDL and (owner, name) in self._tables:
                raise OracleSchemaChangeError(
                    f"DDL at SCN {row.scn} (XID {row.xid}) on {owner}.{name}: "
                    f"{(row.sql_redo or '').strip()!r}: DDL must be applied before the maker sees it")
        merged = merge_lobs(tx.changes, lambda owner, name: self._tables.get((owner, name)))
        out: list[OracleRecord] = []
        offset = self._settings.database_offset
        first = merged[0].change.row if merged else None
        for seq, m in enumerate(merged, start=1):
            row = m.change.row
            table = self._tables[(row.seg_owner or "", row.table_name or "")]
            assert first is not None
            event = OracleEvent(
                schema=table.schema, table=table.name, ts_ms=utc_ms(row.timestamp, offset),
                scn=row.scn, commit_scn=tx.commit_scn, xid=tx.xid, tx_sequence=seq, user_name=tx.user_name,
                rs_id=row.rs_id, ssn=0, redo_thread=row.thread, commit_ts_ms=utc_ms(tx.commit_time, offset),
                start_scn=first.scn, start_ts_ms=utc_ms(first.timestamp, offset),
                redo_sql=row.sql_redo if self._settings.include_redo_sql else None, row_id=row.row_id)
            dml = RedoDml(_DML_OF[m.kind], *m.images()) if m.kind in _DML_OF else None
            out.extend(self._records(BufferedChange(m.kind, row), table, self._source.block(event), tx, seq, dml))
        return out

    def _records(self, change: BufferedChange, table: OracleTable, source: dict[str, Any],
                 tx: CommittedTransaction, seq: int, parsed: RedoDml | None = None) -> list[OracleRecord]:
        row = change.row

        def rec(kind: EventKind, key: dict[str, Any] | None, before: dict[str, Any] | None,
                after: dict[str, Any] | None, headers: tuple[tuple[str, str], ...] = ()) -> OracleRecord:
            value = None if kind is EventKind.TOMBSTONE else {
                "before": before, "after": after, "source": source, "transaction": None, "op": kind.value}
            return OracleRecord(kind, table, key, value, row.scn, tx.commit_scn, tx.xid, row.thread, seq, headers)

        if change.kind is ChangeKind.TRUNCATE:
            if "t" in self._settings.skipped_operations:
                return []
            return [rec(EventKind.TRUNCATE, None, None, None)]
        dml: RedoDml = parsed if parsed is not None else parse_redo(row.sql_redo or "", table.redo_table)
        before = self.row(table, dml.before) if dml.before else None
        after = self.row(table, dml.after) if dml.after else None
        skipped = self._settings.skipped_operations
        if change.kind is ChangeKind.INSERT:
            return [] if "c" in skipped else [rec(EventKind.CREATE, self._key(table, after), None, after)]
        if change.kind is ChangeKind.DELETE:
            if "d" in skipped:
                return []
            key = self._key(table, before)
            out = [rec(EventKind.DELETE, key, before, None)]
            if self._settings.tombstones_on_delete:
                out.append(rec(EventKind.TOMBSTONE, key, None, None))
            return out
        if "u" in skipped:
            return []
        old_key, new_key = self._key(table, before), self._key(table, after)
        if old_key == new_key:
            return [rec(EventKind.UPDATE, new_key, before, after)]
        # a key change: delete of the old key (with its tombstone), create of the new one
        assert old_key is not None and new_key is not None
        out = [rec(EventKind.DELETE, old_key, before, None, ((HEADER_NEW_KEY, dumps(new_key)),))]
        if self._settings.tombstones_on_delete:
            out.append(rec(EventKind.TOMBSTONE, old_key, None, None))
        out.append(rec(EventKind.CREATE, new_key, None, after, ((HEADER_OLD_KEY, dumps(old_key)),)))
        return out

    @staticmethod
    def _key(table: OracleTable, image: dict[str, Any] | None) -> dict[str, Any] | None:
        if not table.key or image is None:
            return None
        return {k: image[k] for k in table.key}
