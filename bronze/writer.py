"""The bronze Delta writer: one commit per bronze table per batch, exactly once.

Protocol for one batch (``BronzeWriter.stage`` any number of times, then ``commit``):

1. staging: for each topic, records whose ``order_key`` is not newer than the table's
   high-water mark are dropped (they were committed before a crash and are being replayed;
   records with a ``lane`` are compared with the newest of their own lane only),
   the rest get consecutive ``seq`` values and are written to the batch's data files of the
   table (`bronze.data_files`), in no table yet;
2. at the commit, new schema versions are appended to ``_cdc/<source>/schemas`` (so every
   ``schema_id`` a data row carries is resolvable before the row is visible);
3. each table's staged files are added in ONE Delta commit that also records the table's new
   high-water mark, last seq, batch number and an application transaction
   (``appId=<source>``, ``version=<batch>``);
4. the batch's source offset is appended to ``_cdc/<source>/offsets``, with where the source
   transactions complete at the batch's end stop in each table (``cdc.complete_seq``).

Every table, the offsets table included, is kept open between commits (`bronze.kept_table`): a
commit then costs the new version's conditional put and a read of that one version, instead of
reloading the log from its last checkpoint (on an object store, a GET per commit file since
then). The offsets table is opened afresh every `REOPEN_EVERY` commits, before a commit
(between steps, never within one): an open table's state grows, and its commits slow down,
with every commit.

Transaction ends: the caller says, for each group of records it stages, whether a source
transaction ends right after them (``transaction_end``; the coordinator knows from the
connector's checkpoints). Rows staged after the last such end belong to a transaction still
open; the first seq of those rows per table is kept (across batches, and across restarts
through the offsets commit) until the next transaction end. After a crash between a batch's
data commits and its offset commit, the open transaction's rows already in a table come back
as replays: they are the table's newest rows (the source resumes at the last transaction end),
so the transaction's first seq there is counted back from the table's last seq.

Only after ``commit`` returns may the caller acknowledge the source. A crash between any two
steps leaves bronze consistent: on restart the connector resumes from the last offset in
step 4, the source replays what follows it, and step 1 drops what is already there; files
staged by the lost attempt are referenced by no commit.

Not thread-safe; one writer per source. Tables are written concurrently within a batch.
"""

from __future__ import annotations

import datetime as dt
import importlib.metadata
import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import orjson
import pyarrow as pa
import pyarrow.compute as pc
from deltalake import CommitProperties, DeltaTable, PostCommitHookProperties, Transaction, write_deltalake
from deltalake import Schema as DeltaSchema
from deltalake.exceptions import CommitFailedError
from deltalake.transaction import AddAction, RemoveAction, create_table_with_add_actions

from bronze.data_files import TABLE_CONFIGURATION, OpenDataFile, TableLocation
from bronze.kept_table import REOPEN_EVERY, KeptTable
from bronze.log_append import LogAppender, can_append, puts_conditionally
from bronze.record_runs import Prepared, RecordRun, prepare, repeated_headers
from bronze.schema import (
    BRONZE_SCHEMA,
    COL_HEADERS,
    COL_KEY,
    COL_OP,
    COL_POSITION,
    COL_SCHEMA_ID,
    COL_SEQ,
    COL_VALUE,
    META_BATCH,
    META_COMPLETE_SEQ,
    META_LANE_ORDER_KEYS,
    META_LAST_SEQ,
    META_OFFSET,
    META_ORDER_KEY,
    META_SNAPSHOT_COMPLETED,
    META_SOURCE,
    META_WRITER,
    OFFSETS_CONFIGURATION,
    OFFSETS_SCHEMA,
    SCHEMAS_SCHEMA,
    history_path,
    offsets_path,
    schemas_path,
    topic_path,
)
from bronze.view import BronzeView, StoredOffset, TableState, lane_marks, table_state_of
from cdc_sources.spi import HISTORY_TOPIC, ChangeBlock, ChangeRecord, HistoryEntry, SchemaVersion

log = logging.getLogger(__name__)

try:
    WRITER_VERSION = f"cdc-lakehouse {importlib.metadata.version('cdc-lakehouse')}"
