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

Soft deletes (`deletes: soft`) keep the deleted row, so a delete needs the row's last values.
`latest_per_key` (``soft``) also keeps, for a key whose latest event is a delete, the key's
last upsert (``c``/``u``/``r``, a second ``max(seq)`` per key), decoded in the same pass.
`fold_deletes` (over the staged rows) gives the delete each column's value from that upsert,
else from the delete's ``before`` image when the image is a full row (REPLICA IDENTITY FULL,
MySQL), else lists it in ``__cdc_unavailable`` so that the MERGE keeps the silver value (null
for a new row); a null list means nothing is known (a tombstone; a key-only image and no
upsert) and the MERGE keeps the whole silver row. A delete whose
upsert is bad or holds placeholders that the image does not fill goes to `repair`, which
takes the values of the key's last good upsert with its placeholders resolved as above.
`truncated` turns upserts that a later truncate of the same increment removed into deletes
at that truncate (soft mode keeps those rows, flagged).
"""

from __future__ import annotations

from collections.abc import Sequence

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as sf
from pyspark.sql.types import StructField, StructType

from silver.decode import KEY, KIND, NEWKEY, OLDKEY, OP, REASON, SEQ, TS, UNAVAILABLE, DecodePlan
from silver.name_lists import names_where
from silver.scan import Truncate
from silver.sql import column

__all__ = [
    "before_image",
    "event_rows",
    "fold_deletes",
    "from_old_key",
    "latest_per_key",
    "needs_repair",
    "repair",
    "repair_events",
    "truncated",
    "unknown_delete_values",
]

_UPSERT_OPS = ("c", "u", "r")


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


def latest_per_key(events: DataFrame, plan: DecodePlan, *, soft: bool = False) -> DataFrame:
    """The decoded latest event of every key (events whose key is unknown pass through).

    With ``soft``, a key whose latest event is a delete also keeps its last upsert, for
    `fold_deletes` (which leaves one row per key).
    """
    if plan.raw_key_dedupe:
        # a tombstone follows its delete: prefer the delete (it carries the commit time)
        keyed = events.where(sf.col("key").isNotNull())
        real = sf.max(sf.when(sf.col("op").isNotNull(), sf.col("seq")))  # op is null only on tombstones
        if not soft:
            winners = keyed.groupBy("key").agg(sf.coalesce(real, sf.max("seq")).alias("seq")).select("seq")
        else:
            upsert = sf.max(sf.when(sf.col("op").isin(*_UPSERT_OPS), sf.col("seq")))
            winners = _and_last_upsert(
                keyed.groupBy("key").agg(sf.coalesce(real, sf.max("seq")).alias("seq"), upsert.alias("__useq")), "seq"
            )
        survivors = keyed.join(winners, "seq", "left_semi").unionByName(events.where(sf.col("key").isNull()))
        return plan.decode(survivors)
    decoded = plan.decode(events)
    keys = _key_cols(plan)
    known = decoded.where(~_any_null(keys))
    by_key = known.groupBy(*[column(k) for k in keys])
    if not soft:
        winners = by_key.agg(sf.max(SEQ).alias(SEQ)).select(SEQ)
    else:
        upsert = sf.max(sf.when(sf.col(OP).isin(*_UPSERT_OPS), sf.col(SEQ)))
        winners = _and_last_upsert(by_key.agg(sf.max(SEQ).alias(SEQ), upsert.alias("__useq")), SEQ)
    return known.join(winners, SEQ, "left_semi").unionByName(decoded.where(_any_null(keys)))


def _and_last_upsert(winners: DataFrame, seq: str) -> DataFrame:
    """The ``seq`` of each key's latest event, and of its last upsert (``__useq``) when that came before.

    A union of two selections (the aggregate runs twice): on Sail this decodes faster
    afterwards than one ``explode``.
    """
    earlier = winners.where(sf.col("__useq") < sf.col(seq)).select(sf.col("__useq").alias(seq))
    return winners.select(seq).unionByName(earlier)


def _real_delete() -> Column:
    """A delete event (not a tombstone: those carry neither values nor a commit time)."""
    return (sf.col(KIND) == "d") & sf.col(OP).isNotNull()


def needs_repair() -> Column:
    """Rows the slow path must redo: bad ones, and ones with columns still unavailable.

    Those are upserts with placeholders and (soft deletes) deletes whose values are not all
    known; a null list (nothing known, nothing to look for) does not count.
    """
    return sf.col(REASON).isNotNull() | sf.coalesce(sf.size(sf.col(UNAVAILABLE)) > 0, sf.lit(False))


def unknown_delete_values(latest: DataFrame) -> DataFrame:
    """Soft deletes: mark every delete's values unknown (``__cdc_unavailable`` null) until `fold_deletes`."""
    return latest.withColumn(UNAVAILABLE, sf.when(sf.col(KIND) != "d", sf.col(UNAVAILABLE)))


