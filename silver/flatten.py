"""Bronze change events as flat, silver-typed rows: the change feed a declarative pipeline's
AUTO CDC flow applies (``cdc-lakehouse bundle pipelines``).

`flatten` keeps the row changes of a bronze table (no truncates, messages or tombstones),
decodes them with `silver.decode.DecodePlan` (the same decoding the silver runner applies)
and keeps the events that can be applied, as one row per event:

* the silver columns, named and typed as in silver (unavailable-value placeholders become
  null; their names are in ``__cdc_unavailable``);
* ``__cdc_seq`` (the bronze ``seq``: the order to apply), ``__cdc_op`` (c/u/r/d),
  ``__cdc_kind`` (``u`` upsert, ``d`` delete), ``__cdc_ts`` (source commit time) and
  ``__cdc_unavailable``.

Events the silver runner would quarantine (a bad value, a null key...) are left out. With
``truncates``, a source truncate is one more row: ``__cdc_op`` ``t``, ``__cdc_kind`` ``t``, its
``seq`` and commit time, every silver column null (for Lakeflow's ``apply_as_truncates``).
Works on batch and streaming DataFrames (projections, filters and a union only).
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as sf
from pyspark.sql.types import ArrayType, LongType, StringType

from silver.decode import KIND, OP, REASON, SEQ, TS, UNAVAILABLE, DecodePlan
from silver.feed_columns import FEED_COLUMNS

__all__ = ["flatten"]

assert FEED_COLUMNS == (SEQ, OP, KIND, TS, UNAVAILABLE)


def flatten(bronze: DataFrame, plan: DecodePlan, *, truncates: bool = False) -> DataFrame:
    """The applicable row changes of ``bronze`` as flat silver-typed rows; with ``truncates``
    its truncates too (see module doc)."""
    op = sf.col("op")
    events = bronze.where((op.isNull() | ~op.isin("t", "m")) & sf.col("value").isNotNull())
    decoded = plan.decode(events).where(sf.col(REASON).isNull())
    feed = decoded.select(*[sf.col(f"`{c.silver}`") for c in plan.columns], *[sf.col(n) for n in FEED_COLUMNS])
    if not truncates:
        return feed
    ts_ms = sf.get_json_object(sf.col("value"), "$.source.ts_ms").cast(LongType())
    cut = bronze.where(op == "t").select(
        *[sf.lit(None).cast(c.target_type).alias(c.silver) for c in plan.columns],
        sf.col("seq").alias(SEQ), sf.lit("t").alias(OP), sf.lit("t").alias(KIND),
        sf.timestamp_millis(ts_ms).alias(TS), sf.array().cast(ArrayType(StringType())).alias(UNAVAILABLE))
    return feed.unionByName(cut)
