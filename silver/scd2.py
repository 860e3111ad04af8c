"""SCD2 apply: one silver row per version of a key.

Every upsert event (``c``/``u``/``r``) opens a version: ``valid_from`` = its source commit time,
``_cdc_seq`` = its bronze ``seq``. A version ends at the next event of the same key or at the
next truncate, whichever comes first (by ``seq``): ``valid_to`` = that event's commit time,
``end_seq`` = its ``seq``, ``is_current`` false, and ``deleted`` true when it was a delete or a
truncate. A key's open version in silver is closed by the key's first event in the increment;
a truncate closes every version still open before it.

Late or replayed events cannot resurrect a deleted row or reopen a closed version: events at
or below a key's high-water mark in silver (the largest ``_cdc_seq``/``end_seq`` it has) are
dropped, versions are inserted only if ``(key, _cdc_seq)`` is new, and a version is closed
only by an event with a higher ``seq``. So re-running an increment changes nothing.
Unchanged-TOAST placeholders take the previous version's value (from the increment, or from
silver's current version when the key had no delete or truncate before it in the increment).

A table's expectations are checked on the versions the increment opens before anything is
written (`silver.gate_scd2`); a quarantined version is left out of the increment.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as sf

from silver.apply import OP_COL, SEQ_COL, TS_COL
from silver.changes import from_old_key
from silver.context import ApplyContext, ApplyResult, count_changes, stage, view_name
from silver.declarations import SilverTable
from silver.decode import KIND, OP, REASON, SEQ, TS, UNAVAILABLE, DecodePlan
from silver.evolution import EvolutionPlan, apply_evolution, cast_to
from silver.gate_scd2 import gate_versions
from silver.name_lists import names_where
from silver.quarantine import quarantine, quarantine_disabled
from silver.scan import IncrementScan, Truncate
from silver.sql import column, qualified, quote
from silver.target import SilverTarget

__all__ = ["apply_scd2", "scd2_merge_sql"]

_ACTION, _END, _END_TS, _DELETED = "__cdc_action", "__cdc_end", "__cdc_end_ts", "__cdc_deleted"


def apply_scd2(ctx: ApplyContext, decl: SilverTable, target: SilverTarget, bronze: DataFrame, plan: DecodePlan,
               scan: IncrementScan, evo: EvolutionPlan | None, exists: bool, result: ApplyResult) -> None:
    """Apply an increment to an SCD2 table (see module doc); fills ``result``."""
    events = bronze.where(sf.col("value").isNotNull() & ~sf.col("op").isin("t", "m"))
    staged = stage(ctx, plan.decode(events), "events")
    counts = count_changes(staged)
    result.upserts, result.deletes, result.quarantined = counts.upserts, counts.deletes, counts.bad
    keys = [c.silver for c in plan.key_columns]
    good = staged.where(sf.col(REASON).isNull())
    current = target.read(ctx.spark) if exists else None
    if current is not None:
        good = _after_high_water(good, current, keys, decl)
    if counts.unavailable:
        good = stage(ctx, _fill_placeholders(good, current, plan, keys, scan, decl), "filled")
    bad = staged.where(sf.col(REASON).isNotNull())
    if decl.expectations:  # before any write: a failing gate leaves everything as it was
        good, result.quality = gate_versions(ctx, decl, good, plan, truncates=scan.truncates, current=current,
                                             seq_from=scan.min_seq, seq_to=scan.max_seq)
        gated = len(result.quality.quarantine_reasons())
        if gated:  # set aside before the versions are planned: as if those changes never arrived
            bad = bad.unionByName(good.where(sf.col(REASON).isNotNull()))
            good = good.where(sf.col(REASON).isNull())
            result.upserts, result.quarantined = result.upserts - gated, result.quarantined + gated
    if result.quarantined and not ctx.options.quarantine.enabled:  # before any write, as on SCD1
        raise quarantine_disabled(decl.table, result.quarantined, bad)
    if result.quarantined:
        quarantine(ctx.spark, ctx.quarantine_location, table=decl.table, topic=decl.source, run_id=ctx.run_id,
                   bad=bad)
    versions = _versions(good, keys, scan.truncates)
    if current is None:
        target.create(ctx.spark, _version_rows(decl, versions.where(sf.col(KIND) == "u"), plan))
        return
    assert evo is not None
    result.schema_changes += apply_evolution(ctx.spark, target, evo, current.schema)
    _merge(ctx, decl, target, versions, plan, keys, scan, evo)
    first = scan.truncates[0] if scan.truncates else None
    if first is not None:
        ctx.spark.sql(_truncate_sql(target.sql_ref(), decl, first)).collect()


def _after_high_water(good: DataFrame, current: DataFrame, keys: list[str], decl: SilverTable) -> DataFrame:
    mark = sf.greatest(column(SEQ_COL), sf.coalesce(column(decl.scd2.end_seq), sf.lit(0)))
    hw = (current.join(good.select(*keys).distinct(), keys, "left_semi")
          .groupBy(*[column(k) for k in keys]).agg(sf.max(mark).alias("__cdc_hw")))
    joined = good.join(hw, keys, "left")
    return joined.where(sf.col("__cdc_hw").isNull() | (sf.col(SEQ) > sf.col("__cdc_hw"))).drop("__cdc_hw")


def _next_truncate(seq: Column, truncates: tuple[Truncate, ...], ts: bool) -> Column:
    out: Column = sf.lit(None).cast("timestamp" if ts else "bigint")
    for t in reversed(truncates):
        value = (sf.timestamp_millis(sf.lit(t.ts_ms)) if t.ts_ms is not None else sf.lit(None).cast("timestamp")) \
            if ts else sf.lit(t.seq)
        out = sf.when(seq < t.seq, value).otherwise(out)
    return out


def _versions(good: DataFrame, keys: list[str], truncates: tuple[Truncate, ...]) -> DataFrame:
    """Each event with where its version ends (next event of the key or next truncate)."""
    w = Window.partitionBy(*[column(k) for k in keys]).orderBy(SEQ)
    nxt_seq, nxt_ts, nxt_kind = (sf.lead(SEQ).over(w), sf.lead(TS).over(w), sf.lead(KIND).over(w))
    t_seq, t_ts = _next_truncate(sf.col(SEQ), truncates, False), _next_truncate(sf.col(SEQ), truncates, True)
    by_event = nxt_seq.isNotNull() & (t_seq.isNull() | (nxt_seq < t_seq))
    return good.select(
        "*",
        sf.when(by_event, nxt_seq).otherwise(t_seq).alias(_END),
        sf.when(by_event, nxt_ts).otherwise(t_ts).alias(_END_TS),
        sf.when(by_event, nxt_kind == "d").otherwise(t_seq.isNotNull()).alias(_DELETED),
        sf.row_number().over(w).alias("__cdc_rank"))


def _version_rows(decl: SilverTable, versions: DataFrame, plan: DecodePlan) -> DataFrame:
    s = decl.scd2
    closed = sf.col(_END).isNotNull()
    return versions.select(
        *[column(c.silver) for c in plan.columns],
        sf.col(SEQ).alias(SEQ_COL), sf.col(OP).alias(OP_COL), sf.col(TS).alias(TS_COL),
        sf.col(TS).alias(s.valid_from), sf.when(closed, sf.col(_END_TS)).alias(s.valid_to),
        (~closed).alias(s.current), sf.coalesce(sf.col(_DELETED), sf.lit(False)).alias(s.deleted),
        sf.col(_END).alias(s.end_seq))


def _truncates_before(seq: Column, truncates: tuple[Truncate, ...]) -> Column:
    out: Column = sf.lit(0)
    for t in truncates:
        out = out + sf.when(seq > t.seq, sf.lit(1)).otherwise(sf.lit(0))
    return out


def _fill_placeholders(good: DataFrame, current: DataFrame | None, plan: DecodePlan, keys: list[str],
                       scan: IncrementScan, decl: SilverTable) -> DataFrame:
    """Placeholders take the previous version's value (see module doc)."""
    names = [c.silver for c in plan.columns if c.can_be_unavailable]
    key_cols = [column(k) for k in keys]
    running = Window.partitionBy(*key_cols).orderBy(SEQ).rowsBetween(Window.unboundedPreceding, Window.currentRow)
    df = good.withColumn("__seg", sf.sum(sf.when(sf.col(KIND) == "d", 1).otherwise(0)).over(running))
    df = df.withColumn("__tseg", _truncates_before(sf.col(SEQ), scan.truncates))
    segment = Window.partitionBy(*key_cols, "__seg", "__tseg").orderBy(SEQ).rowsBetween(
        Window.unboundedPreceding, Window.currentRow)
    if current is not None:
        cur = current.where(column(decl.scd2.current)).select(
            *key_cols, *[column(n).alias(f"__cur_{n}") for n in names])
        df = df.join(cur, keys, "left")
    no_reset = (sf.col("__seg") == 0) & (sf.col("__tseg") == 0)
    types = {c.silver: c.target_type for c in plan.columns}
    still = []
    for n in names:
        flagged = sf.array_contains(sf.col(UNAVAILABLE), n)
        real = (sf.col(KIND) == "u") & ~flagged
        prev = sf.last(sf.when(real, sf.struct(column(n).alias("v"))), ignorenulls=True).over(segment)
        fallback = sf.when(no_reset, column(f"__cur_{n}")) if current is not None else sf.lit(None).cast(types[n])
        found = sf.coalesce(prev["v"], fallback)
        still.append((n, flagged & found.isNull()))
        df = df.withColumn(n, sf.when(flagged, found).otherwise(column(n)))
    df = df.withColumn(UNAVAILABLE, names_where(still))
    df = df.select(*[column(c) for c in good.columns])
    if plan.raw_key_dedupe:  # a key that moved (primary-key change) continues the old key's history
        versions = None if current is None else current.where(column(decl.scd2.current))
        df = from_old_key(df, good, plan, versions).select(*[column(c) for c in good.columns])
    return df.withColumn(UNAVAILABLE, sf.array().cast("array<string>"))


