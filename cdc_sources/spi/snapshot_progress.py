"""How a connector reports the progress of the snapshots signals start while it streams.

The shared incremental snapshot driver (`cdc_sources.common.incremental_snapshot`) sends an
`IncrementalProgress` to a `SnapshotListener` whenever the snapshot moves (a chunk read, a
chunk emitted, paused, resumed, stopped, completed); the blocking snapshot driver
(`cdc_sources.common.blocking_snapshot`) sends a `BlockingProgress` as it starts, after each
table and at its end. The capture's metrics (`pipelines.metrics`) are such a listener; they
show the numbers under Debezium's snapshot metric names (``ChunkId``, ``ChunkFrom``,
``ChunkTo``, ``TableFrom``, ``TableTo``, ``SnapshotPaused``, ``SnapshotPausedDurationInSeconds``,
``RowsScanned``, ...). A session
that can report them is a `ReportsSnapshots`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable

__all__ = ["BlockingProgress", "IncrementalProgress", "ReportsSnapshots", "SnapshotListener"]


@dataclass(frozen=True, slots=True)
class IncrementalProgress:
    """Where an incremental snapshot stands (Debezium's snapshot metrics of an incremental snapshot).

    Attributes:
        correlation_id: the snapshot's id (the signal that started it).
        running: the snapshot has tables left (paused or not).
        paused: ``pause-snapshot`` holds the next chunk back.
        completed: every table was read (False while running, and after a stop).
        aborted: ``stop-snapshot`` ended it before every table was read.
        table: the table being read (``schema.table``; '' when none).
        chunk_id: the current chunk's id ('' before the first chunk).
        chunk_from: the current chunk's lower bound, exclusive: the key of the previous chunk's
            last row as a JSON list of the key columns' text values (``[]``: the table's start).
        chunk_to: the current chunk's upper bound, inclusive: the key of its last row.
        table_from: the lower bound of the current table's snapshot (``[]``: the table's start; a
            resumed snapshot starts after the last completed chunk).
        table_to: the current table's largest key when its snapshot started.
        total_tables: tables this snapshot was asked to read (tables added to it later count).
        remaining_tables: tables not finished yet.
        rows_scanned: rows emitted per table (``schema.table``) by this process, in table order.
        paused_seconds: seconds the snapshot spent in the pauses that ended, in this process.
        paused_at: while paused, when the pause began (`time.monotonic`, in this process); else None.
    """

    correlation_id: str
    running: bool
    paused: bool
    completed: bool
    aborted: bool
    table: str
    chunk_id: str
    chunk_from: str
    chunk_to: str
    table_from: str
    table_to: str
    total_tables: int
    remaining_tables: int
    rows_scanned: tuple[tuple[str, int], ...]
    paused_seconds: float = 0.0
    paused_at: float | None = None

    def paused_duration(self, now: float) -> float:
        """Seconds paused in all, at ``now`` (`time.monotonic`): the ended pauses plus the one in
        progress (Debezium's ``SnapshotPausedDurationInSeconds``, cumulative over the snapshot's pauses)."""
        return self.paused_seconds + (max(0.0, now - self.paused_at) if self.paused_at is not None else 0.0)


@dataclass(frozen=True, slots=True)
class BlockingProgress:
    """Where a blocking snapshot stands (streaming waits while it runs).

    Attributes:
        correlation_id: the snapshot's id.
        running: tables are being read; False once it has ended (``completed``).
        tables_done / tables_total: tables read so far, and in all.
        rows_scanned: rows read per table (``schema.table``), in table order.
    """

    correlation_id: str
    running: bool
    tables_done: int
    tables_total: int
    rows_scanned: tuple[tuple[str, int], ...]

    @property
    def completed(self) -> bool:
        return not self.running


class SnapshotListener(Protocol):
    """Told of every move of a signalled snapshot (from the capture thread: keep it quick)."""

    def incremental_snapshot(self, progress: IncrementalProgress) -> None:
        ...

    def blocking_snapshot(self, progress: BlockingProgress) -> None:
        ...


@runtime_checkable
class ReportsSnapshots(Protocol):
    """A capture session that reports its signalled snapshots' progress."""

    def report_snapshots(self, listener: SnapshotListener) -> None:
        """Send every signalled snapshot's progress to ``listener`` from now on."""
        ...
