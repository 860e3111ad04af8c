"""What an apply needs besides the table and its increment, and what it reports."""

from __future__ import annotations

import re
from collections.abc import Callable, Set
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as sf

from silver.declarations import SilverOptions
from silver.decode import KIND, OP, REASON, UNAVAILABLE
from silver.resnapshot import BronzeRef, TableSnapshot
from silver.schema_history import TopicSchema
from silver.staging import Staging

if TYPE_CHECKING:
    from silver.quality import GateReport

__all__ = ["ApplyContext", "ApplyResult", "ChangeCounts", "count_changes", "stage", "view_name"]


@dataclass(frozen=True)
class ApplyContext:
    """Shared by every apply of a run; holds no per-table state (but `staging`, which each apply sets).

    Attributes:
        spark: the engine session.
        options: the pipeline's silver options.
        run_id: identifies the run (quarantine rows, progress, temp views).
        state_location: progress and staging live under it.
        quarantine_location: the quarantine Delta table.
        schemas: the schema history of a topic, oldest first, holding the given schema ids (those
            the increment's rows point at) where the history has them (`silver.schema_cache.SchemaCache`).
        bronze: the lakehouse root and source of the increments (for re-snapshot boundaries).
        staging: where the apply under way stages its decoded rows (`silver.staging`); set by
            `silver.increment.apply_increment` for the length of one apply.
    """

    spark: SparkSession
    options: SilverOptions
    run_id: str
    state_location: str
    quarantine_location: str
    schemas: Callable[[str, Set[str]], list[TopicSchema]]
    bronze: BronzeRef
    staging: Staging | None = None


@dataclass
class ApplyResult:
    """What one apply did (SCD1 counts are changes after keeping the latest per key)."""

    events: int = 0
    upserts: int = 0
    deletes: int = 0
    quarantined: int = 0
    truncates: int = 0
    keys: tuple[str, ...] = ()
    schema_changes: list[str] = field(default_factory=list)
    max_seq: int | None = None
    resnapshot: TableSnapshot | None = None
    quality: GateReport | None = None


@dataclass(frozen=True)
class ChangeCounts:
    """Counts of a decoded frame: good upserts/deletes, bad events, good rows with columns still
    unavailable (upserts with placeholders; soft deletes whose values are not all known) and, when
    asked, the good tombstones among the deletes."""

    upserts: int
    deletes: int
    bad: int
    unavailable: int
    tombstones: int = 0


def count_changes(df: DataFrame, *, tombstones: bool = False) -> ChangeCounts:
    """One aggregate job over a (staged) decoded frame (``tombstones``: count them apart too)."""
    flagged = sf.coalesce(sf.size(sf.col(UNAVAILABLE)) > 0, sf.lit(False))  # null: nothing to look for
    groups = [sf.col(KIND), sf.col(REASON).isNotNull().alias("bad"), flagged.alias("ph")]
    if tombstones:
        groups.append(sf.col(OP).isNull().alias("tomb"))
    rows = df.groupBy(*groups).count().collect()
    up = sum(int(r["count"]) for r in rows if not r["bad"] and r[KIND] == "u")
    dl = sum(int(r["count"]) for r in rows if not r["bad"] and r[KIND] != "u")
    bad = sum(int(r["count"]) for r in rows if r["bad"])
    ph = sum(int(r["count"]) for r in rows if r["ph"] and not r["bad"])
    tomb = sum(int(r["count"]) for r in rows if tombstones and r["tomb"] and not r["bad"] and r[KIND] != "u")
    return ChangeCounts(up, dl, bad, ph, tomb)


def stage(ctx: ApplyContext, df: DataFrame, name: str) -> DataFrame:
    """``df`` fixed once for the apply under way (`silver.staging`), so the counts, the quarantine
    and the MERGE read the same rows without decoding the JSON again."""
    if ctx.staging is None:
        raise RuntimeError("stage() outside an apply: apply_increment sets the context's staging")
    return ctx.staging.stage(df, name)


def view_name(kind: str, table: str, run_id: str) -> str:
    """A temp view name that is a plain identifier."""
    return re.sub(r"\W", "_", f"__cdc_{kind}_{table}_{run_id}")
