"""The contracts between a connector and the coordinator that drives it.

The coordinator (``pipelines.coordinator``) alone decides the order: plan, snapshot if the
plan says so, then stream. Readers only yield items; they never write to bronze.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from cdc_sources.spi.events import SourceOffset, StreamItem
from cdc_sources.spi.retry import RetryPolicy


@dataclass(frozen=True, slots=True)
class HistoryEntry:
    """One stored record of a connector's private history (see `HISTORY_TOPIC`).

    Attributes:
        position: the record's ``position`` (offset JSON text).
        value: the record JSON text.
    """

    position: str
    value: str


@dataclass(frozen=True, slots=True)
class SnapshotPlan:
    """What a run does: snapshot data or not, stream afterwards or stop.

    Attributes:
        snapshot_data: read every captured table as ``r`` events first.
        stream: stream changes afterwards (False for ``initial_only`` once snapshotted).
        reason: one sentence saying why, for logs and ``status``.
    """

    snapshot_data: bool
    stream: bool
    reason: str


class CaptureSession(Protocol):
    """One run of a connector against its source, with its connections open.

    Not thread-safe: one coordinator drives it from one thread.
    """

    def plan(self) -> SnapshotPlan:
        """Decide, from the stored offset, ``snapshot.mode`` and the source's state."""
        ...

    def snapshot(self) -> Iterator[StreamItem]:
        """Yield the snapshot's schemas, ``r`` records and progress; end with a Checkpoint."""
        ...

    def stream(self, *, until_idle: bool) -> Iterator[StreamItem]:
        """Yield streamed records and checkpoints; return when idle if ``until_idle``."""
        ...

    def acknowledge(self, offset: SourceOffset) -> None:
        """Tell the source that everything up to ``offset`` (a checkpoint's) is durable in bronze."""
        ...

    def offset_of(self, position: str) -> SourceOffset:
        """The offset a record's ``position`` text stands for (a snapshot batch committed on size
        ends at its last record's position).

        Raises:
            ValueError: ``position`` is not one of this connector's positions.
        """
        ...

    def close(self) -> None:
        """Release connections (and drop the slot if configured to)."""
        ...


class Connector(Protocol):
    """A configured connector: validated options plus connection settings."""

    @property
    def name(self) -> str:
        """The logical server name (``topic.prefix``)."""
        ...

    @property
    def retry(self) -> RetryPolicy:
        """How the capture retries after a retriable error (``errors.max.retries`` and
        ``errors.retry.delay.*``)."""
        ...

    def open(self, stored_offset: Mapping[str, Any] | None,
             history: Sequence[HistoryEntry] = ()) -> CaptureSession:
        """Connect, run the start-up checks and return a session ready to plan.

        ``history``: every record the connector sent to `HISTORY_TOPIC` that bronze holds, in
        order (it may run past ``stored_offset`` after a crash; the connector skips those).
        """
        ...
