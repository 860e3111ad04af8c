"""Data-quality gates: a silver table's expectations checked on an increment with Great Expectations.

`check_increment` runs before an increment is applied (`silver.increment`), on the rows it
would upsert (decoded, latest per key, bad events already set aside):

1. one Spark job projects those rows to what the expectations read: the columns they name,
   ``_cdc_seq`` (which row), each ``sql`` condition as a boolean and each ``freshness`` column
   as epoch seconds, and brings them to the driver as Arrow (``toArrow``, on both engines),
   then pandas;
2. Great Expectations 1.x validates that frame with its pandas data source: one suite, one
   call, asking for the complete result with ``_cdc_seq`` as the index column, so GE names
   the failing rows (those of ``quarantine`` expectations are set aside).

Why pandas and not GE's Spark data source: GE's Spark execution engine works on both engines
(a Spark Connect DataFrame is a ``pyspark.sql.DataFrame`` in PySpark 4), but it computes its
metrics in jobs of their own: ten expectations on a four-row frame took 20 to 41 Spark jobs
and 20 to 40 s on classic Spark here, which is not a gate one can put before every increment.
The pandas path costs one job whatever the number of expectations. It holds the projected
columns of the increment's upserts in driver memory: bound an increment with
``silver_options.max_bronze_rows_per_run`` when increments can be large.
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as sf
from pyspark.sql.types import DateType, DecimalType, StructType, TimestampNTZType, TimestampType

from silver.declarations import SilverTable
from silver.errors import SilverTableError
from silver.expectations import Action, Expectation, ExpectationType
from silver.sql import column

__all__ = ["ROW_ID", "ExpectationOutcome", "GateReport", "QualityGateError", "check_increment", "failure_message",
           "quality_notes"]

_LABEL = "silver_expectation"
_RESULT_FORMAT = {"result_format": "COMPLETE", "unexpected_index_column_names": ["_cdc_seq"],
                  "return_unexpected_index_query": False}
"""Counts and, for row-level types, the failing rows' ``_cdc_seq`` (in memory already: the pandas path)."""
ROW_ID = "_cdc_seq"
"""The column that names a row of the increment (its bronze ``seq``)."""


class QualityGateError(SilverTableError):
    """An expectation whose action is ``fail`` failed: the increment is not applied."""


@dataclass(frozen=True)
class ExpectationOutcome:
    """One expectation's result on one increment.

    Attributes:
        expectation: what was checked.
        passed: whether it held.
        failing_rows: rows that broke it (row-level types); None for ``row_count``/``freshness``.
        observed: what GE observed for ``row_count`` (rows) and ``freshness`` (the newest value's
            age in seconds); None for row-level types.
        failing_seqs: the failing rows' ``_cdc_seq`` (row-level types).
        repeating_silver: ``unique``: how many of the failing rows repeat a value a silver row
            outside the increment holds (`silver.quality_unique`).
    """

    expectation: Expectation
    passed: bool
    failing_rows: int | None = None
    observed: float | None = None
    failing_seqs: frozenset[int] = frozenset()
    repeating_silver: int = 0


@dataclass(frozen=True)
class GateReport:
    """Every expectation of a table on one increment."""

    table: str
    rows_checked: int
    outcomes: Sequence[ExpectationOutcome] = field(default_factory=list)

    def failed(self, action: Action) -> list[ExpectationOutcome]:
        """The expectations with this action that failed."""
        return [o for o in self.outcomes if not o.passed and o.expectation.action is action]

    def quarantine_reasons(self) -> dict[int, str]:
        """``_cdc_seq`` -> reason (the names of the quarantine expectations the row broke, comma-separated)."""
        reasons: dict[int, list[str]] = {}
        for outcome in self.failed(Action.QUARANTINE):
            for seq in outcome.failing_seqs:
                reasons.setdefault(seq, []).append(outcome.expectation.label)
        return {seq: ", ".join(names) for seq, names in reasons.items()}


def failure_message(outcome: ExpectationOutcome) -> str:
    """What a failed expectation found, in words: ``'age_range' (fail): 3 failing row(s)``."""
    e = outcome.expectation
    head = f"expectation {e.label!r} ({e.action.value})"
    if e.type is ExpectationType.ROW_COUNT:
        bounds = f"between {_num(e.min)} and {_num(e.max)}"
        return f"{head}: the increment upserts {_num(outcome.observed)} row(s), expected {bounds}"
    if e.type is ExpectationType.FRESHNESS:
        if outcome.observed is None:
            return f"{head}: no {e.freshness_column} value in the increment"
        return (f"{head}: the newest {e.freshness_column} is {outcome.observed:.0f}s old, "
                f"more than {e.max_age_seconds:g}s")
    if outcome.repeating_silver:
        return (f"{head}: {outcome.failing_rows} failing row(s), {outcome.repeating_silver} of them repeating "
                "a value a silver row already holds")
    return f"{head}: {outcome.failing_rows} failing row(s)"


