"""Re-snapshots are authoritative: rows a new snapshot of a table did not hold leave silver.

A snapshot emits one ``r`` event per row it reads and nothing for a row that is gone, so a
row deleted while capture could not see it (capture stopped and the slot lost or the binlog
purged, ``snapshot.mode: always``, a ``reset``) would stay in silver forever. When an
increment holds the end of a table's snapshot that is not its first one, silver removes
(SCD1), flags (soft deletes) or closes as deleted (SCD2) every row whose last change came
before the snapshot started: its key was not in the snapshot, and no change after the
snapshot started (re)created it.

A table's snapshot boundaries come from bronze alone (`snapshot_windows`, `table_snapshot`):

* the offsets table ends a snapshot attempt at a batch committed with ``snapshot_completed``
  true; the attempt's batches are those after the previous such batch, up to it. An attempt
  still running (batches with ``snapshot_completed`` false after the last true one) is in no
  window; an interrupted attempt's rows are deleted from bronze before the next one starts;
* within a window, the table's ``op = r`` rows are its snapshot: first ``seq`` S, last L.

The rule is ``_cdc_seq < S``, checked after the increment's MERGE: every key the snapshot
read carries a ``seq`` of at least S by then, and so does every key that a change streamed
after the snapshot started (a write during the snapshot) touched. It needs no list of keys
(no anti-join of the snapshot's keys against silver): one ``DELETE``/``UPDATE`` guarded by
``_cdc_seq`` (and the flag or ``is_current``), so re-applying the increment after a crash
changes nothing. A snapshot split over several increments is settled by the increment that
holds L, when every row of the snapshot has been merged. A table's first snapshot (no bronze
row before S) needs nothing.

An incremental snapshot's rows are streamed between other changes, in batches that say
nothing about it, so its boundaries come from its rows instead (`find_incremental_snapshot`):
each carries the snapshot's correlation id in its ``position``, and the rows of the table's
last chunk a mark; L is the highest ``seq`` of its rows and S the lowest, or lower: the first
change streamed after the watermark that opened the table's first chunk (its rows carry that
watermark's commit mark, `cdc_sources.spi.commit_mark`: the commit LSN, the commit SCN, or the binlog position;
the table's largest key is read after it, so a row with a larger key, which no
chunk reads, was streamed after it). Settled by the increment holding L. Those rows are left
out of the initial-snapshot windows above. The same rule ``_cdc_seq < S`` holds: every change
streamed while the chunks were read follows S in bronze. Limit: if every row of the last
chunk is superseded by a streamed change while its window is open, no row carries the mark,
and the table keeps its stale rows.

Limit: a table that was empty at the new snapshot has no ``r`` rows, hence no boundaries,
and keeps its silver rows.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as sf

from bronze.schema import offsets_path, topic_path
from cdc_sources.spi import BINLOG_FILE_FACTOR, SQLSERVER_VLF_LIMIT
from cdc_sources.spi import POSITION_INCREMENTAL_ID as POSITION_ID
from cdc_sources.spi import POSITION_INCREMENTAL_LAST as POSITION_LAST
from cdc_sources.spi import POSITION_INCREMENTAL_START as POSITION_START
from silver.apply import OP_COL, SEQ_COL, TS_COL
from silver.declarations import SilverTable
from silver.delta_io import read_delta_or_none
from silver.errors import SilverTableError
from silver.sql import quote

__all__ = [
    "BatchSpan",
    "BronzeRef",
    "TableSnapshot",
    "find_incremental_snapshot",
    "find_resnapshot",
    "resnapshot_sql",
    "snapshot_windows",
    "table_snapshot",
]


@dataclass(frozen=True)
class BronzeRef:
    """Where an increment's source keeps bronze: the lakehouse root and the source's name."""

    root: str
    source: str


@dataclass(frozen=True)
class BatchSpan:
    """The ``op = r`` rows one capture batch wrote to a table: lowest and highest ``seq``."""

    batch: int
    first_seq: int
    last_seq: int


@dataclass(frozen=True)
class TableSnapshot:
    """One completed snapshot of a table in bronze.

    Attributes:
        first_seq: ``seq`` of its first row (S).
        last_seq: ``seq`` of its last row (L).
        ts_ms: the source time of its first row (``source.ts_ms``), if known.
    """

    first_seq: int
    last_seq: int
    ts_ms: int | None = None


def snapshot_windows(offsets: Sequence[tuple[int, bool]]) -> list[tuple[int, int]]:
    """Batch windows ``(after, upto]`` that each end at a batch committed with the snapshot completed.

    ``offsets``: ``(batch, snapshot_completed)`` of every row of the offsets table, any order.
    """
    windows, previous = [], 0
    for batch, completed in sorted(offsets):
        if completed:
            windows.append((previous, batch))
            previous = batch
    return windows


def table_snapshot(spans: Sequence[BatchSpan], windows: Sequence[tuple[int, int]],
                   lo_seq: int, hi_seq: int) -> TableSnapshot | None:
    """The table's newest completed snapshot whose last row has a ``seq`` in ``[lo_seq, hi_seq]``."""
    found: TableSnapshot | None = None
    for after, upto in windows:
        inside = [s for s in spans if after < s.batch <= upto]
        if not inside:
            continue
        snap = TableSnapshot(min(s.first_seq for s in inside), max(s.last_seq for s in inside))
        if lo_seq <= snap.last_seq <= hi_seq and (found is None or snap.last_seq > found.last_seq):
            found = snap
    return found


