"""The quality gate of an increment: check, record, then warn, quarantine or stop.

`gate_increment` runs after the increment is decoded and deduplicated and before anything is
written to silver or the quarantine table:

* every expectation's outcome is appended to the results table (`silver.quality_results`);
* a failed ``fail`` expectation raises `QualityGateError` naming it and its failing rows: the
  increment is not applied, progress does not move, and the next pass checks it again;
* a failed ``warn`` expectation is logged;
* rows that broke a ``quarantine`` expectation get the expectation's name as their reason, so
  the apply sends them to the quarantine table with the undecodable events and merges the
  rest; such a key keeps its silver row as it was.

`gate_increment` gates an SCD1 increment; `run_gate` and `mark_reasons` are the steps it shares
with the SCD2 gate (`silver.gate_scd2`).
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Mapping

from pyspark.sql import DataFrame
from pyspark.sql import functions as sf
from pyspark.sql.types import LongType, StringType, StructField, StructType

from silver.apply import OP_COL, SEQ_COL, TS_COL
from silver.context import ApplyContext, stage
from silver.declarations import SilverTable
from silver.decode import KIND, OP, REASON, SEQ, TS, DecodePlan
from silver.expectations import Action
from silver.quality import GateReport, QualityGateError, check_increment, failure_message
from silver.quality_results import quality_location, record_results
from silver.quality_unique import repeats_of_silver
from silver.sql import column

__all__ = ["gate_increment", "mark_reasons", "run_gate"]

log = logging.getLogger(__name__)

_MARK_SEQ, _MARK_REASON = "__cdc_gate_seq", "__cdc_gate_reason"


def gate_increment(ctx: ApplyContext, decl: SilverTable, final: DataFrame, plan: DecodePlan, *,
                   existing: DataFrame | None, seq_from: int | None,
                   seq_to: int | None) -> tuple[DataFrame, GateReport]:
    """Check ``decl.expectations`` on the upserts of ``final`` (see module doc); ``unique`` also
    against the rows of ``existing`` (silver before the increment; None: none stay) that stay.

    Returns:
        ``final`` with the quarantined rows' reason set (staged again when any), and the report.

    Raises:
        QualityGateError: a ``fail`` expectation failed (its outcome is recorded first).
    """
    upserts = final.where(sf.col(REASON).isNull() & (sf.col(KIND) == "u")).select(
        *[column(c.silver) for c in plan.columns],
        sf.col(SEQ).alias(SEQ_COL), sf.col(OP).alias(OP_COL), sf.col(TS).alias(TS_COL))
    keys = [c.silver for c in plan.key_columns]
    changed = final.where(sf.col(REASON).isNull()).select(*[column(k) for k in keys])
    repeats = repeats_of_silver(decl, upserts, changed, existing, keys, SEQ_COL)
    report = run_gate(ctx, decl, upserts, repeats=repeats, seq_from=seq_from, seq_to=seq_to)
    reasons = report.quarantine_reasons()
    if not reasons:
        return final, report
    return stage(ctx, mark_reasons(ctx, final, reasons), "gated"), report


def run_gate(ctx: ApplyContext, decl: SilverTable, upserts: DataFrame, *, repeats: Mapping[str, frozenset[int]],
             seq_from: int | None, seq_to: int | None, unique_scope: str | None = None) -> GateReport:
    """Check ``upserts`` (see `check_increment`), record the outcomes, stop on a failed ``fail``
    expectation and log the failed ``warn`` ones.

    Raises:
        QualityGateError: a ``fail`` expectation failed (its outcome is recorded first).
    """
    now = dt.datetime.now(dt.UTC)
    report = check_increment(decl, upserts, now=now, repeats=repeats, unique_scope=unique_scope)
    record_results(ctx.spark, quality_location(ctx.state_location), report, run_id=ctx.run_id,
                   seq_from=seq_from, seq_to=seq_to, checked_at=now)
    stops = report.failed(Action.FAIL)
    if stops:
        found = "; ".join(failure_message(o) for o in stops)
        raise QualityGateError(
            f"silver table {decl.table!r}: {found} (of {report.rows_checked} upserted row(s)); the increment "
            f"(seq {seq_from}..{seq_to}) was not applied and its progress did not move", table=decl.table)
    for outcome in report.failed(Action.WARN):
        log.warning("silver table %s: %s (of %d upserted row(s)); applied anyway", decl.table,
                    failure_message(outcome), report.rows_checked)
    return report


def mark_reasons(ctx: ApplyContext, events: DataFrame, reasons: Mapping[int, str]) -> DataFrame:
    """``events`` (decoded, by bronze ``seq``) with the reason of each quarantined ``seq`` set."""
    schema = StructType([StructField(_MARK_SEQ, LongType(), False), StructField(_MARK_REASON, StringType(), False)])
    marks = ctx.spark.createDataFrame(sorted(reasons.items()), schema)
    return (events.join(sf.broadcast(marks), events[SEQ] == marks[_MARK_SEQ], "left")
            .withColumn(REASON, sf.coalesce(sf.col(REASON), sf.col(_MARK_REASON)))
            .drop(_MARK_SEQ, _MARK_REASON))
