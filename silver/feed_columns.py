"""The names the flattened change feed (`silver.flatten`) adds after the silver columns, and
the SQL conditions on them; Spark-free, for the code that only writes declarative sources."""

from __future__ import annotations

__all__ = ["DELETE_CONDITION", "FEED_COLUMNS", "TRUNCATE_CONDITION"]

FEED_COLUMNS = ("__cdc_seq", "__cdc_op", "__cdc_kind", "__cdc_ts", "__cdc_unavailable")
"""The bronze ``seq`` (the order to apply), the op (c/u/r/d, t), the kind (``u`` upsert, ``d``
delete, ``t`` truncate), the source commit time and the columns that held the
unavailable-value placeholder (the same names as `silver.decode`'s)."""

DELETE_CONDITION = "__cdc_kind = 'd'"
"""A delete event (AUTO CDC's ``apply_as_deletes``)."""

TRUNCATE_CONDITION = "__cdc_op = 't'"
"""A truncate event (Lakeflow's ``apply_as_truncates``)."""
