"""A first, cheap look at a bronze increment: which schemas decode it, its truncates, and whether
it holds snapshot rows.

The look is a handful of numbers per ``schema_id`` (`ScanGroup`: rows, lowest and highest ``seq``,
truncates, snapshot ``r`` rows), taken from the ``schema_id``, ``op`` and ``seq`` columns alone:
by one small Spark aggregate over the increment, or, when the incremental runner has read those
three columns of the increment with delta-rs (`silver.bronze_reader.scan_columns`, no Spark job),
by `groups_of` from them. The source commit time of truncates is fetched (one Spark query) only
when there are some.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import DataFrame
from pyspark.sql import functions as sf

__all__ = ["IncrementScan", "ScanGroup", "Truncate", "groups_of", "scan_increment"]


@dataclass(frozen=True)
class Truncate:
    """One truncate event: its bronze ``seq`` and source commit time (ms, if known)."""

    seq: int
    ts_ms: int | None


@dataclass(frozen=True)
class ScanGroup:
    """The increment's rows that point at one ``schema_id`` (None: rows without one).

    Attributes:
        rows: how many.
        lo: their lowest ``seq``; hi: their highest.
        truncates: how many are truncates (``op`` t).
        snapshot_rows: how many are snapshot reads (``op`` r).
    """

    schema_id: str | None
    rows: int
    lo: int
    hi: int
    truncates: int
    snapshot_rows: int


@dataclass(frozen=True)
class IncrementScan:
    """What an increment holds.

    Attributes:
        rows: bronze rows in the increment.
        schema_ids: schema ids its rows point at.
        truncates: its truncate events, by ``seq``.
        min_seq: lowest ``seq`` (None when empty).
        max_seq: highest ``seq`` (None when empty).
        snapshot_rows: its snapshot reads (``op`` r); none: no snapshot ends in it.
    """

    rows: int
    schema_ids: frozenset[str]
    truncates: tuple[Truncate, ...]
    min_seq: int | None
    max_seq: int | None
    snapshot_rows: int = 0

    @property
    def last_truncate(self) -> Truncate | None:
        """The increment's last truncate, if any."""
        return self.truncates[-1] if self.truncates else None


def groups_of(columns: pa.Table) -> tuple[ScanGroup, ...]:
    """The scan groups of an increment given as its ``schema_id``, ``op`` and ``seq`` columns."""
    op = columns.column("op")
    marked = pa.table({
        "schema_id": columns.column("schema_id"),
        "seq": columns.column("seq"),
        "t": pc.cast(pc.fill_null(pc.equal(op, "t"), False), pa.int64()),
        "r": pc.cast(pc.fill_null(pc.equal(op, "r"), False), pa.int64()),
    })
    agg = marked.group_by("schema_id").aggregate(
        [("seq", "count"), ("seq", "min"), ("seq", "max"), ("t", "sum"), ("r", "sum")]).to_pylist()
    return tuple(ScanGroup(g["schema_id"], int(g["seq_count"]), int(g["seq_min"]), int(g["seq_max"]),
                           int(g["t_sum"]), int(g["r_sum"])) for g in agg if g["seq_count"])


def _spark_groups(bronze: DataFrame) -> tuple[ScanGroup, ...]:
    rows = bronze.groupBy("schema_id").agg(
        sf.count(sf.lit(1)).alias("n"), sf.min("seq").alias("lo"), sf.max("seq").alias("hi"),
        sf.sum(sf.when(sf.col("op") == "t", 1).otherwise(0)).alias("t"),
        sf.sum(sf.when(sf.col("op") == "r", 1).otherwise(0)).alias("r")).collect()
    return tuple(ScanGroup(r["schema_id"], int(r["n"]), int(r["lo"]), int(r["hi"]), int(r["t"]), int(r["r"]))
                 for r in rows if r["n"])


def scan_increment(bronze: DataFrame, groups: Sequence[ScanGroup] | None = None) -> IncrementScan:
    """Scan an increment (see module doc); ``groups``: its scan groups if already known (`groups_of`),
    else one Spark aggregate computes them."""
    found = _spark_groups(bronze) if groups is None else tuple(groups)
    ids = frozenset(g.schema_id for g in found if g.schema_id is not None)
    truncates: tuple[Truncate, ...] = ()
    if any(g.truncates for g in found):
        rows = bronze.where(sf.col("op") == "t").select(
            "seq", sf.get_json_object("value", "$.source.ts_ms").cast("bigint").alias("ts")).collect()
        truncates = tuple(sorted((Truncate(int(r["seq"]), None if r["ts"] is None else int(r["ts"]))
                                  for r in rows), key=lambda t: t.seq))
    return IncrementScan(sum(g.rows for g in found), ids, truncates, min((g.lo for g in found), default=None),
                         max((g.hi for g in found), default=None), sum(g.snapshot_rows for g in found))