def find_resnapshot(spark: SparkSession, ref: BronzeRef, topic: str, increment: DataFrame,
                    min_seq: int, max_seq: int) -> TableSnapshot | None:
    """The re-snapshot (not the table's first snapshot) that ends in this increment, if any.

    Reads: the increment's ``r`` rows' batches and incremental snapshot ids (one aggregate), the
    offsets table's batch and completion columns, and the bronze table's ``r`` rows of the windows
    concerned (``op``, ``seq``, ``batch`` only; Delta skips files by ``batch``).
    """
    inc, batch = _incremental_id(), sf.col("batch")  # incremental rows are not in the batch windows
    last = sf.get_json_object(sf.col("position"), f"$.{POSITION_LAST}") == "true"
    span = increment.where(sf.col("op") == "r").agg(
        sf.min(sf.when(inc.isNull(), batch)).alias("lo"), sf.max(sf.when(inc.isNull(), batch)).alias("hi"),
        sf.collect_set(sf.when(last, inc)).alias("ids")).collect()[0]
    if span["ids"]:
        incremental = find_incremental_snapshot(spark, ref, topic, sorted(span["ids"]), min_seq, max_seq)
        if incremental is not None:
            return incremental
    r = (sf.col("op") == "r") & inc.isNull()  # initial (and when_needed, always) snapshots
    if span["lo"] is None:
        return None
    offsets = _offsets(spark, ref, int(span["hi"]))
    if offsets is None:
        return None  # bronze without offsets (written by other tools): no snapshot boundaries
    windows = [w for w in snapshot_windows(offsets) if w[0] < int(span["hi"]) and w[1] >= int(span["lo"])]
    if not windows:
        return None
    after, upto = min(w[0] for w in windows), max(w[1] for w in windows)
    bronze = spark.read.format("delta").load(topic_path(ref.root, topic))
    batch = sf.col("batch")
    rows = (bronze.where(r & (batch > after) & (batch <= upto)).groupBy("batch")
            .agg(sf.min("seq").alias("lo"), sf.max("seq").alias("hi")).collect())
    spans = [BatchSpan(int(x["batch"]), int(x["lo"]), int(x["hi"])) for x in rows]
    snap = table_snapshot(spans, windows, min_seq, max_seq)
    if snap is None or bronze.where(sf.col("seq") < snap.first_seq).limit(1).count() == 0:
        return None  # the table's first snapshot: nothing in silver came before it
    first = bronze.where(sf.col("seq") == snap.first_seq).select(
        sf.get_json_object("value", "$.source.ts_ms").cast("bigint").alias("ts")).collect()
    ts = first[0]["ts"] if first else None
    return TableSnapshot(snap.first_seq, snap.last_seq, None if ts is None else int(ts))


def _commit_mark() -> Column:
    """`cdc_sources.spi.commit_mark` of the bronze ``position``: ``lsn_commit`` (PostgreSQL), else
    ``commit_lsn`` (SQL Server), else the highest commit SCN of ``commit_scn`` (Oracle), else the
    binlog ``file`` number and ``pos`` (MySQL, MariaDB)."""
    pos = sf.col("position")
    file_no = sf.regexp_extract(sf.get_json_object(pos, "$.file"), r"\.([0-9]+)$", 1)
    binlog = (sf.when(file_no != "", file_no.cast("bigint") * sf.lit(BINLOG_FILE_FACTOR)
                      + sf.get_json_object(pos, "$.pos").cast("bigint")))
    lsn = sf.get_json_object(pos, "$.commit_lsn")
    vlf = sf.conv(sf.substring(lsn, 1, 8), 16, 10).cast("bigint")
    mssql = sf.when(lsn.rlike("^[0-9a-fA-F]{8}:[0-9a-fA-F]{8}:[0-9a-fA-F]{4}$"),
                    sf.least(vlf, sf.lit(SQLSERVER_VLF_LIMIT)) * sf.lit(1 << 32)
                    + sf.conv(sf.substring(lsn, 10, 8), 16, 10).cast("bigint"))
    oracle = sf.array_max(sf.regexp_extract_all(sf.get_json_object(pos, "$.commit_scn"), sf.lit(r"(?:^|,)([0-9]+)"),
                                                sf.lit(1)).cast("array<bigint>"))
    return sf.coalesce(sf.get_json_object(pos, "$.lsn_commit").cast("bigint"), mssql, oracle, binlog)


