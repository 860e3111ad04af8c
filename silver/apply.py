"""SCD1 apply: the MERGE and truncate statements, built from declarations with one quoting helper.

Every silver row carries ``_cdc_seq`` (bronze ``seq`` of its last change), ``_cdc_op`` and
``_cdc_ts`` (source commit time). Statements are guarded by ``_cdc_seq`` so that re-applying
an increment after a crash changes nothing:

* upsert: ``WHEN MATCHED AND t._cdc_seq < s.seq THEN UPDATE``, ``WHEN NOT MATCHED THEN INSERT``;
  a column flagged unavailable (unchanged TOAST) keeps ``t.col``;
* delete (``d`` or tombstone): ``DELETE`` (hard), or (soft) set the flag and time and write the
  row's last values the batch carries (`silver.changes` finds them): a column listed in
  ``__cdc_unavailable`` keeps ``t.col``, a null list keeps every column; a delete of a key
  silver does not have is inserted flagged (tombstones alone are not);
* truncate at ``seq`` T: remove (hard) or flag (soft) every row with ``_cdc_seq < T``, i.e.
  every row whose last change came before the truncate.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from pyspark.sql.types import BooleanType, LongType, StringType, StructField, TimestampType

from silver.declarations import METADATA_PREFIX, SilverTable
from silver.decode import KIND, OP, SEQ, TS, UNAVAILABLE
from silver.sql import qualified, quote, string_literal

__all__ = ["MergeSpec", "merge_sql", "metadata_fields", "truncate_sql"]

SEQ_COL = f"{METADATA_PREFIX}seq"
OP_COL = f"{METADATA_PREFIX}op"
TS_COL = f"{METADATA_PREFIX}ts"


def metadata_fields(decl: SilverTable) -> list[StructField]:
    """The bookkeeping columns a declaration's silver table has."""
    fields = [StructField(SEQ_COL, LongType()), StructField(OP_COL, StringType()), StructField(TS_COL, TimestampType())]
    if decl.history == "scd2":
        s = decl.scd2
        fields += [
            StructField(s.valid_from, TimestampType()),
            StructField(s.valid_to, TimestampType()),
            StructField(s.current, BooleanType()),
            StructField(s.deleted, BooleanType()),
            StructField(s.end_seq, LongType()),
        ]
    elif decl.deletes == "soft":
        fields += [
            StructField(decl.soft_delete.flag, BooleanType()),
            StructField(decl.soft_delete.timestamp, TimestampType()),
        ]
    return fields


@dataclass(frozen=True)
class MergeSpec:
    """What one SCD1 MERGE writes.

    Attributes:
        target: the SQL reference of the silver table.
        source: the temp view with the latest change per key.
        keys: silver key columns.
        columns: silver data columns the batch carries (keys excluded).
        toastable: columns that may be flagged unavailable in this batch.
        absent: silver data columns the batch lacks (dropped at the source): set null on update.
        decl: the declaration (delete mode, column names).
    """

    target: str
    source: str
    keys: Sequence[str]
    columns: Sequence[str]
    toastable: Sequence[str]
    absent: Sequence[str]
    decl: SilverTable


def _value(spec: MergeSpec, name: str) -> str:
    if name in spec.toastable:
        return (
            f"CASE WHEN array_contains(s.{quote(UNAVAILABLE)}, {string_literal(name)}) "
            f"THEN {qualified('t', name)} ELSE {qualified('s', name)} END"
        )
    return qualified("s", name)


def _meta_sets(op: str) -> list[str]:
    return [
        f"{qualified('t', SEQ_COL)} = s.{quote(SEQ)}",
        f"{qualified('t', OP_COL)} = {op}",
        f"{qualified('t', TS_COL)} = s.{quote(TS)}",
    ]


def _kept_unless_known(name: str) -> str:
    """A soft delete's value of a batch column: ``s.col`` unless listed unknown (then ``t.col``)."""
    unknown = f"s.{quote(UNAVAILABLE)} IS NULL OR array_contains(s.{quote(UNAVAILABLE)}, {string_literal(name)})"
    return f"CASE WHEN {unknown} THEN {qualified('t', name)} ELSE {qualified('s', name)} END"


