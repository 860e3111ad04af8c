"""Small Delta helpers shared by the silver modules (existence checks, engine-neutral)."""

from __future__ import annotations

from deltalake.exceptions import DeltaError
from pyspark.sql import DataFrame, SparkSession

__all__ = ["DELTA_RS_FAILURES", "is_missing_table_error", "read_delta_or_none"]

DELTA_RS_FAILURES = (DeltaError, OSError, ValueError)
"""What delta-rs raises when it cannot reach a store or read or write a table (pyarrow's
``ArrowInvalid`` is a ``ValueError``): callers then go through the engine instead."""

_MISSING = ("not found", "no commit files", "does not exist", "doesn't exist", "not a delta table",
            "path_not_found", "delta_table_not_found", "delta_missing", "no such file",
            "table_or_view_not_found", "is not a delta table", "invalid table location")


def is_missing_table_error(exc: BaseException) -> bool:
    """True if an engine error means "there is no Delta table at this location"."""
    text = str(exc).lower()
    return any(marker in text for marker in _MISSING)


def read_delta_or_none(spark: SparkSession, location: str) -> DataFrame | None:
    """The Delta table at ``location`` with its schema resolved, or None if there is none.

    Raises:
        Exception: engine errors other than "missing table" (permissions, corrupt log...).
    """
    try:
        df = spark.read.format("delta").load(location)
        df.schema  # noqa: B018 - forces the engine to resolve the table now
        return df
    except Exception as exc:
        if is_missing_table_error(exc):
            return None
        raise
