"""The MySQL bench's report: system names, the issue's targets, and the facts behind each scenario.

The results table itself, the profiles and the JSON file are the shared ones of `bench.report`.
"""

from __future__ import annotations

from typing import Any

from bench.mysql_scenarios import binlog_reconnects
from bench.report import RSS_TARGET_MB, scenario_title

SYSTEMS = {
    "ours": "cdc-lakehouse (this connector, into bronze)",
    "ours_source": "cdc-lakehouse session alone (records counted, no bronze)",
    "library": "python-mysql-replication alone (`ev.rows`, library limit)",
    "binlog_local": "mariadb-binlog -v, binlog files (raw decode limit)",
    "binlog_remote": "mariadb-binlog -v, from the server (raw decode + send limit)",
    "client": "mariadb -N -B -e 'SELECT …' (raw read limit)",
    "sscursor": "pymysql SSCursor, connector's conversions (driver limit)",
    "sscursor_default": "pymysql SSCursor, default conversions",
}
"""Display names of the readers, in table order."""

STREAM_TARGET = 40_000.0
"""Events/s committed to bronze when streaming the 200,000-row insert (one transaction)."""

SNAPSHOT_TARGET = 200_000.0
"""Rows/s of the 1,000,000-row snapshot, committed to bronze."""


def targets_table(scenarios: list[dict[str, Any]]) -> str:
    """The issue's targets, measured on our connector (reported, not asserted)."""
    rows = []
    for s in scenarios:
        ours = s["systems"].get("ours")
        if ours is None:
            continue
        goal = {"stream": STREAM_TARGET, "snapshot": SNAPSHOT_TARGET}.get(s["key"])
        if goal is not None:
            unit = "events/s" if s["kind"] == "streaming" else "rows/s"
            rate = ours["events_per_s"]
            rows.append(f"| {scenario_title(s)}: ≥ {goal:,.0f} {unit} into bronze | {rate:,.0f} {unit} "
                        f"(first→last {ours['events_per_s_first_to_last']:,.0f}) | {'yes' if rate >= goal else 'no'} |")
        rss = ours["peak_rss_mb"]
        rows.append(f"| {scenario_title(s)}: peak RSS < {RSS_TARGET_MB:g} MB | {rss:,.0f} MB "
                    f"| {'yes' if rss < RSS_TARGET_MB else 'no'} |")
    return "| Target (from the issue) | Measured | Met |\n|---|---|---|\n" + "\n".join(rows) + "\n"


def details(scenarios: list[dict[str, Any]]) -> str:
    """Scenario facts that explain the numbers: load, binlog volume, commits, start-up, reconnects."""
    out = []
    for s in scenarios:
        facts = [f"load {s['load_s']:.1f}s"]
        if "binlog_bytes" in s:
            facts.append(f"binlog {s['binlog_bytes'] / 2**20:,.1f} MB in {len(s['binlog_files'])} file(s)")
        if "table_bytes" in s:
            facts.append(f"table {s['table_bytes'] / 2**20:,.0f} MB")
        ours = s["systems"].get("ours")
        if ours:
            facts.append(f"ours: {ours['bronze_commits']} bronze commits (commit thread busy "
                         f"{ours['bronze_commit_busy_s']:.1f}s), start→first record "
                         f"{ours['start_to_first_s']:.2f}s, run_capture returned after {ours['run_capture_s']:.2f}s, "
                         f"RSS before run {ours['rss_before_run_mb']:.0f} MB, binlog stream resets "
                         f"(python-mysql-replication reconnects) {binlog_reconnects(ours)}")
        source = s["systems"].get("ours_source")
        if source:
            facts.append(f"session alone: binlog stream resets {binlog_reconnects(source)}")
        library = s["systems"].get("library")
        if library:
            facts.append(f"python-mysql-replication: start→first row {library['start_to_first_s']:.2f}s, "
                         f"{library['events']:,} row events, {library['reconnects']} reconnects")
        out.append(f"- {scenario_title(s)}: " + "; ".join(facts))
    return "\n".join(out) + "\n"
