"""The contracts between a connector and the coordinator that drives it.

The coordinator (``pipelines.coordinator``) alone decides the order: plan, snapshot if the
plan says so, then stream. Readers only yield items; they never write to bronze.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from cdc_sources.spi.events import StreamItem


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

    def acknowledge(self, offset: Mapping[str, Any]) -> None:
        """Tell the source that everything up to ``offset`` is durable in bronze."""
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

    def open(self, stored_offset: Mapping[str, Any] | None) -> CaptureSession:
        """Connect, run the start-up checks and return a session ready to plan."""
        ...