def quality_notes(report: GateReport | None) -> tuple[str, ...]:
    """The failed expectations of a report, in words (`failure_message`), for a run's summary line."""
    return () if report is None else tuple(failure_message(o) for o in report.outcomes if not o.passed)


def _num(value: float | None) -> str:
    return "any" if value is None else f"{value:g}"


def check_increment(decl: SilverTable, rows: DataFrame, *, now: dt.datetime | None = None,
                    repeats: Mapping[str, frozenset[int]] | None = None,
                    unique_scope: str | None = None) -> GateReport:
    """Check ``decl.expectations`` on ``rows`` (the increment's upserts, silver column names and
    ``_cdc_seq``/``_cdc_op``/``_cdc_ts``); see module doc. ``repeats``: per ``unique``
    expectation, the rows that repeat a value silver holds outside the increment
    (`silver.quality_unique`); they fail it too. ``unique_scope``: a boolean column of ``rows``;
    when given, ``unique`` compares only the rows where it is true (the others pass it), e.g. the
    SCD2 versions still open after the increment (`silver.gate_scd2`).

    Raises:
        SilverTableError: an expectation names a column the table does not have, a ``sql``
            condition does not compile, or GE could not evaluate an expectation.
    """
    now = now or dt.datetime.now(dt.UTC)
    projected = rows.select(*_projection(decl, rows.schema, rows, unique_scope))
    frame = projected.toArrow().to_pandas()  # Arrow on both engines (classic toPandas needs a setting for it)
    return _validate(decl, frame, now, repeats or {})


def _projection(decl: SilverTable, schema: StructType, rows: DataFrame, unique_scope: str | None) -> list[Column]:
    names = {f.name: f.dataType for f in schema.fields}
    cols: dict[str, Column] = {ROW_ID: column(ROW_ID)}
    for i, e in enumerate(decl.expectations):
        missing = [c for c in e.referenced_columns if c not in names]
        if missing:
            raise SilverTableError(
                f"silver table {decl.table!r}: expectation {e.label!r} names column(s) {missing} that the table "
                f"does not have; its columns: {sorted(names)}", table=decl.table)
        if e.type is ExpectationType.SQL:
            cols[_sql_column(i)] = _condition(decl, e, rows)
        elif e.type is ExpectationType.FRESHNESS:
            kind = names[e.freshness_column]
            if not isinstance(kind, TimestampType | TimestampNTZType | DateType):
                raise SilverTableError(
                    f"silver table {decl.table!r}: expectation {e.label!r}: column {e.freshness_column!r} is "
                    f"{kind.simpleString()}, freshness needs a timestamp or date column", table=decl.table)
            cols[_fresh_column(i)] = sf.unix_micros(column(e.freshness_column).cast("timestamp")) / sf.lit(1e6)
        elif e.type is ExpectationType.UNIQUE and unique_scope is not None:
            for c in e.columns or []:  # out of scope: null, and nulls pass unique
                cols[_unique_column(i, c)] = sf.when(column(unique_scope), column(c))
        elif e.type is ExpectationType.BETWEEN and isinstance(names[e.column or ""], DecimalType):
            cols[_between_column(i)] = column(e.column or "").cast("double")  # bounds are numbers anyway
        else:
            for c in e.referenced_columns:
                cols[c] = column(c)
    return [c.alias(name) for name, c in cols.items()]


def _condition(decl: SilverTable, e: Expectation, rows: DataFrame) -> Column:
    condition = sf.coalesce(sf.expr(f"({e.condition})").cast("boolean"), sf.lit(False))
    try:
        _ = rows.select(condition).schema  # analysed here on both engines: a bad condition names itself
    except Exception as exc:
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise SilverTableError(
            f"silver table {decl.table!r}: expectation {e.label!r}: condition {e.condition!r} is not a valid "
            f"Spark SQL boolean expression over the table's columns: {first}", table=decl.table) from None
    return condition


def _sql_column(i: int) -> str:
    return f"__cdc_expect_sql_{i}"


def _fresh_column(i: int) -> str:
    return f"__cdc_expect_fresh_{i}"


def _unique_column(i: int, name: str) -> str:
    return f"__cdc_expect_unique_{i}_{name}"


def _between_column(i: int) -> str:
    return f"__cdc_expect_between_{i}"


def _ge() -> Any:
    """Great Expectations, imported on first use (seconds of import); its per-validation INFO lines
    (an ephemeral context's docs folder) are not ours to log."""
    import great_expectations as gx

    logging.getLogger("great_expectations").setLevel(logging.WARNING)
    return gx


