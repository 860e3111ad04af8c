"""`verify`'s output: a block of lines per table, or JSON."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import orjson

from pipelines.verify.model import TableReport

__all__ = ["report_json", "report_lines"]


def report_lines(reports: Sequence[TableReport]) -> list[str]:
    """For people: a summary line per table, then its differing keys and unchecked columns."""
    lines = []
    for r in reports:
        if r.error is not None:
            lines.append(f"verify {r.table}: NOT VERIFIED: {r.error}")
            continue
        state = "EQUAL" if r.equal else "DIFFERENT"
        rounds = f", {r.rounds} reads" if r.rounds > 1 else ""
        ahead = f" ({r.silver_ahead} changed after the read point)" if r.silver_ahead else ""
        lines.append(f"verify {r.table}: {state} at {r.read_point} (bronze seq {r.upto_seq}): "
                     f"{r.source_rows} source rows, {r.silver_rows} silver rows{ahead}, {r.buckets} key ranges, "
                     f"{r.buckets_differing} differing{rounds}")
        width = max((len(d.key) for d in r.diffs), default=0)
        for d in r.diffs:
            columns = f": {', '.join(d.columns)}" if d.columns else ""
            lines.append(f"  {d.key.ljust(width)}  {d.kind.value}{columns}")
        if r.skipped:
            lines.append("  not compared: " + "; ".join(f"{s.source} ({s.reason})" for s in r.skipped))
    return lines


def _table(r: TableReport) -> dict[str, Any]:
    return {
        "table": r.table, "equal": r.equal, "error": r.error, "read_point": r.read_point, "bronze_seq": r.upto_seq,
        "source_rows": r.source_rows, "silver_rows": r.silver_rows,
        "silver_rows_changed_after_read_point": r.silver_ahead, "key_ranges": r.buckets,
        "key_ranges_differing": r.buckets_differing, "reads": r.rounds,
        "differences": [{"key": d.key, "kind": d.kind.name.lower(), "columns": list(d.columns)} for d in r.diffs],
        "compared_columns": list(r.compared),
        "not_compared": [{"column": s.source, "reason": s.reason} for s in r.skipped],
    }


def report_json(reports: Sequence[TableReport]) -> str:
    """For programs: ``{"equal": bool, "tables": [...]}``."""
    return orjson.dumps({"equal": all(r.equal for r in reports), "tables": [_table(r) for r in reports]},
                        option=orjson.OPT_INDENT_2).decode()