except importlib.metadata.PackageNotFoundError:  # pragma: no cover - running from a source tree
    WRITER_VERSION = "cdc-lakehouse (source tree)"

FILE_MAX_ROWS = 2_000_000
"""A batch's rows of one table go to a new data file after this many (bounds file size)."""


@dataclass
class _StagedTable:
    """A table's part of the batch being built: its open data files, not committed yet.

    Attributes:
        state: the table's state as of its newest staged record.
        received: records handed to the writer, replays included.
        written: records staged (replays dropped).
    """

    state: TableState
    files: list[OpenDataFile] = field(default_factory=list)
    received: int = 0
    written: int = 0


@dataclass(frozen=True)
class _StageOutcome:
    """What one `BronzeWriter.stage` call staged of one table.

    Attributes:
        first_seq: the seq of its first new row (None: every record was a replay).
        replayed: records dropped as replays.
        last_seq_before: the table's last seq before the call.
    """

    first_seq: int | None
    replayed: int
    last_seq_before: int


@dataclass(frozen=True)
class BronzeCommitResult:
    """What one ``commit`` wrote."""

    batch: int
    records_written: int
    records_skipped: int
    topics: tuple[str, ...]
    per_topic: dict[str, int] = field(default_factory=dict)
    bytes_written: int = 0
    """Bytes of the data files the commit added (Parquet, compressed)."""


