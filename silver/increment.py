"""The apply function both drivers share: one bronze increment into one silver table.

`apply_increment` takes the increment as a DataFrame of bronze rows (the incremental runner
reads a ``seq`` range; the Structured Streaming driver passes its micro-batch) and:

1. scans it (schema ids, truncates) and plans decoding from the schema history;
2. checks the key columns and plans schema evolution, raising *before* any write;
3. keeps the latest event per key, decodes it and stages the result (`silver.staging`); with soft
   deletes a deleted key's last upsert too, folded into the delete (it holds the row's last
   values); then repairs keys whose latest event is bad or carries unchanged-TOAST
   placeholders (slow path);
4. checks the table's expectations on the upserts (`silver.gate`: warn, quarantine rows, or
   stop before any write);
5. quarantines bad events, evolves the silver schema, applies the last truncate and MERGEs
   (soft deletes: MERGEs, then flags what the first truncate removed; rows a truncate of the
   same increment removed are merged as deletes at that truncate, see `silver.changes.truncated`).

SCD2 tables take the same steps 1-2 and then `silver.scd2`. Every step is idempotent, so a
run killed anywhere and re-run converges to the same table.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from pyspark.sql import DataFrame
from pyspark.sql import functions as sf
from pyspark.sql.types import DecimalType, StringType, StructField

from silver.apply import OP_COL, SEQ_COL, TS_COL, MergeSpec, merge_sql, metadata_fields, truncate_sql
from silver.cast_types import parse_cast_type
from silver.changes import (
    event_rows,
    fold_deletes,
    latest_per_key,
    repair,
    repair_events,
    truncated,
    unknown_delete_values,
)
from silver.context import ApplyContext, ApplyResult, ChangeCounts, count_changes, stage, view_name
from silver.declarations import SilverTable
from silver.decode import KIND, OP, REASON, SEQ, TS, UNAVAILABLE, DecodePlan
from silver.errors import KeyResolutionError, SilverTableError
from silver.evolution import EvolutionPlan, apply_evolution, cast_to, plan_evolution
from silver.gate import gate_increment
from silver.quarantine import quarantine, quarantine_disabled
from silver.renames import current_names, follow_renames
from silver.resnapshot import find_resnapshot, resnapshot_sql
from silver.scan import IncrementScan, ScanGroup, scan_increment
from silver.scd2 import apply_scd2
from silver.schema_history import TopicSchema
from silver.sql import column
from silver.staging import staging
from silver.target import SilverTarget
from silver.types import Placeholder, TypeOptions

__all__ = ["ApplyContext", "ApplyResult", "apply_increment"]


def apply_increment(
    ctx: ApplyContext,
    decl: SilverTable,
    target: SilverTarget,
    bronze: DataFrame,
    *,
    expected_keys: tuple[str, ...] | None = None,
    scanned: Sequence[ScanGroup] | None = None,
) -> ApplyResult:
    """Apply one bronze increment to one silver table (see module doc); ``scanned``: the increment's
    scan groups when the caller has them (`silver.scan.groups_of`), else a Spark aggregate takes them."""
    with staging(ctx.spark, f"{ctx.state_location}/staging/{decl.table}") as staged:
        return _apply(replace(ctx, staging=staged), decl, target, bronze, expected_keys, scanned)


def _apply(
    ctx: ApplyContext,
    decl: SilverTable,
    target: SilverTarget,
    bronze: DataFrame,
    expected_keys: tuple[str, ...] | None,
    scanned: Sequence[ScanGroup] | None,
) -> ApplyResult:
    scan = scan_increment(bronze, scanned)
    result = ApplyResult(events=scan.rows, truncates=len(scan.truncates), max_seq=scan.max_seq)
    if scan.rows == 0:
        return result
    history = ctx.schemas(decl.source, scan.schema_ids)
    plan = _decode_plan(ctx, decl, scan, history)
    result.keys = tuple(c.silver for c in plan.key_columns)
    if expected_keys is not None and tuple(expected_keys) != result.keys:
        raise KeyResolutionError(
            f"silver table {decl.table!r} was built with keys {list(expected_keys)} but the source now has "
            f"{list(result.keys)}; rebuild it (drop the table and its progress) or declare 'keys:'",
            table=decl.table,
        )
    existing = target.read(ctx.spark)
    if existing is not None:
        renamed = follow_renames(ctx.spark, decl, target, history, existing.columns)
        if renamed:
            result.schema_changes += renamed
            existing = target.read(ctx.spark)
    batch_fields = [StructField(c.silver, c.target_type) for c in plan.columns]
    evo = (
        None
        if existing is None
        else plan_evolution(decl.table, decl.schema_evolution, existing.schema, batch_fields, metadata_fields(decl))
    )
    if scan.snapshot_rows and scan.min_seq is not None and scan.max_seq is not None:
        # also on creation: a rebuild holds every snapshot; no snapshot row, no snapshot ends here
        result.resnapshot = find_resnapshot(ctx.spark, ctx.bronze, decl.source, bronze, scan.min_seq, scan.max_seq)
    if decl.history == "scd2":
        apply_scd2(ctx, decl, target, bronze, plan, scan, evo, existing is not None, result)
        _settle_resnapshot(ctx, decl, target, result)
        return result
    final, bad_extra, counts = _latest_changes(ctx, decl, bronze, plan, scan, existing)
    result.upserts, result.deletes, result.quarantined = counts.upserts, counts.deletes, counts.bad
    if decl.expectations:  # before any write: a failing gate leaves everything as it was
        staying = None if scan.truncates else existing  # a truncate in the increment removes every older row
        final, result.quality = gate_increment(ctx, decl, final, plan, existing=staying, seq_from=scan.min_seq,
                                               seq_to=scan.max_seq)
        gated = len(result.quality.quarantine_reasons())
        result.upserts, result.quarantined = result.upserts - gated, result.quarantined + gated
    _quarantine(ctx, decl, final, bad_extra, result)
    good = final.where(sf.col(REASON).isNull())
    soft = decl.deletes == "soft"
    if soft:
        good = truncated(good, scan.truncates)
    if existing is None:
        _create(ctx, decl, target, good, plan)
        _settle_resnapshot(ctx, decl, target, result)
        return result
    assert evo is not None
    result.schema_changes += apply_evolution(ctx.spark, target, evo, existing.schema)
    last = scan.last_truncate
    if last is not None and not soft:
        ctx.spark.sql(truncate_sql(target.sql_ref(), decl, last.seq, last.ts_ms)).collect()
    _merge(ctx, decl, target, good, plan, evo)
    if soft and scan.truncates:  # after the MERGE: rows it flagged at a truncate keep their values
        first = scan.truncates[0]
        ctx.spark.sql(truncate_sql(target.sql_ref(), decl, first.seq, first.ts_ms)).collect()
    _settle_resnapshot(ctx, decl, target, result)
    return result


def _settle_resnapshot(ctx: ApplyContext, decl: SilverTable, target: SilverTarget, result: ApplyResult) -> None:
    """After the MERGE: rows the completed re-snapshot did not hold go (see `silver.resnapshot`)."""
    if result.resnapshot is not None:
        ctx.spark.sql(resnapshot_sql(target.sql_ref(), decl, result.resnapshot)).collect()


def _decode_plan(ctx: ApplyContext, decl: SilverTable, scan: IncrementScan, history: list[TopicSchema]) -> DecodePlan:
    versions = [v for v in history if v.schema_id in scan.schema_ids] or history[-1:]
    vsd = parse_cast_type(ctx.options.variable_scale_decimal)
    opts = TypeOptions(vsd) if isinstance(vsd, (DecimalType, StringType)) else TypeOptions()
    return DecodePlan.build(
        decl, versions, placeholder=Placeholder(ctx.options.unavailable_value_placeholder), type_options=opts,
        renamed=current_names(history),
    )


def _latest_changes(
    ctx: ApplyContext,
    decl: SilverTable,
    bronze: DataFrame,
    plan: DecodePlan,
    scan: IncrementScan,
    existing: DataFrame | None,
) -> tuple[DataFrame, DataFrame | None, ChangeCounts]:
    last, soft = scan.last_truncate, decl.deletes == "soft"
    # soft deletes keep the rows a truncate removed: events before it are applied too
    events = event_rows(bronze, plan, after_truncate=None if last is None or soft else last.seq)
    latest = latest_per_key(events, plan, soft=soft)
    staged = stage(ctx, unknown_delete_values(latest) if soft else latest, "latest")
    counts = count_changes(staged, tombstones=soft)
    if soft and (counts.deletes > counts.tombstones or counts.bad):  # a deleted key kept its last upsert too
        staged = stage(ctx, fold_deletes(staged, events, plan), "folded")
        counts = count_changes(staged)
    if counts.bad == 0 and counts.unavailable == 0:
        return staged, None, counts
    decoded = stage(ctx, repair_events(events, staged, plan), "affected")
    fixed, bad = repair(decoded, events, staged, plan, existing, soft=soft)
    repaired = stage(ctx, fixed, "repaired")
    return repaired, bad, count_changes(repaired)


def _quarantine(
    ctx: ApplyContext, decl: SilverTable, final: DataFrame, extra: DataFrame | None, result: ApplyResult
) -> None:
    bad = final.where(sf.col(REASON).isNotNull())
    if extra is not None:
        result.quarantined += extra.count()
        bad = bad.unionByName(extra)
    if result.quarantined == 0:
        return
    if not ctx.options.quarantine.enabled:
        raise quarantine_disabled(decl.table, result.quarantined, bad)
    quarantine(ctx.spark, ctx.quarantine_location, table=decl.table, topic=decl.source, run_id=ctx.run_id, bad=bad)


def _silver_rows(decl: SilverTable, good: DataFrame, plan: DecodePlan) -> DataFrame:
    """The first run's rows: upserts; with soft deletes also deletes (flagged; tombstones alone are not rows)."""
    cols = [column(c.silver) for c in plan.columns]
    meta = [sf.col(SEQ).alias(SEQ_COL), sf.col(OP).alias(OP_COL), sf.col(TS).alias(TS_COL)]
    if decl.deletes != "soft":
        return good.where(sf.col(KIND) == "u").select(*cols, *meta)
    deleted = sf.col(KIND) == "d"
    meta += [deleted.alias(decl.soft_delete.flag), sf.when(deleted, sf.col(TS)).alias(decl.soft_delete.timestamp)]
    return good.where(sf.col(OP).isNotNull()).select(*cols, *meta)


