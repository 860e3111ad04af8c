"""The latest change per key, and the slow path that repairs it when it cannot be applied as is.

Fast path (`latest_per_key`): keep each key's highest-``seq`` event *before* parsing JSON: a
``max(seq)`` per raw bronze ``key`` text, semi-joined back on ``seq`` (unique per table), so
only the surviving envelopes are decoded. When the key is not the bronze key (declared
``keys:`` other than the primary key, or a key schema that changed inside the increment),
every event is decoded and deduplicated on the decoded key columns instead.

Slow path (`repair`), for the few keys whose latest event is bad (quarantined) or carries the
unavailable-value placeholder: all their events in the increment are decoded; bad ones are
set aside for quarantine; the latest good event wins; a placeholder takes the latest earlier
real value of that column *since the key's last delete*; with no such value and no delete in
the increment, the column stays flagged and the MERGE keeps the silver table's value; after a
delete in the increment there is nothing to keep, so it becomes null.
"""

from __future__ import annotations

from collections.abc import Sequence

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as sf

from silver.decode import KEY, KIND, NEWKEY, OLDKEY, OP, REASON, SEQ, UNAVAILABLE, DecodePlan
from silver.sql import column

__all__ = ["event_rows", "from_old_key", "latest_per_key", "repair"]


def event_rows(bronze: DataFrame, plan: DecodePlan, *, after_truncate: int | None) -> DataFrame:
    """Bronze rows that are row changes (no truncates, no messages), after the last truncate."""
    op = sf.col("op")
    events = bronze.where(op.isNull() | ~op.isin("t", "m"))
    if after_truncate is not None:
        events = events.where(sf.col("seq") > after_truncate)
    if not plan.keys_are_primary_key:  # tombstones carry only the primary key
        events = events.where(sf.col("value").isNotNull())
    return events


def _key_cols(plan: DecodePlan) -> list[str]:
    return [c.silver for c in plan.key_columns]


def _any_null(names: Sequence[str]) -> Column:
    out = sf.lit(False)
    for n in names:
        out = out | column(n).isNull()
    return out


def latest_per_key(events: DataFrame, plan: DecodePlan) -> DataFrame:
    """The decoded latest event of every key (events whose key is unknown pass through)."""
    if plan.raw_key_dedupe:
        # a tombstone follows its delete: prefer the delete (it carries the commit time)
        keyed = events.where(sf.col("key").isNotNull())
        real = sf.max(sf.when(sf.col("op").isNotNull(), sf.col("seq")))  # op is null only on tombstones
        winners = keyed.groupBy("key").agg(sf.coalesce(real, sf.max("seq")).alias("seq")).select("seq")
        survivors = keyed.join(winners, "seq", "left_semi").unionByName(events.where(sf.col("key").isNull()))
        return plan.decode(survivors)
    decoded = plan.decode(events)
    keys = _key_cols(plan)
    known = decoded.where(~_any_null(keys))
    winners = known.groupBy(*[column(k) for k in keys]).agg(sf.max(SEQ).alias(SEQ)).select(SEQ)
    return known.join(winners, SEQ, "left_semi").unionByName(decoded.where(_any_null(keys)))


def needs_repair() -> Column:
    """Rows of `latest_per_key` output that the slow path must redo."""
    return sf.col(REASON).isNotNull() | ((sf.col(KIND) == "u") & (sf.size(sf.col(UNAVAILABLE)) > 0))


def repair(events: DataFrame, latest: DataFrame, plan: DecodePlan,
           target: DataFrame | None = None) -> tuple[DataFrame, DataFrame]:
    """Redo the keys that `needs_repair` (see module doc).

    A placeholder in the first event of a key that moved (primary-key change, header
    ``__debezium.oldkey``) takes the old key's value: from the increment, else from ``target``
    (the silver table before this apply).

    Returns:
        (the full latest-per-key frame with those keys repaired, their bad events).
    """
    affected = latest.where(needs_repair())
    if plan.raw_key_dedupe:
        keys = [KEY]
        wanted = affected.select(sf.col(KEY).alias("key")).unionByName(
            affected.where(sf.col(OLDKEY).isNotNull()).select(sf.col(OLDKEY).alias("key")))
        all_events = plan.decode(events.join(wanted, "key", "left_semi"))
    else:
        keys = _key_cols(plan)
        all_events = plan.decode(events).join(affected.select(*keys), keys, "left_semi")
    affected_keys = affected.where(~_any_null(keys)).select(*keys)
    bad = all_events.where(sf.col(REASON).isNotNull())
    good = all_events.where(sf.col(REASON).isNull())
    fixed = _resolve_placeholders(good, plan, keys).join(affected_keys, keys, "left_semi")
    if plan.raw_key_dedupe:
        fixed = from_old_key(fixed, good, plan, target)
    untouched = latest.join(affected_keys, keys, "left_anti")
    return untouched.unionByName(fixed.select(*[column(c) for c in latest.columns])), bad


