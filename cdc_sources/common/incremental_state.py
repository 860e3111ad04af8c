"""An incremental snapshot's progress, kept in the connector offset under Debezium's keys.

Debezium keeps ``incremental_snapshot_collections`` (a JSON list of the tables still to
snapshot, with their additional condition and surrogate key), ``incremental_snapshot_primary_key``
(the key of the last row of the last completed chunk), ``incremental_snapshot_maximum_key``
(the table's largest key when its snapshot started) and ``incremental_snapshot_correlation_id``.
Here the keys are JSON lists of the key columns' text values (Debezium's are Java-serialised),
and three more keys say which chunk's window is pending (``incremental_snapshot_window``,
``incremental_snapshot_window_opened``) and whether the snapshot is paused: a restart re-reads
that chunk, the last completed one stays done. With the ``insert_delete`` watermarking strategy
the pending chunk's key range is kept too (``incremental_snapshot_window_range``): no close row in
the signal table holds it.

Rows emitted by an incremental snapshot carry in their bronze ``position`` the snapshot's
correlation id (`POSITION_ID`) and, on the rows of a table's last chunk, `POSITION_LAST`:
silver finds the snapshot's boundaries in bronze from them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

import orjson

from cdc_sources.spi import POSITION_INCREMENTAL_ID, POSITION_INCREMENTAL_LAST, POSITION_INCREMENTAL_START

__all__ = [
    "K_COLLECTIONS",
    "K_CORRELATION_ID",
    "K_MAXIMUM_KEY",
    "K_PAUSED",
    "K_PRIMARY_KEY",
    "K_TABLE_START",
    "K_WATERMARKS",
    "K_WINDOW",
    "K_WINDOW_OPENED",
    "K_WINDOW_RANGE",
    "POSITION_ID",
    "POSITION_LAST",
    "POSITION_START",
    "ChunkWatermarks",
    "IncrementalState",
    "SnapshotCollection",
    "WindowRange",
    "without_state",
]

K_COLLECTIONS = "incremental_snapshot_collections"
K_PRIMARY_KEY = "incremental_snapshot_primary_key"
K_MAXIMUM_KEY = "incremental_snapshot_maximum_key"
K_CORRELATION_ID = "incremental_snapshot_correlation_id"
K_WINDOW = "incremental_snapshot_window"
K_WINDOW_OPENED = "incremental_snapshot_window_opened"

K_PAUSED = "incremental_snapshot_paused"
K_TABLE_START = POSITION_INCREMENTAL_START
K_WATERMARKS = "incremental_snapshot_window_watermarks"
K_WINDOW_RANGE = "incremental_snapshot_window_range"
_C_ID = "incremental_snapshot_collections_id"
_C_CONDITION = "incremental_snapshot_collections_additional_condition"
_C_SURROGATE = "incremental_snapshot_collections_surrogate_key"

POSITION_ID = POSITION_INCREMENTAL_ID
POSITION_LAST = POSITION_INCREMENTAL_LAST
POSITION_START = POSITION_INCREMENTAL_START


@dataclass(frozen=True)
class SnapshotCollection:
    """One table of an incremental snapshot: its name parts, filter and surrogate key."""

    schema: str
    table: str
    condition: str | None = None
    surrogate_key: str | None = None

    @property
    def id(self) -> str:
        return f"{self.schema}.{self.table}"


@dataclass(frozen=True)
class ChunkWatermarks:
    """A read-only incremental snapshot's pending chunk (``read.only``: nothing in the signal table).

    Attributes:
        low: the low watermark, read from the server before the chunk (PostgreSQL: the oldest
            transaction id still running, ``pg_snapshot_xmin(pg_current_snapshot())``).
        high: the high watermark, read after the chunk (PostgreSQL: the flushed WAL position).
        upto: the chunking key of the chunk's last row (a restart reads the same range again).
        more: whether rows were left after the chunk.
        seq: orders chunks closing at the same high watermark (no WAL written between them):
            microseconds since the epoch at the read, above the previous chunk's.
    """

    low: int
    high: int
    upto: tuple[str | None, ...]
    more: bool
    seq: int

    def to_text(self) -> str:
        return orjson.dumps([self.low, self.high, list(self.upto), self.more, self.seq]).decode()

    @classmethod
    def from_text(cls, text: str) -> ChunkWatermarks:
        low, high, upto, more, seq = orjson.loads(text)
        return cls(int(low), int(high), tuple(upto), bool(more), int(seq))


@dataclass(frozen=True)
class WindowRange:
    """The key range of a chunk read under ``insert_delete`` (its open watermark deleted already).

    Attributes:
        upto: the chunking key of the chunk's last row (a restart reads the same range again).
        more: whether rows were left after the chunk.
    """

    upto: tuple[str | None, ...]
    more: bool

    def to_text(self) -> str:
        return orjson.dumps({"upto": list(self.upto), "more": self.more}).decode()

    @classmethod
    def from_text(cls, text: str) -> WindowRange:
        d = orjson.loads(text)
        return cls(tuple(d["upto"]), bool(d["more"]))


@dataclass(frozen=True)
class IncrementalState:
    """A running incremental snapshot (immutable: every change makes a new state).

    Attributes:
        correlation_id: identifies this snapshot (the id of the signal that started it).
        collections: the tables not finished yet; the first one is being read.
        last_key: the key of the last row of the current table's last completed chunk (None:
            the table's first chunk comes next).
        max_key: the current table's largest key when its snapshot started (None: not read yet).
        window: the id of the chunk read but not emitted yet (its watermarks are pending).
        window_opened: whether the stream has passed that chunk's open watermark.
        paused: whether ``pause-snapshot`` holds the next chunk back.
        table_start: the commit LSN of the watermark that opened the current table's first
            chunk (its max key is read after it), once the stream has passed it.
        watermarks: the pending chunk's watermarks and range in a read-only snapshot.
        window_range: the pending chunk's range under ``insert_delete`` (None otherwise).
    """

    correlation_id: str
    collections: tuple[SnapshotCollection, ...]
    last_key: tuple[str | None, ...] | None = None
    max_key: tuple[str | None, ...] | None = None
    window: str | None = None
    window_opened: bool = False
    paused: bool = False
    table_start: int | None = None
    watermarks: ChunkWatermarks | None = None
    window_range: WindowRange | None = None

    @property
    def current(self) -> SnapshotCollection | None:
        return self.collections[0] if self.collections else None

    def next_table(self) -> IncrementalState:
        """The state once the current table is done."""
        return replace(self, collections=self.collections[1:], last_key=None, max_key=None, window=None,
                       window_opened=False, table_start=None, watermarks=None, window_range=None)

    def to_offset(self) -> dict[str, Any]:
        """The offset keys of this state."""
        return {
            K_COLLECTIONS: orjson.dumps([{_C_ID: c.id, _C_CONDITION: c.condition, _C_SURROGATE: c.surrogate_key,
                                          "schema": c.schema, "table": c.table}
                                         for c in self.collections]).decode(),
            K_PRIMARY_KEY: None if self.last_key is None else orjson.dumps(list(self.last_key)).decode(),
            K_MAXIMUM_KEY: None if self.max_key is None else orjson.dumps(list(self.max_key)).decode(),
            K_CORRELATION_ID: self.correlation_id,
            K_WINDOW: self.window,
            K_WINDOW_OPENED: self.window_opened,
            K_PAUSED: self.paused,
            K_TABLE_START: self.table_start,
            K_WATERMARKS: None if self.watermarks is None else self.watermarks.to_text(),
            **({} if self.window_range is None else {K_WINDOW_RANGE: self.window_range.to_text()}),
        }

    @classmethod
    def from_offset(cls, offset: Mapping[str, Any] | None) -> IncrementalState | None:
        """The state an offset holds; None when no incremental snapshot was running."""
        if not offset or not offset.get(K_COLLECTIONS):
            return None
        items = orjson.loads(offset[K_COLLECTIONS])
        if not items:
            return None
        collections = tuple(SnapshotCollection(i["schema"], i["table"], i.get(_C_CONDITION), i.get(_C_SURROGATE))
                            for i in items)
        return cls(str(offset.get(K_CORRELATION_ID) or ""), collections, last_key=_key(offset.get(K_PRIMARY_KEY)),
                   max_key=_key(offset.get(K_MAXIMUM_KEY)), window=offset.get(K_WINDOW) or None,
                   window_opened=bool(offset.get(K_WINDOW_OPENED)), paused=bool(offset.get(K_PAUSED)),
                   table_start=None if offset.get(K_TABLE_START) is None else int(offset[K_TABLE_START]),
                   watermarks=ChunkWatermarks.from_text(offset[K_WATERMARKS]) if offset.get(K_WATERMARKS) else None,
                   window_range=WindowRange.from_text(offset[K_WINDOW_RANGE]) if offset.get(K_WINDOW_RANGE) else None)


def _key(text: Any) -> tuple[str | None, ...] | None:
    return None if not text else tuple(orjson.loads(text))


def without_state(offset: Mapping[str, Any]) -> dict[str, Any]:
    """``offset`` without any incremental snapshot key."""
    return {k: v for k, v in offset.items() if not k.startswith("incremental_snapshot_")}
