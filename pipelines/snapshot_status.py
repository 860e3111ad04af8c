"""The snapshot a source's stored offset says is under way, for ``cdc-lakehouse status``.

An incremental snapshot keeps its progress in the offset (`cdc_sources.common.incremental_state`:
the tables left, the key of the last completed chunk, the current table's largest key, paused),
and so does a blocking one while it reads (`cdc_sources.common.blocking_snapshot`). Reading them
costs nothing more than the offset ``status`` reads anyway; the numbers are those of the last
bronze commit, so they trail a running capture by at most one commit.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from cdc_sources.common.blocking_snapshot import BlockingState
from cdc_sources.common.incremental_state import IncrementalState
from cdc_sources.common.signals import SnapshotKind

__all__ = ["RunningSnapshot", "running_snapshots", "snapshot_lines"]


@dataclass(frozen=True)
class RunningSnapshot:
    """A snapshot under way at the last committed offset.

    Attributes:
        type: incremental or blocking.
        correlation_id: the snapshot's id (the signal that started it, and where it was read).
        tables: the tables it has not finished, the one being read first (blocking: all of them).
        paused: an incremental snapshot held back by ``pause-snapshot``.
        after_key: the key of the current table's last completed chunk's last row (None: the
            table's first chunk comes next); incremental only.
        up_to_key: the current table's largest key when its snapshot began (None: not read yet).
    """

    type: SnapshotKind
    correlation_id: str
    tables: tuple[str, ...]
    paused: bool = False
    after_key: tuple[str | None, ...] | None = None
    up_to_key: tuple[str | None, ...] | None = None


def running_snapshots(offset: Mapping[str, Any] | None) -> tuple[RunningSnapshot, ...]:
    """The snapshots ``offset`` says are under way (none, one, or a blocking one within an incremental one;
    for a source whose offset holds one per database, SQL Server's ``partitions``, those of each).

    Raises:
        ValueError: the offset's snapshot keys cannot be read.
    """
    partitions = offset.get("partitions") if offset else None
    if isinstance(partitions, list):
        return tuple(s for entry in partitions if isinstance(entry, Mapping)
                     for s in running_snapshots(entry.get("offset")))
    out: list[RunningSnapshot] = []
    try:
        inc = IncrementalState.from_offset(offset)
        blocking = BlockingState.from_offset(offset)
    except (orjson.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
        raise ValueError(f"the stored offset's snapshot progress cannot be read: {exc}") from None
    if inc is not None:
        out.append(RunningSnapshot(SnapshotKind.INCREMENTAL, inc.correlation_id, tuple(c.id for c in inc.collections),
                                   inc.paused, inc.last_key, inc.max_key))
    if blocking is not None:
        out.append(RunningSnapshot(SnapshotKind.BLOCKING, blocking.correlation_id,
                                   tuple(c.id for c in blocking.collections)))
    return tuple(out)


def _key(key: Sequence[str | None] | None) -> str:
    return orjson.dumps(list(key or ())).decode()


def snapshot_lines(snapshots: Sequence[RunningSnapshot]) -> list[str]:
    """One readable line per running snapshot."""
    lines = []
    for s in snapshots:
        if s.type is SnapshotKind.BLOCKING:
            lines.append(f"blocking snapshot {s.correlation_id}: reading {', '.join(s.tables)} (streaming paused)")
            continue
        state = "paused" if s.paused else "running"
        where = f"reading {s.tables[0]}" if s.tables else "no table left"
        if s.tables and s.after_key is not None:
            where += f" after key {_key(s.after_key)}"
        if s.tables and s.up_to_key is not None:
            where += f" up to {_key(s.up_to_key)}"
        left = len(s.tables) - 1
        rest = f"; then {', '.join(s.tables[1:])}" if left > 0 else ""
        lines.append(f"incremental snapshot {s.correlation_id}: {state}, {where}{rest}")
    return lines