def scd2_merge_sql(target: str, source: str, keys: list[str], insert_cols: list[str], decl: SilverTable) -> str:
    """Close open versions and insert new ones in one MERGE (see module doc)."""
    s = decl.scd2
    on = " AND ".join(f"{qualified('t', k)} = {qualified('s', k)}" for k in keys)
    close = (f"(s.{quote(_ACTION)} = 'close' AND {qualified('t', s.current)} "
             f"AND {qualified('t', SEQ_COL)} < s.{quote(SEQ_COL)})")
    insert = f"(s.{quote(_ACTION)} = 'insert' AND {qualified('t', SEQ_COL)} = s.{quote(SEQ_COL)})"
    sets = [f"{qualified('t', s.valid_to)} = s.{quote(s.valid_from)}", f"{qualified('t', s.current)} = false",
            f"{qualified('t', s.deleted)} = s.{quote(_DELETED)}", f"{qualified('t', s.end_seq)} = s.{quote(SEQ_COL)}"]
    cols = ", ".join(quote(c) for c in insert_cols)
    vals = ", ".join(qualified("s", c) for c in insert_cols)
    return (f"MERGE INTO {target} AS t USING {source} AS s ON {on} AND ({close} OR {insert})\n"
            f"WHEN MATCHED AND s.{quote(_ACTION)} = 'close' THEN UPDATE SET {', '.join(sets)}\n"
            f"WHEN NOT MATCHED AND s.{quote(_ACTION)} = 'insert' THEN INSERT ({cols}) VALUES ({vals})")


