"""Whether a run snapshots and whether it streams: a pure function of the stored state.

Modelled on Debezium's ``Snapshotter`` SPI (``shouldSnapshotData``, ``shouldStream``), one
rule per ``snapshot.mode`` value, shared by every connector.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from cdc_sources.spi import SnapshotPlan


@dataclass(frozen=True)
class StoredState:
    """What is known before a run starts.

    Attributes:
        offset_exists: an offset was committed to bronze before.
        snapshot_completed: the initial snapshot finished (False while one was interrupted).
        offset_available: the source still has the log at the stored offset (the slot or
            binlog is intact); irrelevant when there is no offset.
    """

    offset_exists: bool
    snapshot_completed: bool
    offset_available: bool = True


def plan_snapshot(mode: str, state: StoredState, config_based: Mapping[str, bool] | None = None) -> SnapshotPlan:
    """The plan for ``snapshot.mode`` (already validated and de-aliased: ``never`` is ``no_data``)."""
    in_progress = state.offset_exists and not state.snapshot_completed
    fresh = not state.offset_exists
    if mode == "always":
        return SnapshotPlan(True, True, "snapshot.mode=always snapshots on every start")
    if mode in ("initial", "initial_only"):
        stream = mode == "initial"
        if fresh:
            return SnapshotPlan(True, stream, "no stored offset: initial snapshot")
        if in_progress:
            return SnapshotPlan(True, stream, "the previous snapshot did not finish: snapshotting again")
        return SnapshotPlan(False, stream, "snapshot already completed: resuming from the stored offset")
    if mode == "when_needed":
        if fresh or in_progress:
            return SnapshotPlan(True, True, "no usable stored offset: snapshot")
        if not state.offset_available:
            return SnapshotPlan(True, True, "the stored offset is no longer available at the source: snapshot")
        return SnapshotPlan(False, True, "resuming from the stored offset")
    if mode == "no_data":
        return SnapshotPlan(False, True, "snapshot.mode=no_data: streaming only")
    if mode == "configuration_based":
        cb = config_based or {}
        data = bool(cb.get("snapshot.data")) and (fresh or in_progress or not state.offset_available)
        return SnapshotPlan(data, bool(cb.get("start.stream")), "snapshot.mode=configuration_based")
    raise ValueError(f"unsupported snapshot.mode {mode!r}")
