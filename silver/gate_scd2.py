"""The quality gate of an SCD2 increment: every version it would open is checked.

An SCD2 increment opens one version per upsert event (`silver.scd2`), so the rows checked are
those versions, not only the latest change per key: the decoded upserts that pass the key's
high-water mark, with unchanged-TOAST placeholders already filled (the values the versions
would hold), by silver column names with ``_cdc_seq``, ``_cdc_op`` and ``_cdc_ts``. Deletes
open no version and are not checked.

``unique`` judges the versions that are current once the increment is applied: per key, its
last event in the increment when that is an upsert and no truncate follows it. Earlier
versions of a key in the increment are history (an update that keeps the value does not
repeat it), and so are versions a later delete or truncate closes. They are compared with
each other and with silver's open versions of the keys the increment does not change.

The actions are those of SCD1 (`silver.gate`). A quarantined version is removed from the
increment before its versions are planned, so the key's history is as if that change never
arrived: the version open before it stays open, and the key's next change closes that one.
"""

from __future__ import annotations

from functools import reduce

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as sf

from silver.apply import OP_COL, SEQ_COL, TS_COL
from silver.context import ApplyContext, stage
from silver.declarations import SilverTable
from silver.decode import KIND, OP, SEQ, TS, DecodePlan
from silver.gate import mark_reasons, run_gate
from silver.quality import GateReport
from silver.quality_unique import repeats_of_silver
from silver.scan import Truncate
from silver.sql import column

__all__ = ["gate_versions"]

_OPEN = "__cdc_gate_open"


def gate_versions(ctx: ApplyContext, decl: SilverTable, good: DataFrame, plan: DecodePlan, *,
                  truncates: tuple[Truncate, ...], current: DataFrame | None, seq_from: int | None,
                  seq_to: int | None) -> tuple[DataFrame, GateReport]:
    """Check ``decl.expectations`` on the versions ``good`` would open (see module doc).

    Args:
        good: the increment's decoded events that will be applied (reason null, past the
            high-water mark, placeholders filled).
        current: silver's rows before the increment (every version); None when it has none.

    Returns:
        ``good`` with the quarantined versions' reason set (staged again when any), and the report.

    Raises:
        QualityGateError: a ``fail`` expectation failed (its outcome is recorded first).
    """
    keys = [c.silver for c in plan.key_columns]
    last = Window.partitionBy(*[column(k) for k in keys]).orderBy(sf.col(SEQ).desc())
    is_last = sf.row_number().over(last) == 1
    upserts = good.select("*", (is_last & _no_truncate_after(sf.col(SEQ), truncates)).alias(_OPEN)).where(
        sf.col(KIND) == "u").select(
        *[column(c.silver) for c in plan.columns],
        sf.col(SEQ).alias(SEQ_COL), sf.col(OP).alias(OP_COL), sf.col(TS).alias(TS_COL), sf.col(_OPEN))
    staying = None
    if current is not None and not truncates:  # a truncate closes every version open before it
        staying = current.where(column(decl.scd2.current))
    changed = good.select(*[column(k) for k in keys])
    repeats = repeats_of_silver(decl, upserts.where(sf.col(_OPEN)), changed, staying, keys, SEQ_COL)
    report = run_gate(ctx, decl, upserts, repeats=repeats, seq_from=seq_from, seq_to=seq_to, unique_scope=_OPEN)
    reasons = report.quarantine_reasons()
    if not reasons:
        return good, report
    return stage(ctx, mark_reasons(ctx, good, reasons), "gated"), report


def _no_truncate_after(seq: Column, truncates: tuple[Truncate, ...]) -> Column:
    return reduce(lambda a, b: a & b, [seq > sf.lit(t.seq) for t in truncates], sf.lit(True))