@dataclass
class BronzeWriter:
    """Writes one source's batches to bronze exactly once.

    Attributes:
        root: the lakehouse root (path or URI).
        source: the source name (``appId`` of the Delta application transactions).
        storage_options: passed to delta-rs for object stores.
    """

    root: str
    source: str
    storage_options: dict[str, str] | None = None
    _tables: dict[str, TableState] = field(default_factory=dict, init=False)
    _known_schemas: set[str] | None = field(default=None, init=False)
    _batch: int = field(default=0, init=False)
    _pool: ThreadPoolExecutor = field(default_factory=lambda: ThreadPoolExecutor(4), init=False)
    _open: dict[str, KeptTable] = field(default_factory=dict, init=False)
    """Per topic: its table, kept open between commits (`_table`)."""
    _pending: dict[str, _StagedTable] = field(default_factory=dict, init=False)
    _locations: dict[str, TableLocation] = field(default_factory=dict, init=False)
    _appenders: dict[str, LogAppender | None] = field(default_factory=dict, init=False)
    """Per topic: its one-request append (`bronze.log_append`), set after a commit through delta-rs."""
    """Per topic: where its data files go (`_location`)."""
    _batch_time: dt.datetime | None = field(default=None, init=False)
    _open_from: dict[str, int] = field(default_factory=dict, init=False)
    """Per table: the first seq of the rows (committed or staged) of the source transaction still open."""
    _open_replays: dict[str, int] = field(default_factory=dict, init=False)
    """Per table: replayed records of the open transaction dropped since the last transaction end."""
    _offsets: KeptTable | None = field(default=None, init=False)
    """The offsets table, kept open between commits (`_offsets_table`)."""

    def recover(self) -> StoredOffset | None:
        """Load the last committed offset; None if nothing committed yet.

        The known schema versions are read at the first commit that registers any: a run with
        nothing to capture never reads that table (reading it loads Arrow's dataset machinery).
        """
        self._known_schemas = None
        self._appenders.clear()  # the first commit of each table goes through delta-rs again
        if self._offsets is not None:
            self._offsets.forget()
        stored, self._batch = self.view().last_offset()
        self._open_from = dict(stored.open_from) if stored else {}
        return stored

    def view(self) -> BronzeView:
        """The read-only view of this source's bronze bookkeeping."""
        return BronzeView(self.root, self.source, self.storage_options)

    def table_state(self, topic: str) -> TableState:
        """The committed state of a topic's table, read lazily from its last commit."""
        state = self._tables.get(topic)
        if state is None:
            state = self._read_table_state(topic)
            self._tables[topic] = state
        return state

    def stage(self, records: Sequence[ChangeRecord | ChangeBlock | RecordRun], *,
              transaction_end: bool = True) -> None:
        """Write records of the batch being built to data files now; `commit` records them.

        Replays (records not newer than a table's high-water mark) are dropped here, and the
        rest get their ``seq``. Until the commit the rows are in no table: a crash leaves only
        unreferenced files behind. Records given as `ChangeRecord`s are converted here; a
        caller on another thread converts them itself first (`record_runs.prepare`).

        ``transaction_end``: a source transaction ends right after these records (then every
        row staged or committed so far is of a complete transaction); False: they belong to a
        transaction still open (see module doc).
        """
        outcomes = self._stage(records)
        if transaction_end:
            self._open_from.clear()
            self._open_replays.clear()
            return
        for topic, outcome in outcomes.items():
            if outcome.replayed:  # the table's newest rows: the transaction began that many rows back
                n = self._open_replays[topic] = self._open_replays.get(topic, 0) + outcome.replayed
                self._open_from[topic] = min(self._open_from.get(topic, outcome.last_seq_before + 1),
                                             outcome.last_seq_before - n + 1)
            if outcome.first_seq is not None:
                self._open_from.setdefault(topic, outcome.first_seq)

    def _stage(self, records: Sequence[ChangeRecord | ChangeBlock | RecordRun]) -> dict[str, _StageOutcome]:
        """Stage ``records``; returns what was staged of each table."""
        if not records:
            return {}
        batch = self._batch + 1
        if self._batch_time is None:
            self._batch_time = dt.datetime.now(dt.UTC)
        by_topic: dict[str, list[Prepared]] = {}
        for item in prepare(records):
            by_topic.setdefault(item.topic, []).append(item)
        futures = {topic: self._pool.submit(self._stage_topic, topic, items, batch, self._batch_time)
                   for topic, items in by_topic.items()}
        return {topic: future.result() for topic, future in futures.items()}

    def commit(
        self,
        records: Sequence[ChangeRecord | ChangeBlock | RecordRun],
        schemas: Iterable[SchemaVersion],
        offset: Mapping[str, Any],
        *,
        snapshot_completed: bool,
        transaction_end: bool = True,
    ) -> BronzeCommitResult:
        """Commit a batch: its staged records and ``records``, then the offset (see module doc).

        ``transaction_end``: as for `stage`, about ``records``."""
        self.stage(records, transaction_end=transaction_end)
        batch = self._batch + 1
        now = self._batch_time or dt.datetime.now(dt.UTC)
        self._commit_schemas(list(schemas), now)
        pending, self._pending, self._batch_time = self._pending, {}, None
        futures = [self._pool.submit(self._commit_topic, topic, staged, batch)
                   for topic, staged in pending.items() if staged.files]
        bytes_written = sum(future.result() for future in futures)
        counts = {topic: staged.received for topic, staged in pending.items()}
        written = sum(staged.written for staged in pending.values())
        total = sum(counts.values())
        complete = {topic: first - 1 for topic, first in sorted(self._open_from.items())}
        self._commit_offset(batch, offset, snapshot_completed, sorted(pending), total, now, complete)
        self._batch = batch
        return BronzeCommitResult(batch, written, total - written, tuple(sorted(pending)), counts, bytes_written)

    def discard_incomplete_snapshot(self) -> int:
        """Delete the rows of an interrupted snapshot (every row after the last completed batch).

        A restarted snapshot reads every table again at a new point in time, so the rows of
        the attempt that did not finish must go, or bronze would hold them twice: its ``r``
        rows, its private history (rewritten in full) and its schema change events.
        """
        completed = self.view().last_completed_snapshot_batch()
        removed = 0
        for topic in self.view().topics():
            table = self._table(topic)
            if table is None:
                continue
            metrics = table.delete(f"batch > {completed}")
            self._open[topic].committed()
            self._appenders.pop(topic, None)
            removed += int(metrics.get("num_deleted_rows", 0))
            # the deleted rows were the table's newest: seq continues after what is left, and the
            # high-water mark falls back to before them (a new attempt may reuse their order keys:
            # a MySQL snapshot of an idle server reads at the same binlog position again)
            state = self.table_state(topic)
            self._tables[topic] = self._marks_upto(table, completed, TableState(_max_seq(table), (), state.batch))
        self._open_from.clear()  # the snapshot starts the source over: no transaction is open
        return removed

    def _marks_upto(self, table: DeltaTable, batch: int, state: TableState) -> TableState:
        """``state`` with the table's high-water marks as of ``batch``: those of its newest commit
        of this source at or before that batch; empty if none."""
        for commit in table.history():
            if commit.get(META_SOURCE) == self.source and META_ORDER_KEY in commit and int(commit[META_BATCH]) <= batch:
                return TableState(state.last_seq, tuple(orjson.loads(commit[META_ORDER_KEY])), state.batch,
                                  lane_marks(commit))
        return state

    def _table(self, topic: str) -> DeltaTable | None:
        """The open Delta table of a topic (kept open: reloading the log costs a lot), or None if
        it does not exist yet."""
        kept = self._open.get(topic)
        if kept is None:
            kept = self._open[topic] = KeptTable(self._path(topic), self.storage_options, None)
        return kept.get()

    def _location(self, topic: str) -> TableLocation:
        """Where a topic's data files go, opened once (an object store's client is kept)."""
        location = self._locations.get(topic)
        if location is None:
            location = self._locations[topic] = TableLocation.of(self._path(topic), self.storage_options)
        return location

    def _path(self, topic: str) -> str:
        return history_path(self.root, self.source) if topic == HISTORY_TOPIC else topic_path(self.root, topic)

    def read_history(self) -> list[HistoryEntry]:
        """Every record of the connector's private history, in the order it was written."""
        return self.view().history()

    def close(self) -> None:
        """Stop; files staged since the last commit stay uncommitted (they are in no table)."""
        for staged in self._pending.values():
            for data_file in staged.files:
                data_file.abandon()
        self._pending = {}
        self._pool.shutdown(wait=True)

    # -- data tables ---------------------------------------------------------------------------

    def _stage_topic(self, topic: str, items: list[Prepared], batch: int, now: dt.datetime) -> _StageOutcome:
        """Stage a table's records (replays dropped)."""
        staged = self._pending.get(topic)
        if staged is None:
            staged = self._pending[topic] = _StagedTable(self.table_state(topic))
        before = staged.state.last_seq
        received = sum(len(item) for item in items)
        parts: list[pa.Table] = []
        seq = staged.state.last_seq + 1
        marks = staged.state
        for item in items:
            staged.received += len(item)
            if isinstance(item, ChangeBlock):
                block = item.after(marks.order_key)
                if block is None:
                    continue
                parts.append(_block_to_arrow(block, seq, batch, now))
                seq += len(block)
                marks = marks.with_mark(None, block.last_order_key)
            else:
                columns = item.after(marks.mark(item.lane))
                if columns is None:
                    continue
                parts.append(_with_seq(columns, seq, batch, now))
                seq += columns.num_rows
                marks = marks.with_mark(item.lane, item.last_order_key)
        if not parts:
            return _StageOutcome(None, received, before)
        table = parts[0] if len(parts) == 1 else pa.concat_tables(parts)
        if not staged.files or staged.files[-1].rows >= FILE_MAX_ROWS:
            staged.files.append(OpenDataFile(self._location(topic)))
        staged.files[-1].append(table)
        staged.written += table.num_rows
        staged.state = TableState(seq - 1, marks.order_key, batch, marks.lanes)
        return _StageOutcome(before + 1, received - table.num_rows, before)

    def _commit_topic(self, topic: str, staged: _StagedTable, batch: int) -> int:
        """Record a table's staged files in one Delta commit with the batch's metadata; returns their bytes."""
        adds = [f.close() for f in staged.files]
        metadata = {
            META_SOURCE: self.source,
            META_WRITER: WRITER_VERSION,
            META_BATCH: str(batch),
            META_LAST_SEQ: str(staged.state.last_seq),
            META_ORDER_KEY: orjson.dumps(list(staged.state.order_key)).decode(),
        }
        if staged.state.lanes:
            metadata[META_LANE_ORDER_KEYS] = orjson.dumps(
                {lane: list(key) for lane, key in sorted(staged.state.lanes.items())}).decode()
        props = CommitProperties(
            custom_metadata=metadata,
            app_transactions=[Transaction(app_id=self.source, version=batch)],
        )
        kept = self._open.get(topic)
        if kept is None or not self._append(topic, kept, adds, metadata, batch):
            self._commit_topic_delta_rs(topic, adds, props)
        self._tables[topic] = staged.state
        return sum(add.size for add in adds)

    def _append(self, key: str, kept: KeptTable, adds: list[AddAction], metadata: dict[str, str],
                batch: int) -> bool:
        """A table's commit in one request (`bronze.log_append`) where it can be used, then the
        checkpoint delta-rs's post-commit hook would have written; False when it cannot be used or
        lost to a concurrent commit (nothing committed). When the store fails, whether the commit
        landed is unknown: the table is read afresh before anything else commits.

        ``key``: the table's topic, or the offsets table's path."""
        appender = self._appenders.get(key)
        if appender is None:
            return False
        try:
            if not appender.append(adds, metadata, self.source, batch, WRITER_VERSION):
                return False
        except BaseException:
            self._appenders.pop(key, None)
            self._tables.pop(key, None)
            kept.forget()
            raise
        kept.behind()
        if appender.checkpoint_due():
            table = kept.get()  # reads the versions committed since it was last read
            if table is not None:
                table.create_checkpoint()
                _clean_expired_logs(table)
        return True

    def _commit_topic_delta_rs(self, topic: str, adds: list[AddAction], props: CommitProperties) -> None:
        """A table's commit through delta-rs: the table's first, the first of a run, and any whose
        one-request append (`bronze.log_append`) lost to a concurrent commit or cannot be used."""
        target = self._table(topic)
        if target is None:
            create_table_with_add_actions(
                self._path(topic), DeltaSchema.from_arrow(BRONZE_SCHEMA), adds, mode="error",
                configuration=TABLE_CONFIGURATION, storage_options=self.storage_options,
                commit_properties=props,
            )
        else:
            actions: list[AddAction | RemoveAction] = list(adds)
            _append_retrying(lambda: target.create_write_transaction(
                actions, "append", BRONZE_SCHEMA, commit_properties=props,
                post_commithook_properties=_COMMIT_HOOKS), target)
            target.update_incremental()
            _clean_expired_logs(target)
            self._open[topic].committed()
            self._appenders[topic] = _appender(self._location(topic), target, self.storage_options)

    def _read_table_state(self, topic: str) -> TableState:
        table = self._table(topic)
        return TableState() if table is None else table_state_of(table, self.source)

    # -- side tables -----------------------------------------------------------------------------

    def _commit_schemas(self, schemas: list[SchemaVersion], now: dt.datetime) -> None:
        if not schemas:
            return
        if self._known_schemas is None:
            self._known_schemas = set(self.view().schema_ids())
        known = self._known_schemas
        unique = {s.schema_id: s for s in schemas if s.schema_id not in known}
        if not unique:
            return
        rows = list(unique.values())
        table = pa.Table.from_pydict(
            {
                "topic": [s.topic for s in rows],
                "schema_id": [s.schema_id for s in rows],
                "table": [s.table for s in rows],
                "primary_key": [list(s.primary_key) for s in rows],
                "key_schema": [s.key_schema for s in rows],
                "value_schema": [s.value_schema for s in rows],
                # versions of one commit in the order the source announced them: readers order a
                # topic's versions by this time, and a rename applies from the version before
                "registered_at": [now + dt.timedelta(microseconds=i) for i in range(len(rows))],
                "renamed_columns": [[{"old": o, "new": n} for o, n in s.renamed_columns] for s in rows],
                "column_ids": [list(s.column_ids) for s in rows],
            },
            schema=SCHEMAS_SCHEMA,
        )
        # merge: a schema history written before ``renamed_columns``/``column_ids`` existed gains them
        _append_retrying(lambda: write_deltalake(schemas_path(self.root, self.source), table, mode="append",
                                                 schema_mode="merge", storage_options=self.storage_options), None)
        known.update(unique)

    def _commit_offset(self, batch: int, offset: Mapping[str, Any], snapshot_completed: bool,
                       topics: list[str], records: int, now: dt.datetime, complete: Mapping[str, int]) -> None:
        text = orjson.dumps(offset, option=orjson.OPT_SORT_KEYS).decode()
        table = pa.Table.from_pydict(
            {"batch": [batch], "offset": [text], "snapshot_completed": [snapshot_completed],
             "topics": [topics], "records": [records], "committed_at": [now]},
            schema=OFFSETS_SCHEMA,
        )
        metadata = {META_SOURCE: self.source, META_BATCH: str(batch), META_OFFSET: text,
                    META_SNAPSHOT_COMPLETED: str(snapshot_completed).lower(),
                    META_COMPLETE_SEQ: orjson.dumps(complete).decode()}
        props = CommitProperties(custom_metadata=metadata,
                                 app_transactions=[Transaction(app_id=self.source, version=batch)])
        path = offsets_path(self.root, self.source)
        if self._offsets is not None and self._appenders.get(path) is not None:
            data_file = OpenDataFile(self._offsets_location(), schema=OFFSETS_SCHEMA, stats_columns=_OFFSETS_STATS)
            data_file.append(table)
            # a file left by a lost race is in no commit (VACUUM removes it): delta-rs writes its own
            if self._append(path, self._offsets, [data_file.close()], metadata, batch):
                return
        target = self._offsets_table()
        if target is None:  # the first batch creates the table
            _append_retrying(lambda: write_deltalake(offsets_path(self.root, self.source), table, mode="append",
                                                     commit_properties=props, storage_options=self.storage_options,
                                                     configuration=OFFSETS_CONFIGURATION),
                             None)
            return
        # Through the table kept open: by path, delta-rs reloads the log from the last checkpoint
        # at every commit (on an object store a GET per commit file since then, about 20 of a small
        # batch's 40 requests on S3). The commit's conditional put of the next version still
        # detects a concurrent commit (then delta-rs reads it and, for an append, tries again).
        _append_retrying(lambda: write_deltalake(target, table, mode="append", commit_properties=props,
                                                 post_commithook_properties=_COMMIT_HOOKS), target)
        _clean_expired_logs(target)
        if self._offsets is not None:
            self._offsets.committed()
        self._appenders[path] = _appender(self._offsets_location(), target, self.storage_options)

    def _offsets_location(self) -> TableLocation:
        """Where the offsets table's data files go when the writer writes them (`_append`)."""
        path = offsets_path(self.root, self.source)
        location = self._locations.get(path)
        if location is None:
            location = self._locations[path] = TableLocation.of(path, self.storage_options)
        return location

    def _offsets_table(self) -> DeltaTable | None:
        """The offsets table, kept open between commits and opened afresh every `REOPEN_EVERY`
        commits (`bronze.kept_table`); None if it does not exist yet."""
        if self._offsets is None:
            self._offsets = KeptTable(offsets_path(self.root, self.source), self.storage_options, REOPEN_EVERY)
        return self._offsets.get()


