"""Per-table progress: the last bronze ``seq`` applied to a silver table.

Each silver table has a one-row Delta table at ``<state>/progress/<table>``, overwritten after
every successful apply (its Delta history is the audit trail). Records are read and written
with delta-rs (no Spark job: a one-row table costs milliseconds there, about a second per write
on classic Spark); a store delta-rs cannot reach, or a table it cannot read or overwrite, goes
through Spark instead. Progress is written *after*
the silver commit: a crash in between re-applies the same increment on the next run, which is
harmless because every apply is idempotent (upserts and deletes are guarded by the row's
``_cdc_seq``, truncates by the truncate's ``seq``, quarantine rows by ``(table, seq)``).
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
from pyspark.sql import SparkSession
from pyspark.sql.types import ArrayType, LongType, StringType, StructField, StructType, TimestampType

from silver.delta_io import DELTA_RS_FAILURES, read_delta_or_none

__all__ = ["Progress", "ProgressStore"]

log = logging.getLogger(__name__)

_SCHEMA = StructType([
    StructField("table", StringType(), False),
    StructField("topic", StringType(), False),
    StructField("last_seq", LongType(), False),
    StructField("bronze_version", LongType(), True),
    StructField("keys", ArrayType(StringType()), False),
    StructField("run_id", StringType(), False),
    StructField("updated_at", TimestampType(), False),
])
_ARROW = pa.schema([
    pa.field("table", pa.string(), False),
    pa.field("topic", pa.string(), False),
    pa.field("last_seq", pa.int64(), False),
    pa.field("bronze_version", pa.int64(), True),
    pa.field("keys", pa.list_(pa.field("element", pa.string(), True)), False),
    pa.field("run_id", pa.string(), False),
    pa.field("updated_at", pa.timestamp("us", tz="UTC"), False),
])
"""The same schema for delta-rs (Delta ``timestamp``: UTC microseconds)."""


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
    """Reads and writes progress records under a state location. Not thread-safe per table.

    ``storage_options``: delta-rs options for an object store (as for the bronze reads).
    """

    def __init__(self, spark: SparkSession, state_location: str,
                 storage_options: Mapping[str, str] | None = None) -> None:
        self.spark = spark
        self.state_location = state_location.rstrip("/")
        self.storage_options = dict(storage_options) if storage_options else None

    def path(self, table: str) -> str:
        """The progress table of a silver table."""
        return f"{self.state_location}/progress/{table}"

    def read(self, table: str) -> Progress | None:
        """The table's progress, or None if it was never applied."""
        from deltalake import DeltaTable
        from deltalake.exceptions import TableNotFoundError

        path = self.path(table)
        try:
            rows: list[Mapping[str, Any]] = DeltaTable(path, storage_options=self.storage_options) \
                .to_pyarrow_table().to_pylist()
        except TableNotFoundError:
            return None
        except DELTA_RS_FAILURES as exc:  # a store or table delta-rs cannot read: Spark reads it
            log.info("delta-rs cannot read %s (%s); reading the progress with Spark", path, exc)
            df = read_delta_or_none(self.spark, path)
            rows = [] if df is None else [r.asDict() for r in df.collect()]
        if not rows:
            return None
        r = max(rows, key=lambda row: int(row["last_seq"]))
        updated = r["updated_at"]
        if updated.tzinfo is None:  # pyspark hands back the process's local time
            updated = updated.astimezone(dt.UTC)
        return Progress(r["table"], r["topic"], int(r["last_seq"]),
                        None if r["bronze_version"] is None else int(r["bronze_version"]),
                        tuple(r["keys"]), r["run_id"], updated)

    def write(self, progress: Progress) -> None:
        """Replace the table's progress record."""
        from deltalake import write_deltalake

        path = self.path(progress.table)
        row = (progress.table, progress.topic, progress.last_seq, progress.bronze_version, list(progress.keys),
               progress.run_id, progress.updated_at)
        try:
            table = pa.Table.from_pylist([dict(zip(_ARROW.names, row, strict=True))], schema=_ARROW)
            write_deltalake(path, table, mode="overwrite", storage_options=self.storage_options)
            return
        except DELTA_RS_FAILURES as exc:  # a store or table delta-rs cannot write: Spark writes it
            log.info("delta-rs cannot write %s (%s); writing the progress with Spark", path, exc)
        self.spark.createDataFrame([row], _SCHEMA).write.format("delta").mode("overwrite").save(path)