def _soft_delete_sets(spec: MergeSpec) -> list[str]:
    flag, when = spec.decl.soft_delete.flag, spec.decl.soft_delete.timestamp
    ts = f"s.{quote(TS)}"
    sets = [f"{qualified('t', flag)} = true", f"{qualified('t', when)} = coalesce({ts}, {qualified('t', when)})"]
    sets += [f"{qualified('t', c)} = {_kept_unless_known(c)}" for c in spec.columns]
    sets += [
        f"{qualified('t', c)} = CASE WHEN s.{quote(UNAVAILABLE)} IS NULL THEN {qualified('t', c)} END"
        for c in spec.absent
    ]
    # a tombstone (no op, no commit time) after its delete keeps the delete's op and times
    return [
        *sets,
        f"{qualified('t', SEQ_COL)} = s.{quote(SEQ)}",
        f"{qualified('t', OP_COL)} = coalesce(s.{quote(OP)}, 'd')",
        f"{qualified('t', TS_COL)} = coalesce({ts}, {qualified('t', TS_COL)})",
    ]


def merge_sql(spec: MergeSpec) -> str:
    """The MERGE statement applying one batch of latest-per-key changes (see module doc)."""
    on = " AND ".join(f"{qualified('t', k)} = {qualified('s', k)}" for k in spec.keys)
    newer = f"{qualified('t', SEQ_COL)} < s.{quote(SEQ)}"
    is_delete, is_upsert = f"s.{quote(KIND)} = 'd'", f"s.{quote(KIND)} = 'u'"
    soft = spec.decl.deletes == "soft"
    sets = [f"{qualified('t', c)} = {_value(spec, c)}" for c in spec.columns]
    sets += [f"{qualified('t', c)} = NULL" for c in spec.absent]
    sets += _meta_sets(f"s.{quote(OP)}")
    insert_cols = [*spec.keys, *spec.columns, SEQ_COL, OP_COL, TS_COL]
    insert_vals = [qualified("s", c) for c in [*spec.keys, *spec.columns]]
    insert_vals += [f"s.{quote(SEQ)}", f"s.{quote(OP)}", f"s.{quote(TS)}"]
    insert_when = is_upsert
    if soft:
        flag, when = spec.decl.soft_delete.flag, spec.decl.soft_delete.timestamp
        sets += [f"{qualified('t', flag)} = false", f"{qualified('t', when)} = NULL"]
        insert_cols += [flag, when]
        # a delete of a key silver does not have: the row existed and is kept, flagged
        insert_vals += [is_delete, f"CASE WHEN {is_delete} THEN s.{quote(TS)} END"]
        insert_when = f"({is_upsert} OR s.{quote(OP)} IS NOT NULL)"
        on_delete = "UPDATE SET " + ", ".join(_soft_delete_sets(spec))
    else:
        on_delete = "DELETE"
    return (
        f"MERGE INTO {spec.target} AS t USING {spec.source} AS s ON {on}\n"
        f"WHEN MATCHED AND {is_delete} AND {newer} THEN {on_delete}\n"
        f"WHEN MATCHED AND {is_upsert} AND {newer} THEN UPDATE SET {', '.join(sets)}\n"
        f"WHEN NOT MATCHED AND {insert_when} THEN INSERT ({', '.join(quote(c) for c in insert_cols)}) "
        f"VALUES ({', '.join(insert_vals)})"
    )


def truncate_sql(target: str, decl: SilverTable, truncate_seq: int, truncate_ts_ms: int | None) -> str:
    """Remove (or soft-delete) every row whose last change came before a truncate at ``truncate_seq``."""
    older = f"{quote(SEQ_COL)} < {int(truncate_seq)}"
    if decl.deletes != "soft":
        return f"DELETE FROM {target} WHERE {older}"
    ts = "CAST(NULL AS TIMESTAMP)" if truncate_ts_ms is None else f"timestamp_millis({int(truncate_ts_ms)})"
    flag, when = quote(decl.soft_delete.flag), quote(decl.soft_delete.timestamp)
    return (
        f"UPDATE {target} SET {flag} = true, {when} = {ts}, {quote(SEQ_COL)} = {int(truncate_seq)}, "
        f"{quote(OP_COL)} = 't', {quote(TS_COL)} = {ts} WHERE {older} AND NOT coalesce({flag}, false)"
    )