_OFFSETS_STATS = ("batch", "records", "committed_at", "snapshot_completed", "offset")
"""The offsets table's columns whose statistics its add actions carry (not ``topics``, a list)."""


def _appender(location: TableLocation, table: DeltaTable,
              storage_options: Mapping[str, str] | None) -> LogAppender | None:
    """The one-request append (`bronze.log_append`) of a table just read or committed through
    delta-rs, from its version on; None where it cannot be used (a local table, no obstore, a
    store configured to create files another way, a table whose protocol it does not write:
    `bronze.log_append`)."""
    if location.store is None or not puts_conditionally(storage_options) or not can_append(table):
        return None
    interval = int(table.metadata().configuration.get("delta.checkpointInterval") or 100)
    return LogAppender(location.store, table.version(), interval)


def _with_seq(columns: pa.Table, first_seq: int, batch: int, now: dt.datetime) -> pa.Table:
    """A run's record columns with the writer's ``seq``, ``ingested_at`` and ``batch``."""
    n = columns.num_rows
    return pa.Table.from_arrays(
        [
            columns.column(COL_KEY),
            columns.column(COL_VALUE),
            columns.column(COL_OP),
            pa.arange(first_seq, first_seq + n).cast(pa.int64()),
            columns.column(COL_POSITION),
            columns.column(COL_SCHEMA_ID),
            columns.column(COL_HEADERS),
            _same(now, pa.timestamp("us", tz="UTC"), n),
            _same(batch, pa.int64(), n),
        ],
        schema=BRONZE_SCHEMA,
    )


