"""The MySQL bench's report: system names, the issue's targets, and the facts behind each scenario.

The results table itself, the profiles and the JSON file are the shared ones of `bench.report`.
"""

from __future__ import annotations

from typing import Any

from bench.mysql_scenarios import binlog_reconnects
from bench.report import ours_facts, rss_target_row, scenario_details, scenario_title, targets_markdown

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

STREAM_TARGET = 150_000.0
"""Events/s committed to bronze when streaming the 200,000-row insert (in one transaction, and in
transactions of 1,000 rows) and the mixed workload (``changes``), measured warm."""

SNAPSHOT_TARGET = 400_000.0
"""Rows/s of the 1,000,000-row snapshot, committed to bronze, from a cold start."""


def targets_table(scenarios: list[dict[str, Any]]) -> str:
    """The issue's targets, measured on our connector (reported, not asserted)."""
    rows = []
    for s in scenarios:
        ours = s["systems"].get("ours")
        if ours is None:
            continue
        goal = {"stream": STREAM_TARGET, "stream_many": STREAM_TARGET, "stream_small": STREAM_TARGET,
                "changes": STREAM_TARGET,
                "snapshot": SNAPSHOT_TARGET}.get(s["key"])
        if goal is not None:
            unit = "events/s" if s["kind"] == "streaming" else "rows/s"
            rate = ours["events_per_s"]
            rows.append(f"| {scenario_title(s)}: ≥ {goal:,.0f} {unit} into bronze | {rate:,.0f} {unit} "
                        f"(first→last {ours['events_per_s_first_to_last']:,.0f}) | {'yes' if rate >= goal else 'no'} |")
        rows.append(rss_target_row(s, ours))
    return targets_markdown(rows)


def details(scenarios: list[dict[str, Any]]) -> str:
    """Scenario facts that explain the numbers: load, binlog volume, commits, start-up, reconnects."""
    return scenario_details(scenarios, volume=_binlog_volume, readers=_reader_facts)


def _binlog_volume(s: dict[str, Any]) -> list[str]:
    if "binlog_bytes" not in s:
        return []
    return [f"binlog {s['binlog_bytes'] / 2**20:,.1f} MB in {len(s['binlog_files'])} file(s)"]


def _reader_facts(s: dict[str, Any]) -> list[str]:
    facts = []
    ours = s["systems"].get("ours")
    if ours:
        facts.append(ours_facts(ours, run_capture="run_capture returned after")
                     + f", binlog stream resets (python-mysql-replication reconnects) {binlog_reconnects(ours)}")
    source = s["systems"].get("ours_source")
    if source:
        facts.append(f"session alone: binlog stream resets {binlog_reconnects(source)}")
    library = s["systems"].get("library")
    if library:
        facts.append(f"python-mysql-replication: start→first row {library['start_to_first_s']:.2f}s, "
                     f"{library['events']:,} row events, {library['reconnects']} reconnects")
    return facts
