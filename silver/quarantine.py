"""The quarantine table: bronze events silver could not apply, with the reason.

One Delta table (default ``<root>/silver/_quarantine``) for every silver table. Rows are keyed
by ``(silver_table, seq)`` and inserted with a MERGE, so re-running an increment after a crash
does not duplicate them. Quarantined events are not applied; the rest of the batch is.
"""

from __future__ import annotations

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as sf

from silver.context import view_name
from silver.decode import KEY, OP, REASON, SEQ, VALUE
from silver.delta_io import read_delta_or_none
from silver.errors import SilverTableError
from silver.sql import quote_path_table

__all__ = ["QUARANTINE_COLUMNS", "quarantine", "quarantine_disabled"]

QUARANTINE_COLUMNS = ("silver_table", "topic", "seq", "key", "value", "op", "reason", "run_id", "quarantined_at")


def quarantine(spark: SparkSession, location: str, *, table: str, topic: str, run_id: str,
               bad: DataFrame) -> None:
    """Insert ``bad`` decoded events (``__cdc_reason`` set) into the quarantine table."""
    rows = bad.select(
        sf.lit(table).alias("silver_table"), sf.lit(topic).alias("topic"), sf.col(SEQ).alias("seq"),
        sf.col(KEY).alias("key"), sf.col(VALUE).alias("value"), sf.col(OP).alias("op"),
        sf.col(REASON).alias("reason"), sf.lit(run_id).alias("run_id"),
        sf.current_timestamp().alias("quarantined_at"))
    if read_delta_or_none(spark, location) is None:
        rows.write.format("delta").mode("append").save(location)
        return
    view = view_name("quarantine", table, run_id)
    rows.createOrReplaceTempView(view)
    try:
        spark.sql(f"MERGE INTO {quote_path_table(location)} AS q USING {view} AS s "
                  "ON q.silver_table = s.silver_table AND q.seq = s.seq WHEN NOT MATCHED THEN INSERT *").collect()
    finally:
        spark.catalog.dropTempView(view)


def quarantine_disabled(table: str, count: int, bad: DataFrame) -> SilverTableError:
    """The error that stops a table with ``count`` events to set aside while the quarantine is
    disabled; it names one of their reasons."""
    sample = bad.select(REASON).limit(1).collect()[0][REASON]
    return SilverTableError(
        f"silver table {table!r}: {count} event(s) cannot be applied (e.g. {sample}) and "
        "quarantine is disabled; enable silver_options.quarantine or fix the source",
        table=table,
    )