def _block_to_arrow(block: ChangeBlock, first_seq: int, batch: int, now: dt.datetime) -> pa.Table:
    n = len(block)
    headers = block.headers
    keys = block.keys if block.keys is not None else pa.nulls(n, pa.large_string())
    return pa.Table.from_arrays(
        [
            keys.cast(pa.large_string()),
            block.values.cast(pa.large_string()),
            _same(block.op, pa.string(), n),
            pa.arange(first_seq, first_seq + n).cast(pa.int64()),
            block.positions.cast(pa.string()),
            _same(block.schema_id, pa.string(), n),
            repeated_headers(headers, n),
            _same(now, pa.timestamp("us", tz="UTC"), n),
            _same(batch, pa.int64(), n),
        ],
        schema=BRONZE_SCHEMA,
    )


_COMMIT_HOOKS = PostCommitHookProperties(create_checkpoint=True, cleanup_expired_logs=False)
"""delta-rs's post-commit work for the writer's commits: the checkpoint every
``delta.checkpointInterval`` versions, but not the search for expired log files, which lists the
table's log after every commit (a LIST a commit on an object store); `_clean_expired_logs` does it
at the checkpoints instead."""


def _clean_expired_logs(table: DeltaTable) -> None:
    """Delete the table's expired log files (``delta.logRetentionDuration``) if its version just
    got a checkpoint (one every ``delta.checkpointInterval`` versions), unless
    ``delta.enableExpiredLogCleanup`` is false: what delta-rs's post-commit hook does, without its
    LIST of the log at every other commit (log files only expire as a whole before a checkpoint)."""
    configuration = table.metadata().configuration
    interval = int(configuration.get("delta.checkpointInterval") or 100)
    # delta-rs 1.x checkpoints version v when v + 1 is a multiple of the interval
    if (table.version() + 1) % interval or (configuration.get("delta.enableExpiredLogCleanup")
                                            or "true").lower() == "false":
        return
    table.cleanup_metadata()