def _create(ctx: ApplyContext, decl: SilverTable, target: SilverTarget, good: DataFrame, plan: DecodePlan) -> None:
    names = {c.silver for c in plan.columns}
    missing = [c for c in (*target.partition_by, *target.cluster_by) if c not in names]
    if missing:
        raise SilverTableError(
            f"silver table {decl.table!r}: partition/cluster column(s) {missing} are not columns of {decl.source}",
            table=decl.table,
        )
    target.create(ctx.spark, _silver_rows(decl, good, plan))


def _merge(
    ctx: ApplyContext, decl: SilverTable, target: SilverTarget, good: DataFrame, plan: DecodePlan, evo: EvolutionPlan
) -> None:
    casts = dict(evo.cast_batch)
    keys = [c.silver for c in plan.key_columns]
    data = [c for c in plan.columns if not c.is_key and c.silver not in evo.drop_from_batch]
    cols = [cast_to(good, c, casts) for c in [*keys, *(c.silver for c in data)]]
    source = good.select(*cols, SEQ, KIND, OP, TS, UNAVAILABLE)
    view = view_name("src", decl.table, ctx.run_id)
    source.createOrReplaceTempView(view)
    spec = MergeSpec(
        target.sql_ref(),
        view,
        keys,
        [c.silver for c in data],
        [c.silver for c in data if c.can_be_unavailable],
        evo.absent,
        decl,
    )
    try:
        ctx.spark.sql(merge_sql(spec)).collect()
    finally:
        ctx.spark.catalog.dropTempView(view)
