"""The data-quality results table: one row per expectation and checked increment.

One Delta table (``<state>/quality``, state default ``<root>/silver/_cdc``) for every silver
table, appended to each time an increment is checked, whatever the outcome (a ``fail`` is
recorded before the table stops). ``cdc-lakehouse status`` shows each table's latest run
(`pipelines.quality_status`). A run that is repeated (after a crash, or a ``fail`` that is not
fixed yet) is recorded again under its own ``run_id``.
"""

from __future__ import annotations

import datetime as dt

from pyspark.sql import SparkSession
from pyspark.sql.types import (
    BooleanType,
    DoubleType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from silver.quality import GateReport
from silver.quality_table import quality_location

__all__ = ["RESULT_SCHEMA", "quality_location", "record_results"]

RESULT_SCHEMA = StructType([
    StructField("run_id", StringType(), True),
    StructField("silver_table", StringType(), True),
    StructField("expectation", StringType(), True),
    StructField("type", StringType(), True),
    StructField("action", StringType(), True),
    StructField("passed", BooleanType(), True),
    StructField("failing_rows", LongType(), True),
    StructField("observed", DoubleType(), True),
    StructField("rows_checked", LongType(), True),
    StructField("seq_from", LongType(), True),
    StructField("seq_to", LongType(), True),
    StructField("checked_at", TimestampType(), True),
])
"""Every column is nullable (Sail drops schema changes of tables with non-nullable columns).
``observed``: rows (``row_count``) or the newest value's age in seconds (``freshness``);
``seq_from``..``seq_to``: the increment's bronze ``seq`` range (as read, inclusive)."""


def record_results(spark: SparkSession, location: str, report: GateReport, *, run_id: str,
                   seq_from: int | None, seq_to: int | None, checked_at: dt.datetime) -> None:
    """Append one row per expectation of ``report``."""
    rows = [(run_id, report.table, o.expectation.label, o.expectation.type.value, o.expectation.action.value,
             o.passed, o.failing_rows, o.observed, report.rows_checked, seq_from, seq_to, checked_at)
            for o in report.outcomes]
    if rows:
        spark.createDataFrame(rows, RESULT_SCHEMA).write.format("delta").mode("append").save(location)
