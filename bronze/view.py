"""A read-only view of a source's bronze bookkeeping: offsets, table states, connector history.

What capture (at restart), ``status``, the operations commands and silver read of bronze,
without building a writer. delta-rs only, no Spark; it reads Delta logs (commit metadata)
where it can rather than data files, and writes nothing.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import orjson
from deltalake import DeltaTable
from deltalake.exceptions import TableNotFoundError

from bronze.schema import (
    COL_POSITION,
    COL_SEQ,
    COL_VALUE,
    META_BATCH,
    META_COMPLETE_SEQ,
    META_CONTROL,
    META_LANE_ORDER_KEYS,
    META_LAST_SEQ,
    META_OFFSET,
    META_ORDER_KEY,
    META_SNAPSHOT_COMPLETED,
    META_SOURCE,
    history_path,
    offsets_path,
    schemas_path,
    topic_path,
)
from bronze.table_read import read_columns
from cdc_sources.spi import HISTORY_TOPIC, HistoryEntry

__all__ = ["BronzeView", "CaptureCommit", "StoredOffset", "TableState", "lane_marks", "recent_commits",
           "table_state_of"]

_MAINTENANCE = frozenset({"OPTIMIZE", "VACUUM START", "VACUUM END", "SET TBLPROPERTIES"})
"""Operations that leave a table's rows as they are."""


