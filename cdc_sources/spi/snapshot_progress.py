"""How a connector reports a running incremental snapshot's progress to whoever watches it.

The shared incremental snapshot driver (`cdc_sources.common.incremental_snapshot`) sends an
`IncrementalProgress` to an `IncrementalSnapshotListener` whenever the snapshot moves (a chunk
read, a chunk emitted, paused, resumed, stopped, completed). The capture's metrics
(`pipelines.metrics`) are such a listener; they show the numbers under Debezium's snapshot
metric names (``ChunkId``, ``ChunkFrom``, ``ChunkTo``, ``TableFrom``, ``TableTo``,
``SnapshotPaused``, ...). A session that can report them is a `ReportsIncrementalSnapshots`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable

__all__ = ["IncrementalProgress", "IncrementalSnapshotListener", "ReportsIncrementalSnapshots"]


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


class IncrementalSnapshotListener(Protocol):
    """Told of every move of an incremental snapshot (from the capture thread: keep it quick)."""

    def incremental_snapshot(self, progress: IncrementalProgress) -> None:
        ...


@runtime_checkable
class ReportsIncrementalSnapshots(Protocol):
    """A capture session that reports its incremental snapshots' progress."""

    def report_incremental_snapshots(self, listener: IncrementalSnapshotListener) -> None:
        """Send every incremental snapshot's progress to ``listener`` from now on."""
        ...
