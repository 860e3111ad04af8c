"""An incremental snapshot's progress as an `IncrementalProgress` (pure: from the driver's state).

`ProgressTracker` keeps what the offset state does not (rows emitted per table, the tables the
snapshot was asked for, where the current table's reading started, how long it was paused) and
tells a listener when the progress changed; `progress_of` computes it.
"""

from __future__ import annotations

import enum
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import orjson

from cdc_sources.common.incremental_state import IncrementalState
from cdc_sources.spi.snapshot_progress import IncrementalProgress, SnapshotListener

__all__ = ["Ending", "ProgressTracker", "key_text", "progress_of"]

Key = Sequence[str | None]


class Ending(enum.Enum):
    """How a snapshot that is no longer running ended."""

    COMPLETED = "completed"
    ABORTED = "aborted"


def key_text(key: Key | None) -> str:
    """A key as its JSON list text (``[]``: none)."""
    return orjson.dumps(list(key or ())).decode()


@dataclass(frozen=True)
class Pauses:
    """A snapshot's pauses in this process: ``ended`` seconds in pauses that ended, and ``since`` (a
    `time.monotonic` reading) the start of the pause in progress, if any."""

    ended: float = 0.0
    since: float | None = None

    def follow(self, paused: bool, now: float) -> Pauses:
        """The pauses once the snapshot is (or is not) ``paused`` at ``now``."""
        if paused and self.since is None:
            return Pauses(self.ended, now)
        if not paused and self.since is not None:
            return Pauses(self.ended + max(0.0, now - self.since), None)
        return self


def progress_of(state: IncrementalState, *, chunk_id: str, chunk_to: Key | None, table_from: Key | None,
                tables: Sequence[str], scanned: Mapping[str, int], ending: Ending | None,
                pauses: Pauses = Pauses()) -> IncrementalProgress:
    """The progress of the snapshot ``state`` (its last state once ``ending`` is set).

    ``chunk_id`` and ``chunk_to``: the current chunk's ('' and None when none was read yet);
    ``table_from``: the key the current table's reading started after; ``tables``: every table
    the snapshot was asked for; ``scanned``: rows emitted per table; ``pauses``: its pauses so far.
    """
    current = state.current
    running = ending is None and bool(state.collections)
    return IncrementalProgress(
        correlation_id=state.correlation_id, running=running, paused=running and state.paused,
        completed=ending is Ending.COMPLETED, aborted=ending is Ending.ABORTED,
        table=current.id if current is not None else "", chunk_id=chunk_id,
        chunk_from=key_text(state.last_key) if chunk_id else "", chunk_to=key_text(chunk_to) if chunk_id else "",
        table_from=key_text(table_from) if current is not None else "",
        table_to=key_text(state.max_key) if state.max_key is not None else "",
        total_tables=len(tables), remaining_tables=0 if ending is not None else len(state.collections),
        rows_scanned=tuple((t, scanned[t]) for t in tables if t in scanned),
        paused_seconds=pauses.ended, paused_at=pauses.since if running else None)


class ProgressTracker:
    """Follows one driver's snapshots and tells ``listener`` (if any) when their progress changes."""

    def __init__(self, listener: SnapshotListener | None = None, clock: Callable[[], float] = time.monotonic) -> None:
        self.listener = listener
        self.clock = clock
        self._pauses = Pauses()
        self._last: IncrementalState | None = None
        self._id: str | None = None
        self._chunk: tuple[str, Key | None] = ("", None)
        self._table: str | None = None
        self._table_from: Key | None = None
        self._tables: list[str] = []
        self._scanned: dict[str, int] = {}
        self._sent: IncrementalProgress | None = None

    def chunk_read(self, state: IncrementalState, chunk_id: str, last_key: Key | None) -> None:
        """A chunk of ``state``'s current table was read (its window is pending)."""
        self._follow(state)
        self._chunk = (chunk_id, last_key)

    def chunk_emitted(self, table: str, rows: int) -> None:
        """A chunk's ``rows`` rows of ``table`` were emitted."""
        self._scanned[table] = self._scanned.get(table, 0) + rows

    def changed(self, state: IncrementalState | None, *, aborted: bool = False) -> None:
        """The driver's state is now ``state`` (None: no snapshot runs; ``aborted``: a stop ended it)."""
        if state is None:
            if self._last is None:
                return
            last, self._last = self._last, None
            self._pauses = self._pauses.follow(False, self.clock())  # a stop ends a pause too
            self._send(self._progress(last, Ending.ABORTED if aborted else Ending.COMPLETED))
            return
        self._follow(state)
        self._last = state
        self._send(self._progress(state, None))

    def _follow(self, state: IncrementalState) -> None:
        if state.correlation_id != self._id:  # another snapshot: its own counts
            self._id, self._tables, self._scanned = state.correlation_id, [], {}
            self._chunk, self._table, self._pauses = ("", None), None, Pauses()
        self._pauses = self._pauses.follow(state.paused, self.clock())
        if state.current is not None and state.current.id != self._table:
            self._table, self._table_from = state.current.id, state.last_key
        self._last = state
        for c in state.collections:
            if c.id not in self._tables:
                self._tables.append(c.id)

    def _progress(self, state: IncrementalState, ending: Ending | None) -> IncrementalProgress:
        return progress_of(state, chunk_id=self._chunk[0], chunk_to=self._chunk[1], table_from=self._table_from,
                           tables=self._tables, scanned=self._scanned, ending=ending, pauses=self._pauses)

    def _send(self, progress: IncrementalProgress) -> None:
        if self.listener is not None and progress != self._sent:
            self._sent = progress
            self.listener.incremental_snapshot(progress)