_APPEND_ATTEMPTS = 5


def _append_retrying(commit: Callable[[], object], table: DeltaTable | None) -> None:
    """An append commit, tried again on a fresh snapshot when it loses to a concurrent commit.

    delta-rs checks an append against what committed since the writer's snapshot: a compaction
    or VACUUM (``cdc-lakehouse maintain``) that removed files in between fails it with
    `CommitFailedError`, though an append conflicts with neither. Nothing was committed then,
    so committing the same files again is safe."""
    for attempt in range(_APPEND_ATTEMPTS):
        try:
            commit()
            return
        except CommitFailedError:
            if attempt == _APPEND_ATTEMPTS - 1:
                raise
            log.info("bronze commit lost to a concurrent commit (maintenance?); trying again")
            if table is not None:
                table.update_incremental()


def _max_seq(table: DeltaTable) -> int:
    """The largest ``seq`` in a table, from the file statistics (no data read)."""
    actions = pa.table(table.get_add_actions(flatten=True))
    if actions.num_rows == 0:
        return 0
    column = actions.column("max.seq") if "max.seq" in actions.column_names else None
    if column is None:
        seqs = table.to_pyarrow_table(columns=[COL_SEQ]).column(COL_SEQ)
        return int(pc.max(seqs).as_py() or 0)
    return int(pc.max(column).as_py() or 0)


def _same(value: Any, type_: pa.DataType, n: int) -> pa.Array:
    return pa.repeat(pa.scalar(value, type_), n)
