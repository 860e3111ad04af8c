"""Per-table progress: the last bronze ``seq`` applied to a silver table.

Each silver table has a one-row Delta table at ``<state>/progress/<table>``, overwritten after
every successful apply (its Delta history is the audit trail). Progress is written *after*
the silver commit: a crash in between re-applies the same increment on the next run, which is
harmless because every apply is idempotent (upserts and deletes are guarded by the row's
``_cdc_seq``, truncates by the truncate's ``seq``, quarantine rows by ``(table, seq)``).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from pyspark.sql import SparkSession
from pyspark.sql.types import ArrayType, LongType, StringType, StructField, StructType, TimestampType

from silver.delta_io import read_delta_or_none

__all__ = ["Progress", "ProgressStore"]

_SCHEMA = StructType([
    StructField("table", StringType(), False),
    StructField("topic", StringType(), False),
    StructField("last_seq", LongType(), False),
    StructField("bronze_version", LongType(), True),
    StructField("keys", ArrayType(StringType()), False),
    StructField("run_id", StringType(), False),
    StructField("updated_at", TimestampType(), False),
])


@dataclass(frozen=True)
class Progress:
    """Where a silver table stands.

    Attributes:
        table: the silver table.
        topic: the bronze topic it reads.
        last_seq: every bronze row with ``seq <= last_seq`` has been applied.
        bronze_version: the bronze table version the last increment was read from.
        keys: the silver key columns (a later change of keys needs a rebuild).
        run_id: the run that wrote it.
        updated_at: when.
    """

    table: str
    topic: str
    last_seq: int
    bronze_version: int | None
    keys: tuple[str, ...]
    run_id: str
    updated_at: dt.datetime


class ProgressStore:
    """Reads and writes progress records under a state location. Not thread-safe per table."""

    def __init__(self, spark: SparkSession, state_location: str) -> None:
        self.spark = spark
        self.state_location = state_location.rstrip("/")

    def path(self, table: str) -> str:
        """The progress table of a silver table."""
        return f"{self.state_location}/progress/{table}"

    def read(self, table: str) -> Progress | None:
        """The table's progress, or None if it was never applied."""
        df = read_delta_or_none(self.spark, self.path(table))
        rows = [] if df is None else df.collect()
        if not rows:
            return None
        r = max(rows, key=lambda row: row["last_seq"])
        return Progress(r["table"], r["topic"], int(r["last_seq"]), r["bronze_version"], tuple(r["keys"]),
                        r["run_id"], r["updated_at"])

    def write(self, progress: Progress) -> None:
        """Replace the table's progress record."""
        row = (progress.table, progress.topic, progress.last_seq, progress.bronze_version, list(progress.keys),
               progress.run_id, progress.updated_at)
        (self.spark.createDataFrame([row], _SCHEMA).write.format("delta").mode("overwrite")
         .save(self.path(progress.table)))