def _incremental_id() -> Column:
    return sf.get_json_object(sf.col("position"), f"$.{POSITION_ID}")


def find_incremental_snapshot(spark: SparkSession, ref: BronzeRef, topic: str, ids: Sequence[str],
                              min_seq: int, max_seq: int) -> TableSnapshot | None:
    """The incremental snapshot of the table that ends in this increment, if any, and not its first snapshot.

    ``ids``: the correlation ids of the increment's rows of a last chunk (see the module doc).
    Reads the ``seq`` range of the bronze ``r`` rows of each id, and the first change after its start.
    """
    bronze = spark.read.format("delta").load(topic_path(ref.root, topic))
    found: TableSnapshot | None = None
    for cid in ids:
        start = sf.get_json_object(sf.col("position"), f"$.{POSITION_START}").cast("bigint")
        agg = (bronze.where((sf.col("op") == "r") & (_incremental_id() == cid))
               .agg(sf.min("seq").alias("lo"), sf.max("seq").alias("hi"), sf.max(start).alias("start")).collect()[0])
        if agg["lo"] is None or not min_seq <= int(agg["hi"]) <= max_seq:
            continue
        lo = int(agg["lo"])
        if agg["start"] is not None:  # changes streamed after the first chunk's open watermark count as inside
            commit = _commit_mark()
            first = bronze.where((sf.col("seq") < lo) & (commit >= int(agg["start"]))).agg(
                sf.min("seq").alias("s")).collect()[0]["s"]
            lo = lo if first is None else min(lo, int(first))
        if found is None or int(agg["hi"]) > found.last_seq:
            found = TableSnapshot(lo, int(agg["hi"]))
    if found is None or bronze.where(sf.col("seq") < found.first_seq).limit(1).count() == 0:
        return None
    first = bronze.where(sf.col("seq") == found.first_seq).select(
        sf.get_json_object("value", "$.source.ts_ms").cast("bigint").alias("ts")).collect()
    ts = first[0]["ts"] if first else None
    return TableSnapshot(found.first_seq, found.last_seq, None if ts is None else int(ts))


def _offsets(spark: SparkSession, ref: BronzeRef, needed: int,
             wait_s: float = 30.0) -> list[tuple[int, bool]] | None:
    """``(batch, snapshot_completed)`` of the source's offsets rows, once batch ``needed`` has one;
    None if the source has no offsets table.

    Capture commits a batch's offsets row just after its data: an increment read in between
    holds rows of a batch not known yet to be complete, so wait for the row.
    """
    deadline = time.monotonic() + wait_s
    while True:
        df = read_delta_or_none(spark, offsets_path(ref.root, ref.source))
        if df is None:
            return None
        rows = df.select("batch", "snapshot_completed").collect()
        offsets = [(int(o["batch"]), bool(o["snapshot_completed"])) for o in rows]
        if max((b for b, _ in offsets), default=0) >= needed:
            return offsets
        if time.monotonic() > deadline:
            raise SilverTableError(
                f"bronze batch {needed} of source {ref.source!r} holds snapshot rows but has no offsets row after "
                f"{wait_s:.0f} s (capture stopped between its data and offsets commits?); the table is retried "
                "at the next pass")
        time.sleep(0.5)


def _ts(snap: TableSnapshot) -> str:
    return "CAST(NULL AS TIMESTAMP)" if snap.ts_ms is None else f"timestamp_millis({int(snap.ts_ms)})"


def resnapshot_sql(target: str, decl: SilverTable, snap: TableSnapshot) -> str:
    """The statement settling a re-snapshot on a silver table (see module doc): rows with ``_cdc_seq < S``
    are deleted (SCD1), flagged deleted (soft deletes) or, if current, closed as deleted (SCD2)."""
    start, ts = int(snap.first_seq), _ts(snap)
    older = f"{quote(SEQ_COL)} < {start}"
    if decl.history == "scd2":
        s = decl.scd2
        return (f"UPDATE {target} SET {quote(s.valid_to)} = {ts}, {quote(s.current)} = false, "
                f"{quote(s.deleted)} = true, {quote(s.end_seq)} = {start} WHERE {quote(s.current)} AND {older}")
    if decl.deletes != "soft":
        return f"DELETE FROM {target} WHERE {older}"
    flag, when = quote(decl.soft_delete.flag), quote(decl.soft_delete.timestamp)
    return (f"UPDATE {target} SET {flag} = true, {when} = {ts}, {quote(SEQ_COL)} = {start}, "
            f"{quote(OP_COL)} = 'd', {quote(TS_COL)} = {ts} WHERE {older} AND NOT coalesce({flag}, false)")