def fold_deletes(latest: DataFrame, events: DataFrame, plan: DecodePlan) -> DataFrame:
    """Soft deletes: one row per key again, a delete holding the row's last values (see module doc).

    ``latest`` is `latest_per_key` (soft) output, staged (after `unknown_delete_values`), so the
    joins below read the staged rows, not the decoding (joins: windows are slow on Sail).
    """
    keys = [KEY] if plan.raw_key_dedupe else _key_cols(plan)
    data = _data_columns(plan)
    # a key's upsert row is its last upsert kept for the delete when the key also has a delete row
    key_cols = [column(k) for k in keys]
    helpers = latest.where(sf.col(KIND) == "u").join(
        latest.where(sf.col(KIND) == "d").select(*key_cols), keys, "left_semi"
    )
    nothing = sf.array(*[sf.lit(n) for n in data]) if data else sf.array().cast("array<string>")
    upsert = sf.struct(
        *[column(n).alias(f"v{i}") for i, n in enumerate(data)],
        sf.when(sf.col(REASON).isNull(), sf.col(UNAVAILABLE)).otherwise(nothing).alias("u"),
    )
    folded = (
        latest.join(helpers.select(SEQ), SEQ, "left_anti")
        .join(helpers.select(*key_cols, upsert.alias("__up")), keys, "left")
        .withColumn("__up", sf.when(_real_delete(), sf.col("__up")))
    )
    delete_seqs = latest.where(_real_delete()).select(sf.col(SEQ).alias("seq"))
    before = before_image(events.where(sf.col("op") == "d").join(delete_seqs, "seq", "left_semi"), plan)
    return _last_values(folded, before, plan).select(*[column(c) for c in latest.columns])


def _repair_keys(latest: DataFrame, plan: DecodePlan) -> tuple[DataFrame, list[str], DataFrame | None]:
    """The rows to redo, the key columns, and (raw bronze keys) the bronze keys whose events they need."""
    affected = latest.where(needs_repair())
    if not plan.raw_key_dedupe:
        return affected, _key_cols(plan), None
    wanted = affected.select(sf.col(KEY).alias("key")).unionByName(
        affected.where(sf.col(OLDKEY).isNotNull()).select(sf.col(OLDKEY).alias("key"))
    )
    return affected, [KEY], wanted


def repair_events(events: DataFrame, latest: DataFrame, plan: DecodePlan) -> DataFrame:
    """The decoded events `repair` needs: every event of the keys to redo (and of keys they moved from).

    Stage the result before `repair`: filtering decoded rows on their computed columns makes
    the engine recompute the decoding per use, which is slow for more than a few keys.
    """
    affected, keys, wanted = _repair_keys(latest, plan)
    if wanted is not None:
        return plan.decode(events.join(wanted, "key", "left_semi"))
    return plan.decode(events).join(affected.select(*keys), keys, "left_semi")