def from_old_key(fixed: DataFrame, good: DataFrame, plan: DecodePlan, target: DataFrame | None) -> DataFrame:
    """Placeholders of a moved key's event take the old key's last value (increment, else silver)."""
    types = {c.silver: c.target_type for c in plan.columns if c.can_be_unavailable}
    names = list(types)
    if not names:
        return fixed
    run = Window.partitionBy(KEY).orderBy(SEQ).rowsBetween(Window.unboundedPreceding, Window.currentRow)
    # a delete that moved the key (header newkey) and its tombstone do not end the old key's history
    ends = (sf.col(KIND) == "d") & sf.col(NEWKEY).isNull() & sf.col(OP).isNotNull()
    old = good.withColumn("__oseg", sf.sum(sf.when(ends, 1).otherwise(0)).over(run))
    seg = Window.partitionBy(KEY, "__oseg").orderBy(SEQ).rowsBetween(Window.unboundedPreceding, Window.currentRow)
    for n in names:
        real = (sf.col(KIND) == "u") & ~sf.array_contains(sf.col(UNAVAILABLE), n)
        old = old.withColumn(f"__o_{n}", sf.last(sf.when(real, sf.struct(column(n).alias("v"))),
                                                 ignorenulls=True).over(seg))
    old = old.select(sf.col(KEY).alias("__ok"), sf.col(SEQ).alias("__oseq"), *[f"__o_{n}" for n in names])
    moved = fixed.join(old, (sf.col(OLDKEY) == sf.col("__ok")) & (sf.col("__oseq") < sf.col(SEQ)), "left")
    pick = Window.partitionBy(KEY, SEQ).orderBy(sf.col("__oseq").desc_nulls_last())
    moved = moved.withColumn("__rk", sf.row_number().over(pick)).where(sf.col("__rk") == 1)
    in_target = set() if target is None else set(target.columns)  # new columns are not there yet
    if target is not None:
        key_names = [c.silver for c in plan.key_columns]
        tgt = target.select(*[column(k).alias(f"__tk_{k}") for k in key_names],
                            *[column(n).alias(f"__t_{n}") for n in names if n in in_target])
        parsed = [c.alias(f"__tk_{k}") for c, k in zip(plan.keys_from_text(sf.col(OLDKEY)), key_names, strict=True)]
        moved = moved.select("*", *parsed).join(tgt, [f"__tk_{k}" for k in key_names], "left")
    still = []
    for n in names:
        flagged = sf.array_contains(sf.col(UNAVAILABLE), n) & sf.col(OLDKEY).isNotNull()
        silver_value = column(f"__t_{n}") if n in in_target else sf.lit(None).cast(types[n])
        found = sf.coalesce(column(f"__o_{n}")["v"], silver_value)
        moved = moved.withColumn(n, sf.when(flagged, found).otherwise(column(n)))
        still.append(sf.when(sf.array_contains(sf.col(UNAVAILABLE), n) & (~flagged | found.isNull()), sf.lit(n)))
    return moved.withColumn(UNAVAILABLE, sf.filter(sf.array(*still), lambda x: x.isNotNull()))


def _resolve_placeholders(good: DataFrame, plan: DecodePlan, keys: list[str]) -> DataFrame:
    by_key = Window.partitionBy(*keys).orderBy(SEQ)
    running = by_key.rowsBetween(Window.unboundedPreceding, Window.currentRow)
    df = good.withColumn("__seg", sf.sum(sf.when(sf.col(KIND) == "d", 1).otherwise(0)).over(running))
    segment = Window.partitionBy(*keys, "__seg").orderBy(SEQ).rowsBetween(Window.unboundedPreceding,
                                                                         Window.currentRow)
    toastable = [c.silver for c in plan.columns if c.can_be_unavailable]
    for name in toastable:
        real = (sf.col(KIND) == "u") & ~sf.array_contains(sf.col(UNAVAILABLE), name)
        df = df.withColumn(f"__prev_{name}", sf.last(sf.when(real, sf.struct(column(name).alias("v"))),
                                                     ignorenulls=True).over(segment))
    df = df.withColumn("__rn", sf.row_number().over(Window.partitionBy(*keys).orderBy(sf.col(SEQ).desc())))
    latest = df.where(sf.col("__rn") == 1)
    flagged = {n: sf.array_contains(sf.col(UNAVAILABLE), n) for n in toastable}
    if not toastable:
        return latest
    still = [sf.when(flagged[n] & column(f"__prev_{n}").isNull() & (sf.col("__seg") == 0), sf.lit(n))
             for n in toastable]
    for n in toastable:
        latest = latest.withColumn(n, sf.when(flagged[n], column(f"__prev_{n}")["v"]).otherwise(column(n)))
    return latest.withColumn(UNAVAILABLE, sf.filter(sf.array(*still), lambda x: x.isNotNull()))