def _merge(ctx: ApplyContext, decl: SilverTable, target: SilverTarget, versions: DataFrame, plan: DecodePlan,
           keys: list[str], scan: IncrementScan, evo: EvolutionPlan) -> None:
    rows = _version_rows(decl, versions.where(sf.col(KIND) == "u"), plan)
    casts = dict(evo.cast_batch)
    insert_cols = [c for c in rows.columns if c not in evo.drop_from_batch]
    inserts = rows.select(*[cast_to(rows, c, casts) for c in insert_cols],
                          sf.lit(False).alias(_DELETED), sf.lit("insert").alias(_ACTION))
    first_t = scan.truncates[0].seq if scan.truncates else None
    firsts = versions.where(sf.col("__cdc_rank") == 1)
    if first_t is not None:
        firsts = firsts.where(sf.col(SEQ) < first_t)
    closes = firsts.select(*[column(k) for k in keys], sf.col(SEQ).alias(SEQ_COL),
                           sf.col(TS).alias(decl.scd2.valid_from), (sf.col(KIND) == "d").alias(_DELETED),
                           sf.lit("close").alias(_ACTION))
    source = inserts.unionByName(closes, allowMissingColumns=True)
    view = view_name("scd2", decl.table, ctx.run_id)
    source.createOrReplaceTempView(view)
    try:
        ctx.spark.sql(scd2_merge_sql(target.sql_ref(), view, keys, insert_cols, decl)).collect()
    finally:
        ctx.spark.catalog.dropTempView(view)


def _truncate_sql(target: str, decl: SilverTable, first: Truncate) -> str:
    s = decl.scd2
    ts = "CAST(NULL AS TIMESTAMP)" if first.ts_ms is None else f"timestamp_millis({int(first.ts_ms)})"
    return (f"UPDATE {target} SET {quote(s.valid_to)} = {ts}, {quote(s.current)} = false, "
            f"{quote(s.deleted)} = true, {quote(s.end_seq)} = {int(first.seq)} "
            f"WHERE {quote(s.current)} AND {quote(SEQ_COL)} < {int(first.seq)}")