def repair(
    all_events: DataFrame,
    events: DataFrame,
    latest: DataFrame,
    plan: DecodePlan,
    target: DataFrame | None = None,
    *,
    soft: bool = False,
) -> tuple[DataFrame, DataFrame]:
    """Redo the keys that `needs_repair` (see module doc).

    ``all_events`` is `repair_events` (staged); ``events`` the bronze rows (for delete images).
    A placeholder in the first event of a key that moved (primary-key change, header
    ``__debezium.oldkey``) takes the old key's value: from the increment, else from ``target``
    (the silver table before this apply). With ``soft``, a key whose latest event is a delete
    gets the row's last values: from its last good upsert (placeholders resolved), else as in
    `fold_deletes`.

    Returns:
        (the full latest-per-key frame with those keys repaired, their bad events).
    """
    affected, keys, wanted = _repair_keys(latest, plan)
    affected_keys = affected.where(~_any_null(keys)).select(*keys)
    bad = all_events.where(sf.col(REASON).isNotNull())
    good = all_events.where(sf.col(REASON).isNull())
    resolved = _resolve_placeholders(good, plan, keys)
    if soft:  # every upsert resolved (a moved key's too): the last one gives a delete its values
        if plan.raw_key_dedupe and not all_events.where(sf.col(OLDKEY).isNotNull()).isEmpty():
            resolved = from_old_key(resolved, good, plan, target)  # reads silver: only when a key moved
        resolved = _with_last_upsert(resolved, plan, keys)
    fixed = resolved.where(sf.col("__rn") == 1).join(affected_keys, keys, "left_semi")
    if soft:
        deletes = events.where(sf.col("op") == "d")
        if wanted is not None:
            deletes = deletes.join(wanted, "key", "left_semi")
        fixed = _last_values(fixed, before_image(deletes, plan), plan)
    elif plan.raw_key_dedupe:
        fixed = from_old_key(fixed, good, plan, target)
    untouched = latest.join(affected_keys, keys, "left_anti")
    return untouched.unionByName(fixed.select(*[column(c) for c in latest.columns])), bad


def _data_columns(plan: DecodePlan) -> list[str]:
    return [c.silver for c in plan.columns if not c.is_key]


def _with_last_upsert(resolved: DataFrame, plan: DecodePlan, keys: list[str]) -> DataFrame:
    """``__up``: the key's last upsert up to this event (its values ``v0``... and ``u``, its unavailable list)."""
    running = (
        Window.partitionBy(*[column(k) for k in keys])
        .orderBy(SEQ)
        .rowsBetween(Window.unboundedPreceding, Window.currentRow)
    )
    row = sf.struct(
        *[column(n).alias(f"v{i}") for i, n in enumerate(_data_columns(plan))], sf.col(UNAVAILABLE).alias("u")
    )
    return resolved.withColumn("__up", sf.last(sf.when(sf.col(KIND) == "u", row), ignorenulls=True).over(running))


def _last_values(fixed: DataFrame, before: DataFrame, plan: DecodePlan) -> DataFrame:
    """Soft deletes: a key's latest delete takes the row's last values (see module doc).

    ``fixed`` has ``__up`` (`_with_last_upsert`); ``before`` is `before_image` of the deletes.
    """
    joined = fixed.join(before, SEQ, "left")
    up_row, bf_row, is_delete = sf.col("__up"), sf.col("__bf"), _real_delete()
    values: dict[str, Column] = {}
    unknown = []
    for i, n in enumerate(_data_columns(plan)):
        from_up = up_row.isNotNull() & ~sf.coalesce(sf.array_contains(up_row["u"], n), sf.lit(False))
        from_before = bf_row.isNotNull() & ~sf.coalesce(sf.array_contains(bf_row["u"], n), sf.lit(False))
        value = sf.when(from_up, up_row[f"v{i}"]).when(from_before, bf_row[f"v{i}"])
        values[n] = sf.when(is_delete, value).otherwise(column(n))
        unknown.append((n, ~from_up & ~from_before))
    listed = names_where(unknown)
    known = up_row.isNotNull() | bf_row.isNotNull()
    # null: nothing is known (a tombstone, a key-only image and no upsert): the MERGE keeps every silver value
    values[UNAVAILABLE] = (
        sf.when(is_delete & known, listed).when(sf.col(KIND) == "d", sf.lit(None)).otherwise(sf.col(UNAVAILABLE))
    )
    return joined.select(*[values[c].alias(c) if c in values else column(c) for c in fixed.columns])


