"""A streaming micro-batch that failed a ``fail`` gate, checked again with what bronze holds now.

Spark re-runs a failed micro-batch with the same bronze range when its query restarts, so a
change that fixed the failing rows at the source (and reached bronze since) would never be part
of it: the stream would stop at the same rows on every restart. The incremental runner instead
reads bronze from the table's progress up to its current end, where the fix then wins (silver
keeps the latest change per key). `bronze_since` gives the streaming driver that same increment
when bronze holds rows past the failed micro-batch; the micro-batches that follow find those
rows applied (their ``seq`` is not above the progress) and skip them.
"""

from __future__ import annotations

import logging

from pyspark.sql import DataFrame, SparkSession

from bronze.schema import topic_path
from silver.bronze_reader import SeqRange, bronze_files, plan_range, read_range, spark_range
from silver.declarations import SilverOptions

__all__ = ["bronze_since"]

log = logging.getLogger(__name__)


def bronze_since(spark: SparkSession, root: str, topic: str, options: SilverOptions, *, after_seq: int,
                 batch_max_seq: int) -> DataFrame | None:
    """The bronze rows of ``topic`` with ``seq > after_seq`` (up to bronze's current end, capped
    by ``max_bronze_rows_per_run``), or None when bronze holds nothing past ``batch_max_seq``."""
    path = topic_path(root, topic)
    rng: SeqRange | None
    try:
        files = bronze_files(path, options.storage_options)
    except Exception as exc:  # delta-rs cannot read the store: let Spark find the bound
        log.info("delta-rs cannot read %s (%s); using Spark for the increment bound", path, exc)
        rng = spark_range(spark, path, after_seq)
    else:
        rng = None if files is None else plan_range(files, after_seq, max_rows=options.max_bronze_rows_per_run)
    if rng is None or rng.upto_seq <= batch_max_seq:
        return None
    return read_range(spark, path, rng)
