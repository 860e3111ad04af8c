"""What ``maintain`` does to each table and why: pure functions of what was read.

Bronze is read by silver while maintenance runs, so the plan keeps every file a reader may
still open:

* compaction rewrites small files into bigger ones in a commit that changes no data
  (``dataChange=false``): incremental runs see the same rows, Delta streams skip the commit;
* VACUUM deletes files removed from the table longer ago than a retention. A silver table's
  progress (the bronze version its last increment read) or a stream's checkpoint (the bronze
  version it reads next) is the oldest version it may read again; a running increment reads a
  newer one. The retention is stretched to reach back to the commit of the oldest such
  version, so no file of it or of any later version is deleted (`vacuum_window`);
* bronze retention deletes rows older than ``bronze_retention_days`` whose ``seq`` every silver
  table of the topic has applied; a commit deleting rows would stop a Delta stream, so it is
  refused for topics read by a stream (`retention_cut`);
* quality-results retention deletes the data-quality results (one row per expectation per
  checked increment) recorded longer ago than ``quality_retention_days`` (`quality_cut`).
"""

from __future__ import annotations

import datetime as dt
import enum
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from pipelines.maintenance.options import DELTA_DEFAULT_RETENTION_HOURS

__all__ = ["UNTRACKED_MIN_HOURS", "QualityCut", "Reader", "RetentionCut", "TableKind", "VacuumWindow", "quality_cut",
           "retention_cut", "vacuum_window"]


UNTRACKED_MIN_HOURS = 1
"""The shortest retention of a table no silver progress covers (side tables, silver tables, bronze
topics no silver table reads): a reader that listed its files moments ago can still open them."""


class TableKind(enum.Enum):
    """What a maintained table is."""

    BRONZE = "bronze"
    SIDE = "bronze side table"  # offsets, schema history, connector history
    SILVER = "silver"
    QUALITY = "silver quality results"


@dataclass(frozen=True)
class Reader:
    """A silver table reading a bronze topic, as far as its state tells.

    Attributes:
        table: the silver table.
        last_seq: every bronze row with ``seq <= last_seq`` is applied (None: nothing yet).
        version: the oldest bronze version it may read again (None: unknown, e.g. never ran).
        streamed: a Structured Streaming checkpoint exists for it.
    """

    table: str
    last_seq: int | None
    version: int | None
    streamed: bool = False


@dataclass(frozen=True)
class VacuumWindow:
    """How one VACUUM runs.

    Attributes:
        hours: the retention given to VACUUM.
        keep_versions: versions whose files are kept whatever their age.
        enforce: False when ``hours`` is below Delta's default (allowed by configuration).
        reason: why, in words.
    """

    hours: int
    keep_versions: tuple[int, ...]
    enforce: bool
    reason: str


def vacuum_window(configured_hours: int, readers: Sequence[Reader], version_ages: Mapping[int, float],
                  current_version: int) -> VacuumWindow:
    """The retention that keeps every file a reader may still open.

    Args:
        configured_hours: ``maintenance.vacuum_retention_hours``.
        readers: the silver tables of the table (none for silver tables and side tables).
        version_ages: hours since the commit of each reader's version.
        current_version: the table's version now.
    """
    unknown = [r.table for r in readers if r.version is None]
    if unknown:
        hours = max(configured_hours, DELTA_DEFAULT_RETENTION_HOURS)
        return VacuumWindow(hours, (), True, f"silver {', '.join(sorted(unknown))} has not read it yet: "
                                             f"{hours} h kept")
    if not readers:
        hours = max(configured_hours, UNTRACKED_MIN_HOURS)
        return VacuumWindow(hours, (), hours >= DELTA_DEFAULT_RETENTION_HOURS, f"retention {hours} h")
    oldest = min(r.version for r in readers if r.version is not None)
    who = ", ".join(sorted(r.table for r in readers if r.version == oldest))
    age = version_ages[oldest]
    if configured_hours >= age:
        return VacuumWindow(configured_hours, (), configured_hours >= DELTA_DEFAULT_RETENTION_HOURS,
                            f"retention {configured_hours} h (silver needs version {oldest}+, {age:.1f} h old)")
    if age >= 1:
        # whole hours: reaching back to the version's commit keeps everything removed since
        hours = math.ceil(age)
        return VacuumWindow(hours, (), hours >= DELTA_DEFAULT_RETENTION_HOURS,
                            f"retention {hours} h: silver {who} needs version {oldest}+")
    # under an hour: keep the files of every version since the oldest needed one by version
    return VacuumWindow(configured_hours, tuple(range(oldest, current_version + 1)),
                        configured_hours >= DELTA_DEFAULT_RETENTION_HOURS,
                        f"retention {configured_hours} h, keeping versions {oldest}..{current_version} "
                        f"(silver {who})")


@dataclass(frozen=True)
class RetentionCut:
    """Which bronze rows retention deletes: ``ingested_at < before and seq <= upto_seq``, or why none.

    Attributes:
        before: the age cut (None: nothing is deleted).
        upto_seq: the highest ``seq`` every silver table of the topic applied (None: no silver table).
        reason: why, in words.
    """

    before: dt.datetime | None
    upto_seq: int | None
    reason: str

    @property
    def predicate(self) -> str | None:
        """The delete predicate, or None when nothing may be deleted."""
        if self.before is None:
            return None
        cut = _older_than("ingested_at", self.before)
        return cut if self.upto_seq is None else f"{cut} AND seq <= {self.upto_seq}"


def _older_than(column: str, before: dt.datetime) -> str:
    """A delta-rs predicate: ``column`` (a UTC microsecond timestamp) earlier than ``before``."""
    stamp = before.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    return f"{column} < arrow_cast('{stamp}', 'Timestamp(Microsecond, Some(\"UTC\"))')"


@dataclass(frozen=True)
class QualityCut:
    """Which data-quality results retention deletes: those checked before ``before`` (None: none)."""

    before: dt.datetime | None
    reason: str

    @property
    def predicate(self) -> str | None:
        return None if self.before is None else _older_than("checked_at", self.before)


def quality_cut(days: float | None, now: dt.datetime) -> QualityCut:
    """The results ``quality_retention_days`` deletes. Nothing reads old results but ``status``, which
    shows each table's newest run, so the cut needs no reader's consent."""
    if days is None:
        return QualityCut(None, "quality results retention is off")
    before = now - dt.timedelta(days=days)
    return QualityCut(before, f"results checked before {before:%Y-%m-%d %H:%M} UTC")


def retention_cut(days: float | None, readers: Sequence[Reader], now: dt.datetime) -> RetentionCut:
    """The rows of a bronze topic that ``bronze_retention_days`` deletes (see module doc)."""
    if days is None:
        return RetentionCut(None, None, "bronze retention is off")
    streamed = sorted(r.table for r in readers if r.streamed)
    if streamed:
        return RetentionCut(None, None, f"refused: silver {', '.join(streamed)} reads it as a stream, which a "
                                        "commit deleting rows would stop")
    waiting = sorted(r.table for r in readers if r.last_seq is None)
    if waiting:
        return RetentionCut(None, None, f"kept: silver {', '.join(waiting)} has applied nothing yet")
    before = now - dt.timedelta(days=days)
    upto = min((r.last_seq for r in readers if r.last_seq is not None), default=None)
    applied = "" if upto is None else f", applied by every silver table (seq <= {upto})"
    return RetentionCut(before, upto, f"rows ingested before {before:%Y-%m-%d %H:%M} UTC{applied}")