def before_image(deletes: DataFrame, plan: DecodePlan) -> DataFrame:
    """The decoded ``before`` image of delete events (bronze rows): ``__cdc_seq`` and ``__bf``.

    ``__bf`` holds ``v0``, ``v1``... (the non-key columns, in plan order) and ``u``, the columns
    whose value is not known (the unavailable-value placeholder, or a value that does not
    decode). It is null unless the image is a full row, i.e. some non-key column is not null
    (REPLICA IDENTITY FULL, MySQL): a key-only image (REPLICA IDENTITY DEFAULT) tells nothing.
    """
    data = [c for c in plan.columns if not c.is_key]
    row = StructType([StructField(c.source, c.raw_type) for c in data])
    env = sf.from_json(sf.col("value"), StructType([StructField("before", row)]))
    parsed = deletes.select(sf.col("seq").alias(SEQ), sf.col("schema_id").alias("__b_sid"), env["before"].alias("__bf"))
    raws = parsed.select(SEQ, "__b_sid", *[sf.col("__bf")[c.source].alias(f"__r{i}") for i, c in enumerate(data)])
    sid, raw = sf.col("__b_sid"), [sf.col(f"__r{i}") for i in range(len(data))]
    decoded = raws.select(SEQ, "__b_sid", *raw, *[c.decoded(raw[i], sid).alias(f"__d{i}") for i, c in enumerate(data)])
    values, unknown = [], []
    full: Column = sf.lit(False)
    for i, c in enumerate(data):
        final = c.final(sf.col(f"__d{i}"))
        bad = c.mismatch(raw[i], sf.col(f"__d{i}"), final, sid)
        placeholder = c.unavailable(raw[i], sid, plan.placeholder)
        not_known = bad if placeholder is None else bad | placeholder
        values.append(sf.when(~not_known, final).alias(f"v{i}"))
        unknown.append((c.silver, not_known))
        full = full | raw[i].isNotNull()
    listed = names_where(unknown)
    return decoded.select(SEQ, sf.when(full, sf.struct(*values, listed.alias("u"))).alias("__bf"))


