"""A first, cheap look at a bronze increment: which schemas decode it, and its truncates.

Reads only the ``schema_id``, ``op`` and ``seq`` columns (one small aggregate job); the
source commit time of truncates is fetched only when there are some.
"""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import DataFrame
from pyspark.sql import functions as sf

__all__ = ["IncrementScan", "Truncate", "scan_increment"]


@dataclass(frozen=True)
class Truncate:
    """One truncate event: its bronze ``seq`` and source commit time (ms, if known)."""

    seq: int
    ts_ms: int | None


@dataclass(frozen=True)
class IncrementScan:
    """What an increment holds.

    Attributes:
        rows: bronze rows in the increment.
        schema_ids: schema ids its rows point at.
        truncates: its truncate events, by ``seq``.
        min_seq: lowest ``seq`` (None when empty).
        max_seq: highest ``seq`` (None when empty).
    """

    rows: int
    schema_ids: frozenset[str]
    truncates: tuple[Truncate, ...]
    min_seq: int | None
    max_seq: int | None

    @property
    def last_truncate(self) -> Truncate | None:
        """The increment's last truncate, if any."""
        return self.truncates[-1] if self.truncates else None


def scan_increment(bronze: DataFrame) -> IncrementScan:
    """Scan an increment (see module doc)."""
    is_t = sf.col("op") == "t"
    rows = bronze.groupBy("schema_id").agg(
        sf.count(sf.lit(1)).alias("n"), sf.min("seq").alias("lo"), sf.max("seq").alias("hi"),
        sf.sum(sf.when(is_t, 1).otherwise(0)).alias("t")).collect()
    total = sum(int(r["n"]) for r in rows)
    ids = frozenset(r["schema_id"] for r in rows if r["schema_id"] is not None)
    los = [int(r["lo"]) for r in rows if r["lo"] is not None]
    his = [int(r["hi"]) for r in rows if r["hi"] is not None]
    truncates: tuple[Truncate, ...] = ()
    if any(r["t"] for r in rows):
        found = bronze.where(is_t).select(
            "seq", sf.get_json_object("value", "$.source.ts_ms").cast("bigint").alias("ts")).collect()
        truncates = tuple(sorted((Truncate(int(r["seq"]), None if r["ts"] is None else int(r["ts"]))
                                  for r in found), key=lambda t: t.seq))
    return IncrementScan(total, ids, truncates, min(los, default=None), max(his, default=None))