def _gx_expectation(e: Expectation, i: int, now: dt.datetime, projected: frozenset[str]) -> Any:
    """The GE expectation that checks ``e`` on the projected frame."""
    gxe = _ge().expectations
    meta = {_LABEL: e.label}
    kind = e.type
    if kind is ExpectationType.NOT_NULL:
        return gxe.ExpectColumnValuesToNotBeNull(column=e.column, meta=meta)
    if kind is ExpectationType.UNIQUE:
        cols = [_unique_column(i, c) if _unique_column(i, c) in projected else c for c in e.columns or []]
        if len(cols) == 1:
            return gxe.ExpectColumnValuesToBeUnique(column=cols[0], meta=meta)
        return gxe.ExpectCompoundColumnsToBeUnique(column_list=cols, meta=meta)
    if kind is ExpectationType.BETWEEN:
        col = _between_column(i) if _between_column(i) in projected else e.column
        return gxe.ExpectColumnValuesToBeBetween(column=col, min_value=e.min, max_value=e.max,
                                                 meta=meta)
    if kind is ExpectationType.REGEX:
        return gxe.ExpectColumnValuesToMatchRegex(column=e.column, regex=e.pattern, meta=meta)
    if kind is ExpectationType.ACCEPTED_VALUES:
        return gxe.ExpectColumnValuesToBeInSet(column=e.column, value_set=e.values, meta=meta)
    if kind is ExpectationType.SQL:
        return gxe.ExpectColumnValuesToBeInSet(column=_sql_column(i), value_set=[True], meta=meta)
    if kind is ExpectationType.ROW_COUNT:
        return gxe.ExpectTableRowCountToBeBetween(
            min_value=None if e.min is None else int(e.min), max_value=None if e.max is None else int(e.max),
            meta=meta)
    assert e.max_age_seconds is not None
    oldest_allowed = now.timestamp() - e.max_age_seconds
    return gxe.ExpectColumnMaxToBeBetween(column=_fresh_column(i), min_value=oldest_allowed, meta=meta)


def _validate(decl: SilverTable, frame: Any, now: dt.datetime, repeats: Mapping[str, frozenset[int]]) -> GateReport:
    gx = _ge()
    from great_expectations.data_context.types.base import ProgressBarsConfig

    context = gx.get_context(mode="ephemeral")
    context.variables.progress_bars = ProgressBarsConfig(globally=False)
    batch = (context.data_sources.add_pandas("increment").add_dataframe_asset("rows")
             .add_batch_definition_whole_dataframe("all").get_batch(batch_parameters={"dataframe": frame}))
    projected = frozenset(str(c) for c in frame.columns)
    suite = gx.ExpectationSuite(name=f"silver_{decl.table}")
    for i, e in enumerate(decl.expectations):
        suite.add_expectation(_gx_expectation(e, i, now, projected))
    suite = context.suites.add(suite)
    results = batch.validate(suite, result_format=_RESULT_FORMAT).results
    by_label = {str(r.expectation_config.meta[_LABEL]): r for r in results}
    outcomes = [_outcome(decl, e, by_label[e.label], now, empty=len(frame) == 0,
                         repeats=repeats.get(e.label, frozenset())) for e in decl.expectations]
    return GateReport(decl.table, len(frame), outcomes)


def _outcome(decl: SilverTable, e: Expectation, result: Any, now: dt.datetime, *, empty: bool,
             repeats: frozenset[int]) -> ExpectationOutcome:
    info = result.exception_info or {}
    if info.get("raised_exception"):
        raise SilverTableError(
            f"silver table {decl.table!r}: expectation {e.label!r} could not be checked: "
            f"{info.get('exception_message')}", table=decl.table)
    res: Mapping[str, Any] = result.result or {}
    passed = bool(result.success)
    if e.type is ExpectationType.ROW_COUNT:
        return ExpectationOutcome(e, passed, observed=float(res["observed_value"]))
    if e.type is ExpectationType.FRESHNESS:
        if empty:  # only deletes: no upserted row to judge (a stale delete does not stop the table)
            return ExpectationOutcome(e, True)
        newest = res.get("observed_value")
        age = None if newest is None else max(0.0, now.timestamp() - float(newest))
        return ExpectationOutcome(e, passed, observed=age)
    failing = int(res.get("unexpected_count") or 0)
    seqs = frozenset(int(row[ROW_ID]) for row in res.get("unexpected_index_list") or [])
    if e.action is Action.QUARANTINE and len(seqs) != failing:
        raise SilverTableError(
            f"silver table {decl.table!r}: expectation {e.label!r}: Great Expectations counted {failing} failing "
            f"row(s) but named {len(seqs)}", table=decl.table)
    if repeats:
        return ExpectationOutcome(e, False, failing_rows=len(seqs | repeats), failing_seqs=seqs | repeats,
                                  repeating_silver=len(repeats))
    return ExpectationOutcome(e, passed, failing_rows=failing, failing_seqs=seqs)
