"""Reading bronze increments: only new rows, only the files that hold them.

A bronze table only grows (append-only, ``seq`` strictly increasing), so an increment is a
``seq`` range ``(after_seq, upto_seq]``. The Delta log's per-file ``seq`` min/max statistics
(read with delta-rs, no Spark job) give the range's upper bound and the files Spark will open;
the Spark read filters on ``seq`` and Delta skips every other file. Without delta-rs access
(e.g. a store it has no credentials for) the bound comes from a Spark aggregate and the file
counts are unknown.

The range is planned on one table version and read from the table's newest version, not from
the planned one: the rows of a planned range are the same in every later version (capture only
appends rows with higher ``seq``; compaction rewrites files with the same rows; retention deletes
only rows every silver table has applied, at or below its ``after_seq``; a discarded snapshot
attempt is never planned, since silver waits while a snapshot runs), and Sail cannot read a
version older than the table's newest Delta checkpoint, which capture writes every 100 commits.
"Never planned" needs one more bound: a capture commit writes bronze's rows before its offsets
row, so between the two a pass can find rows of a batch that the source's committed cut (the
offsets table's newest row, read at the pass's start) does not cover yet, e.g. the first batch of
a new snapshot attempt. `plan_range` stops below the first file holding a batch past the cut
(the files' ``batch`` statistics); those rows are planned once their offsets row is committed.
The planned version is kept in the range (``version``, recorded in the progress) for
``maintain``, whose VACUUM keeps every file of it and of later versions.

`scan_columns` reads the increment's ``schema_id``, ``op`` and ``seq`` columns from the planned
version with delta-rs (which reads any version), for `silver.scan` (a Spark job less per
increment): the same rows as Spark's read of the newest version.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as sf

from bronze.schema import COL_BATCH, COL_SEQ

__all__ = ["BronzeFiles", "SeqRange", "bronze_files", "plan_range", "read_range", "scan_columns"]

SCAN_COLUMNS = ("schema_id", "op", COL_SEQ)
"""The bronze columns `scan_columns` reads."""


@dataclass(frozen=True)
class FileStat:
    """One data file of a bronze table version (``batch`` bounds None when the file has no statistics)."""

    min_seq: int
    max_seq: int
    rows: int
    max_batch: int | None = None


@dataclass(frozen=True)
class BronzeFiles:
    """The data files of one bronze table version, with their ``seq`` statistics."""

    version: int
    files: tuple[FileStat, ...]
    table: Any = field(default=None, compare=False, repr=False)
    """The delta-rs table at ``version`` the stats were read from (for `scan_columns`), if kept."""

    @property
    def max_seq(self) -> int | None:
        """The table's highest ``seq`` (None when empty)."""
        return max((f.max_seq for f in self.files), default=None)


@dataclass(frozen=True)
class SeqRange:
    """A bronze increment: rows with ``after_seq < seq <= upto_seq``, planned on table version ``version``.

    Attributes:
        files_read: data files whose ``seq`` range overlaps the increment (None if unknown).
        files_total: data files of the table version (None if unknown).
    """

    after_seq: int
    upto_seq: int
    version: int | None
    files_read: int | None = None
    files_total: int | None = None


def bronze_files(path: str, storage_options: dict[str, str] | None = None) -> BronzeFiles | None:
    """The current version's files and stats via delta-rs; None if the table does not exist.

    Raises:
        OSError / deltalake errors when the store is unreachable (callers fall back to Spark).
    """
    from deltalake import DeltaTable
    from deltalake.exceptions import TableNotFoundError

    try:
        table = DeltaTable(path, storage_options=storage_options or None)
    except TableNotFoundError:
        return None
    actions = pa.table(table.get_add_actions(flatten=True))
    names = set(actions.schema.names)
    lo, hi, n, top_batch = f"min.{COL_SEQ}", f"max.{COL_SEQ}", "num_records", f"max.{COL_BATCH}"
    count = actions.num_rows
    cols = actions.select([c for c in (lo, hi, n, top_batch) if c in names]).to_pydict()
    # a file without stats must be read: give it the widest range
    mins = cols.get(lo, [None] * count)
    maxes = cols.get(hi, [None] * count)
    batches = cols.get(top_batch, [None] * count)
    files = [FileStat(-(2**63) if mn is None else int(mn), 2**63 - 1 if mx is None else int(mx), int(rows or 0),
                      None if b is None else int(b))
             for mn, mx, rows, b in zip(mins, maxes, cols[n], batches, strict=True)]
    return BronzeFiles(int(table.version()), tuple(files), table)


def plan_range(files: BronzeFiles, after_seq: int, *, upto_seq: int | None = None,
               max_rows: int | None = None, upto_batch: int | None = None) -> SeqRange | None:
    """The increment after ``after_seq`` (capped at ``upto_seq`` / about ``max_rows`` rows / below
    the first file with a row of a batch after ``upto_batch``, the source's committed cut).

    Returns None when there is nothing new.
    """
    newer = sorted((f for f in files.files if f.max_seq > after_seq), key=lambda f: f.min_seq)
    top = files.max_seq
    if not newer or top is None:
        return None
    upto = top if upto_seq is None else min(top, upto_seq)
    if upto_batch is not None:
        past = [f.min_seq for f in newer if f.max_batch is not None and f.max_batch > upto_batch]
        if past:
            upto = min(upto, min(past) - 1)
    if max_rows is not None:
        taken, rows = [], 0
        for f in newer:
            taken.append(f)
            rows += f.rows
            if rows >= max_rows:
                break
        upto = min(upto, max(f.max_seq for f in taken))
    if upto <= after_seq:
        return None
    read = sum(1 for f in newer if f.min_seq <= upto)
    return SeqRange(after_seq, upto, files.version, read, len(files.files))


def spark_range(spark: SparkSession, path: str, after_seq: int, *, upto_seq: int | None = None,
                upto_batch: int | None = None) -> SeqRange | None:
    """`plan_range` without delta-rs: the upper bound from a Spark aggregate."""
    df = spark.read.format("delta").load(path).where(sf.col(COL_SEQ) > after_seq)
    if upto_seq is not None:
        df = df.where(sf.col(COL_SEQ) <= upto_seq)
    if upto_batch is not None:
        df = df.where(sf.col(COL_BATCH) <= upto_batch)
    top = df.agg(sf.max(COL_SEQ).alias("m")).collect()[0]["m"]
    return None if top is None else SeqRange(after_seq, int(top), None)


def read_range(spark: SparkSession, path: str, rng: SeqRange) -> DataFrame:
    """The bronze rows of ``rng``, from the table's newest version (see the module doc: the same
    rows as in the planned version); Delta skips files outside the range by their ``seq`` stats."""
    seq = sf.col(COL_SEQ)
    return spark.read.format("delta").load(path).where((seq > rng.after_seq) & (seq <= rng.upto_seq))


def scan_columns(files: BronzeFiles, rng: SeqRange) -> pa.Table | None:
    """The ``schema_id``, ``op`` and ``seq`` columns of the rows of ``rng`` (planned from ``files``),
    read with delta-rs from the table version of ``files``; None when that table was not kept or
    ``rng`` is of another version.

    Raises:
        OSError / deltalake / pyarrow errors when the store cannot be read (callers use Spark then).
    """
    if files.table is None or rng.version != files.version:
        return None
    import pyarrow.dataset as ds

    seq = ds.field(COL_SEQ)
    dataset = files.table.to_pyarrow_dataset()
    return dataset.to_table(columns=list(SCAN_COLUMNS), filter=(seq > rng.after_seq) & (seq <= rng.upto_seq))