@dataclass(frozen=True)
class StoredOffset:
    """The last committed offset of a source.

    Attributes:
        batch: the batch number that committed it.
        offset: the connector's offset map.
        snapshot_completed: whether the initial snapshot had finished by then.
        open_from: per table, the first seq of the rows of the source transaction still open
            at that batch's end (tables without such rows are not named).
    """

    batch: int
    offset: dict[str, Any]
    snapshot_completed: bool
    open_from: Mapping[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class TableState:
    """What is known about one bronze table: its newest committed record.

    Attributes:
        last_seq: the newest record's ``seq``.
        order_key: the high-water mark of the records without a lane (`ChangeRecord.lane`).
        batch: the batch of the newest commit.
        lanes: per lane, the high-water mark of its records (a table written with lanes).
    """

    last_seq: int = 0
    order_key: tuple[int, ...] = ()
    batch: int = 0
    lanes: Mapping[str, tuple[int, ...]] = field(default_factory=dict)

    def mark(self, lane: str | None) -> tuple[int, ...]:
        """The high-water mark of ``lane`` (None: of the records without a lane); empty if none."""
        return self.order_key if lane is None else self.lanes.get(lane, ())

    def with_mark(self, lane: str | None, mark: tuple[int, ...]) -> TableState:
        """This state with ``lane``'s high-water mark replaced."""
        if lane is None:
            return TableState(self.last_seq, mark, self.batch, self.lanes)
        return TableState(self.last_seq, self.order_key, self.batch, {**self.lanes, lane: mark})


@dataclass(frozen=True)
class CaptureCommit:
    """The newest capture commit of a source's offsets table (what silver's cut reads).

    Attributes:
        batch: its batch number.
        snapshot_completed: whether the initial snapshot had completed by then.
        complete_seq: per topic, the last seq of a complete transaction where rows of the
            transaction still open follow it (``cdc.complete_seq``); None on commits written
            before it existed.
    """

    batch: int
    snapshot_completed: bool
    complete_seq: Mapping[str, int] | None


def recent_commits(table: DeltaTable) -> Iterator[dict[str, Any]]:
    """A table's commits, newest first, read a few at a time: the one looked for is usually among
    the newest, but maintenance commits (compaction, VACUUM, retention) may come after it."""
    seen = 0
    for window in (20, 400, None):
        commits = table.history(window)
        yield from commits[seen:]
        if window is None or len(commits) < window:
            return
        seen = len(commits)


def table_state_of(table: DeltaTable, source: str) -> TableState:
    """A bronze table's state as ``source``'s capture last committed it (its newest commit metadata)."""
    for commit in recent_commits(table):
        if commit.get(META_SOURCE) == source and META_LAST_SEQ in commit:
            return TableState(int(commit[META_LAST_SEQ]), tuple(orjson.loads(commit[META_ORDER_KEY])),
                              int(commit[META_BATCH]), lane_marks(commit))
    return TableState()


def lane_marks(commit: Mapping[str, Any]) -> dict[str, tuple[int, ...]]:
    """The per-lane high-water marks a data commit's metadata records (none: no lanes)."""
    text = commit.get(META_LANE_ORDER_KEYS)
    return {} if text is None else {lane: tuple(key) for lane, key in orjson.loads(text).items()}


@dataclass(frozen=True)
class BronzeView:
    """Reads one source's bronze bookkeeping.

    Attributes:
        root: the lakehouse root (path or URI).
        source: the source name.
        storage_options: passed to delta-rs for object stores.
    """

    root: str
    source: str
    storage_options: Mapping[str, str] | None = None

    def _open(self, path: str) -> DeltaTable | None:
        try:
            return DeltaTable(path, storage_options=dict(self.storage_options) if self.storage_options else None)
        except TableNotFoundError:
            return None

    def offsets_table(self) -> DeltaTable | None:
        """The source's offsets table, or None before its first commit."""
        return self._open(offsets_path(self.root, self.source))

    def last_offset(self) -> tuple[StoredOffset | None, int]:
        """The offset to resume from (None after a reset, or if none) and the last batch number.

        Batch numbers keep growing across a reset (`bronze.offset_control`): they order the
        commits of every bronze table and the interrupted-snapshot cleanup relies on that.
        """
        table = self.offsets_table()
        if table is None:
            return None, 0
        last_batch: int | None = None
        for commit in recent_commits(table):
            if META_BATCH in commit and last_batch is None:
                last_batch = int(commit[META_BATCH])
            if commit.get(META_CONTROL) == "reset":
                return None, last_batch or 0
            if META_OFFSET in commit:
                complete = orjson.loads(commit.get(META_COMPLETE_SEQ) or "{}")
                stored = StoredOffset(int(commit[META_BATCH]), orjson.loads(commit[META_OFFSET]),
                                      commit.get(META_SNAPSHOT_COMPLETED) == "true",
                                      {str(topic): int(seq) + 1 for topic, seq in complete.items()})
                return stored, last_batch or stored.batch
        return None, last_batch or 0

    def stored_offset(self) -> StoredOffset | None:
        """The offset the next capture resumes from (None: it plans from scratch)."""
        return self.last_offset()[0]

    def capture_commit(self, recent: int = 10) -> CaptureCommit | Literal["unknown"] | None:
        """The newest capture commit among the offsets table's ``recent`` newest commits, passing
        over maintenance commits; None without a table, "unknown" when a newer commit (another
        writer's) or none of them carries the capture's metadata (then the rows decide)."""
        table = self.offsets_table()
        if table is None:
            return None
        for commit in table.history(recent):
            if META_OFFSET in commit and META_BATCH in commit:
                bounds = commit.get(META_COMPLETE_SEQ)
                complete = None if bounds is None else {str(t): int(n) for t, n in orjson.loads(bounds).items()}
                return CaptureCommit(int(commit[META_BATCH]), commit.get(META_SNAPSHOT_COMPLETED) == "true", complete)
            if commit.get("operation") not in _MAINTENANCE:
                return "unknown"
        return "unknown"

    def table_state(self, topic: str) -> TableState:
        """The committed state of a topic's table (its newest capture commit's metadata)."""
        table = self._open(self._path(topic))
        return TableState() if table is None else table_state_of(table, self.source)

    def history(self) -> list[HistoryEntry]:
        """Every record of the connector's private history, in the order it was written."""
        table = self._open(history_path(self.root, self.source))
        if table is None:
            return []
        rows = read_columns(table, [COL_SEQ, COL_POSITION, COL_VALUE]).sort_by(COL_SEQ)
        return [HistoryEntry(str(p), str(v)) for p, v in zip(rows.column(COL_POSITION).to_pylist(),
                                                             rows.column(COL_VALUE).to_pylist(), strict=True)]

    def schema_ids(self) -> list[str]:
        """Every schema version id in the source's schema history."""
        table = self._open(schemas_path(self.root, self.source))
        if table is None:
            return []
        return [str(v) for v in read_columns(table, ["schema_id"]).column("schema_id").to_pylist()]

    def last_completed_snapshot_batch(self) -> int:
        """The newest batch at which the initial snapshot had completed; 0 if none."""
        table = self.offsets_table()
        if table is None:
            return 0
        rows = table.to_pyarrow_table(columns=["batch", "snapshot_completed"])
        done = [b for b, c in zip(rows.column("batch").to_pylist(), rows.column("snapshot_completed").to_pylist(),
                                  strict=True) if c]
        return max(done) if done else 0

    def topics(self) -> set[str]:
        """Every topic this source may have written: the offsets rows' topics and the schema
        history's (schema versions are committed before any data, so the schema history names
        even tables whose first commit was cut short), and the connector's history."""
        topics: set[str] = set()
        offsets = self.offsets_table()
        if offsets is not None:
            for names in offsets.to_pyarrow_table(columns=["topics"]).column("topics").to_pylist():
                topics.update(names or [])
        schemas = self._open(schemas_path(self.root, self.source))
        if schemas is not None:
            topics.update(str(t) for t in schemas.to_pyarrow_table(columns=["topic"]).column("topic").to_pylist())
        topics.add(HISTORY_TOPIC)
        return topics

    def _path(self, topic: str) -> str:
        return history_path(self.root, self.source) if topic == HISTORY_TOPIC else topic_path(self.root, topic)