def truncated(changes: DataFrame, truncates: Sequence[Truncate]) -> DataFrame:
    """Soft deletes: upserts a later truncate of the increment removed become deletes at that truncate.

    Such a row keeps its values; ``__cdc_seq``/``__cdc_ts`` become those of the first truncate
    after it and ``__cdc_op`` becomes ``t``.
    """
    if not truncates:
        return changes
    seq = sf.col(SEQ)
    t_seq: Column = sf.lit(None).cast("bigint")
    t_ts: Column = sf.lit(None).cast("timestamp")
    for t in reversed(truncates):
        ts = sf.lit(None).cast("timestamp") if t.ts_ms is None else sf.timestamp_millis(sf.lit(t.ts_ms).cast("bigint"))
        t_seq = sf.when(seq < t.seq, sf.lit(t.seq).cast("bigint")).otherwise(t_seq)
        t_ts = sf.when(seq < t.seq, ts).otherwise(t_ts)
    hit = (sf.col(KIND) == "u") & (seq < truncates[-1].seq)
    new = {
        SEQ: sf.when(hit, t_seq).otherwise(seq),
        TS: sf.when(hit, t_ts).otherwise(sf.col(TS)),
        OP: sf.when(hit, sf.lit("t")).otherwise(sf.col(OP)),
        KIND: sf.when(hit, sf.lit("d")).otherwise(sf.col(KIND)),
    }
    return changes.select(*[new[c].alias(c) if c in new else column(c) for c in changes.columns])


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
        old = old.withColumn(
            f"__o_{n}", sf.last(sf.when(real, sf.struct(column(n).alias("v"))), ignorenulls=True).over(seg)
        )
    old = old.select(sf.col(KEY).alias("__ok"), sf.col(SEQ).alias("__oseq"), *[f"__o_{n}" for n in names])
    moved = fixed.join(old, (sf.col(OLDKEY) == sf.col("__ok")) & (sf.col("__oseq") < sf.col(SEQ)), "left")
    pick = Window.partitionBy(KEY, SEQ).orderBy(sf.col("__oseq").desc_nulls_last())
    moved = moved.withColumn("__rk", sf.row_number().over(pick)).where(sf.col("__rk") == 1)
    in_target = set() if target is None else set(target.columns)  # new columns are not there yet
    if target is not None:
        key_names = [c.silver for c in plan.key_columns]
        tgt = target.select(
            *[column(k).alias(f"__tk_{k}") for k in key_names],
            *[column(n).alias(f"__t_{n}") for n in names if n in in_target],
        )
        parsed = [c.alias(f"__tk_{k}") for c, k in zip(plan.keys_from_text(sf.col(OLDKEY)), key_names, strict=True)]
        moved = moved.select("*", *parsed).join(tgt, [f"__tk_{k}" for k in key_names], "left")
    still = []
    for n in names:
        flagged = sf.array_contains(sf.col(UNAVAILABLE), n) & sf.col(OLDKEY).isNotNull()
        silver_value = column(f"__t_{n}") if n in in_target else sf.lit(None).cast(types[n])
        found = sf.coalesce(column(f"__o_{n}")["v"], silver_value)
        moved = moved.withColumn(n, sf.when(flagged, found).otherwise(column(n)))
        still.append((n, sf.array_contains(sf.col(UNAVAILABLE), n) & (~flagged | found.isNull())))
    return moved.withColumn(UNAVAILABLE, names_where(still))


def _resolve_placeholders(good: DataFrame, plan: DecodePlan, keys: list[str]) -> DataFrame:
    """Every good event, its placeholders resolved (see module doc); ``__rn`` 1 marks the key's latest.

    The latest is the highest-``seq`` event that is not a tombstone (a tombstone never hides
    the delete before it), or the tombstone when the key has nothing else.
    """
    by_key = Window.partitionBy(*keys).orderBy(SEQ)
    running = by_key.rowsBetween(Window.unboundedPreceding, Window.currentRow)
    df = good.withColumn("__seg", sf.sum(sf.when(sf.col(KIND) == "d", 1).otherwise(0)).over(running))
    segment = Window.partitionBy(*keys, "__seg").orderBy(SEQ).rowsBetween(Window.unboundedPreceding, Window.currentRow)
    toastable = [c.silver for c in plan.columns if c.can_be_unavailable]
    for name in toastable:
        real = (sf.col(KIND) == "u") & ~sf.array_contains(sf.col(UNAVAILABLE), name)
        df = df.withColumn(
            f"__prev_{name}", sf.last(sf.when(real, sf.struct(column(name).alias("v"))), ignorenulls=True).over(segment)
        )
    latest_first = Window.partitionBy(*keys).orderBy(sf.col(OP).isNull().asc(), sf.col(SEQ).desc())
    df = df.withColumn("__rn", sf.row_number().over(latest_first))
    if not toastable:
        return df
    flagged = {n: sf.array_contains(sf.col(UNAVAILABLE), n) for n in toastable}
    still = [(n, flagged[n] & column(f"__prev_{n}").isNull() & (sf.col("__seg") == 0)) for n in toastable]
    for n in toastable:
        df = df.withColumn(n, sf.when(flagged[n], column(f"__prev_{n}")["v"]).otherwise(column(n)))
    return df.withColumn(UNAVAILABLE, names_where(still))
