"""The data-quality part of ``status``: each silver table's last checked increment.

Read with delta-rs from the results table the silver gates append to (``<state>/quality``,
`silver.quality_results`); no Spark. A table with no expectations, or never checked, has no
entry.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from deltalake import DeltaTable
from deltalake.exceptions import TableNotFoundError

from silver.quality_table import quality_location

__all__ = ["FailedCheck", "QualityRun", "last_quality_runs", "quality_line"]

_COLUMNS = ["run_id", "silver_table", "expectation", "action", "passed", "failing_rows", "checked_at"]


@dataclass(frozen=True)
class FailedCheck:
    """An expectation that did not hold (``failing_rows`` None: it judged the increment as a whole)."""

    expectation: str
    action: str
    failing_rows: int | None


@dataclass(frozen=True)
class QualityRun:
    """A silver table's last checked increment."""

    table: str
    run_id: str
    checked_at: dt.datetime
    checks: int
    failed: tuple[FailedCheck, ...]


def last_quality_runs(state_location: str, tables: Sequence[str],
                      storage: Mapping[str, str] | None = None) -> tuple[QualityRun, ...]:
    """The last checked increment of each of ``tables`` that has one, in ``tables`` order."""
    try:
        dt_table = DeltaTable(quality_location(state_location), storage_options=dict(storage or {}) or None)
    except TableNotFoundError:
        return ()
    rows = dt_table.to_pyarrow_table(columns=_COLUMNS).to_pylist()
    latest: dict[str, tuple[dt.datetime, str]] = {}
    for r in rows:
        key = (r["checked_at"], r["run_id"])
        if r["silver_table"] in tables and (r["silver_table"] not in latest or key > latest[r["silver_table"]]):
            latest[r["silver_table"]] = key
    out = []
    for table in tables:
        if table not in latest:
            continue
        at, run = latest[table]
        mine = [r for r in rows if r["silver_table"] == table and (r["checked_at"], r["run_id"]) == (at, run)]
        failed = tuple(FailedCheck(r["expectation"], r["action"], r["failing_rows"])
                       for r in sorted(mine, key=lambda r: r["expectation"]) if not r["passed"])
        out.append(QualityRun(table, run, at, len(mine), failed))
    return tuple(out)


def quality_line(run: QualityRun) -> str:
    """``3/4 passed; failed: not_null_email (quarantine, 2 rows)``."""
    head = f"{run.checks - len(run.failed)}/{run.checks} passed"
    if not run.failed:
        return head
    parts = [f"{f.expectation} ({f.action}" + ("" if f.failing_rows is None else f", {f.failing_rows} rows") + ")"
             for f in run.failed]
    return f"{head}; failed: {', '.join(parts)}"
