"""Transaction-consistent cuts (``silver_options.consistency: {<source>: transaction}``).

A run advances every silver table of such a source to the same source transaction boundary,
so a join across them never sees half of a source transaction:

1. the cut is the source's newest committed capture batch B in ``_cdc/<source>/offsets``
   (rows are written after all of a batch's data commits, so batch B is complete in every
   bronze table); while the initial snapshot is incomplete there is no cut (tables wait);
2. a batch may end inside a transaction (the capture commits on size/time), so within each
   table only rows of transactions complete at B's end are taken: B's offsets commit says,
   per table, up to which seq they are (``cdc.complete_seq``, written by the bronze writer
   from where the connector's checkpoints fell, the same for every connector). Rows of the
   transaction still open at the cut wait for the next run.

Bronze written before the writer recorded ``cdc.complete_seq`` (or offsets rows appended by
another writer, read from the rows): only whole committed batches are known to be complete,
so the cut takes whole batches; a transaction that spans batches may then show in part.

Cost: one look at the offsets table's newest commits per source and run (its commit metadata
names the batch and the bounds, read with delta-rs; the table gains a file per capture batch, so
reading its rows would cost more every pass), plus one aggregate per table over the new bronze
rows' ``seq``/``batch`` columns; and tables advance only as far as the last complete
transaction. The tables are still committed one after another: during a run a reader can see
some tables at the new cut and some at the previous one; after the run, all are at the same
cut (the progress records name the batch).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from pyspark.sql import SparkSession
from pyspark.sql import functions as sf

from bronze.schema import offsets_path
from bronze.view import BronzeView
from silver.delta_io import read_delta_or_none

log = logging.getLogger(__name__)

_RECENT_COMMITS = 10
"""How many of the offsets table's newest commits are searched for the batch metadata."""

__all__ = ["SourceCut", "committed_cut", "cut_upto_seq"]


@dataclass(frozen=True)
class SourceCut:
    """The newest committed batch of a source, and where the complete transactions stop in it.

    Attributes:
        batch: the batch number.
        snapshot_completed: whether the initial snapshot had completed by then.
        complete_seq: per topic, the last seq of a complete transaction when rows of the
            transaction still open follow it (topics not named: complete through ``batch``);
            None when the commit does not say (older bronze): whole batches only.
    """

    batch: int
    snapshot_completed: bool
    complete_seq: Mapping[str, int] | None = None


def committed_cut(spark: SparkSession, root: str, source: str,
                  storage_options: Mapping[str, str] | None = None) -> SourceCut | None:
    """The source's newest committed batch, or None if nothing was committed yet.

    Read from the offsets table's newest commit (delta-rs, no data file opened); with a store
    delta-rs cannot read, or commits without the batch metadata, from its rows with Spark.
    """
    path = offsets_path(root, source)
    try:
        found = _cut_from_log(root, source, storage_options)
    except Exception as exc:  # delta-rs cannot read the store: Spark reads the rows
        log.info("delta-rs cannot read %s (%s); reading the offsets with Spark", path, exc)
        found = "unknown"
    if found != "unknown":
        return found
    df = read_delta_or_none(spark, path)
    if df is None:
        return None
    rows = df.orderBy(sf.col("batch").desc()).limit(1).collect()
    if not rows:
        return None
    return SourceCut(int(rows[0]["batch"]), bool(rows[0]["snapshot_completed"]))


def _cut_from_log(root: str, source: str, storage_options: Mapping[str, str] | None
                  ) -> SourceCut | Literal["unknown"] | None:
    """The cut from the newest capture commit's metadata; None without a table, "unknown" without the metadata."""
    found = BronzeView(root, source, storage_options).capture_commit(_RECENT_COMMITS)
    if found is None or found == "unknown":
        return found
    return SourceCut(found.batch, found.snapshot_completed, found.complete_seq)


def cut_upto_seq(spark: SparkSession, bronze_path: str, topic: str, after_seq: int,
                 cut: SourceCut) -> int | Literal["missing"] | None:
    """The highest ``seq`` of a topic's table at ``cut`` (see module doc); None if nothing new;
    ``"missing"`` while the topic has no bronze table yet (its table waits for one)."""
    df = read_delta_or_none(spark, bronze_path)
    if df is None:
        return "missing"
    seq = sf.col("seq")
    top = df.where((seq > after_seq) & (sf.col("batch") <= cut.batch)).agg(sf.max(seq).alias("hi")).collect()[0]["hi"]
    if top is None:
        return None
    bound = None if cut.complete_seq is None else cut.complete_seq.get(topic)
    hi = int(top) if bound is None else min(int(top), bound)
    return hi if hi > after_seq else None
