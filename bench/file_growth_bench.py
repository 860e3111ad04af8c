"""Does a silver increment get slower as bronze (and silver) accumulate small files? (not a test)

A capture commits one small bronze file per table per ``commit_interval_ms``; ``run`` applies
an increment every few seconds, one MERGE into silver each. This bench rebuilds that history
without a writer's load, on embedded Sail: for each ``--commits`` N, a fresh bronze topic
(``--keys`` inserts, then N commits of ``--rows`` updates/deletes, a silver pass every
``--commits-per-pass`` commits, as ``run`` would), then ``--increments`` increments of a fixed
size (``--increment-commits`` commits of ``--increment-rows`` rows) timed step by step
(`bench._silver_child.install_step_timers`); then ``maintain`` (bronze and silver compacted,
VACUUM at 0 hours: files silver may still read are kept) and the same increments again.

    .venv/bin/python -m bench.file_growth_bench --commits 200,1000,3000

Prints a markdown table (median seconds per increment and its biggest steps, bronze and silver
data files and log versions) and writes every number to
``bench/results/file_growth_bench-<time>.json``.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

if not __package__:  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from deltalake import DeltaTable, write_deltalake

from bench._silver_child import engine_spec, framework, install_step_timers, silver_locations
from bench.silver_data import SOURCE, TOPIC, bronze_batch, register_schema
from bronze.data_files import TABLE_CONFIGURATION
from bronze.schema import topic_path
from pipelines.config import parse_pipeline
from pipelines.engine import create_session, stop_session
from pipelines.maintenance.run import maintain, targets

ENGINE = "sail"
STEPS_SHOWN = ("bronze files (delta-rs)", "schema history read", "progress read", "progress write", "MERGE",
               "dedupe + decode + staging write (classic: lazy)", "counts (one aggregate; classic: + dedupe + decode)")


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m bench.file_growth_bench", description=__doc__.split("\n", 1)[0])
    p.add_argument("--commits", default="200,1000,3000", help="comma-separated bronze commit counts N")
    p.add_argument("--rows", type=int, default=3, help="rows per history commit")
    p.add_argument("--keys", type=int, default=2000, help="distinct keys (inserted in the first commit)")
    p.add_argument("--commits-per-pass", type=int, default=16,
                   help="a silver pass every this many history commits (0: one pass at the end)")
    p.add_argument("--increment-commits", type=int, default=30, help="bronze commits in one timed increment")
    p.add_argument("--increment-rows", type=int, default=100, help="rows per commit of a timed increment")
    p.add_argument("--increments", type=int, default=3, help="timed increments before and after maintain")
    p.add_argument("--keep", action="store_true", help="keep the lakehouse folders (printed)")
    return p.parse_args(argv)


def _files_versions(path: str) -> tuple[int, int]:
    table = DeltaTable(path)
    return len(table.file_uris()), int(table.version())


def _append(root: str, first_seq: int, commits: int, rows: int, keys: int, rng: random.Random, batch: int) -> int:
    seq = first_seq
    for i in range(commits):
        write_deltalake(topic_path(root, TOPIC), bronze_batch(seq, rows, keys, fresh_keys=False, rng=rng,
                                                              batch=batch + i), mode="append")
        seq += rows
    return seq


def _timed_increments(spark: Any, root: str, args: argparse.Namespace, seq: int, rng: random.Random,
                      totals: dict[str, float]) -> tuple[int, list[dict[str, Any]]]:
    runs = []
    for i in range(args.increments):
        seq = _append(root, seq, args.increment_commits, args.increment_rows, args.keys, rng, 100_000 + i * 1000)
        totals.clear()
        started = time.monotonic()
        res = framework(spark, root, ENGINE)
        seconds = time.monotonic() - started
        runs.append({"seconds": seconds, "events": res.events, "files_read": res.files_read,
                     "files_total": res.files_total, "steps": dict(totals)})
    return seq, runs


def _state(root: str) -> dict[str, int]:
    table, _ = silver_locations(root, ENGINE)
    assert table.location is not None
    bf, bv = _files_versions(topic_path(root, TOPIC))
    sf, sv = _files_versions(table.location)
    return {"bronze_files": bf, "bronze_version": bv, "silver_files": sf, "silver_version": sv}


def _config(root: str) -> Any:
    table, options = silver_locations(root, ENGINE)
    return parse_pipeline(
        f'pipeline: bench\nlakehouse: {{root: "{root}"}}\nsources:\n  - {{name: {SOURCE}, connector: postgres}}\n'
        f"silver:\n  - {{table: {table.table}, source: {TOPIC}, location: \"{table.location}\"}}\n"
        f'silver_options: {{state_location: "{options.state_location}"}}\n'
        "maintenance: {vacuum_retention_hours: 0}\n", env={})


def run_one(spark: Any, n: int, args: argparse.Namespace, totals: dict[str, float], base: Path) -> dict[str, Any]:
    root = str(base / f"lake-{n}")
    rng = random.Random(n)
    register_schema(root)
    write_deltalake(topic_path(root, TOPIC), bronze_batch(1, args.keys, args.keys, fresh_keys=True, rng=rng, batch=1),
                    mode="append", configuration=TABLE_CONFIGURATION)
    seq = args.keys + 1
    framework(spark, root, ENGINE)
    started = time.monotonic()
    step = args.commits_per_pass or n
    passes = 0
    for done in range(0, n, step):
        seq = _append(root, seq, min(step, n - done), args.rows, args.keys, rng, 2 + done)
        framework(spark, root, ENGINE)
        passes += 1
    history_s = time.monotonic() - started
    before_state = _state(root)
    seq, before = _timed_increments(spark, root, args, seq, rng, totals)
    cfg = _config(root)
    started = time.monotonic()
    reports = maintain(cfg, targets(cfg, tables=[TOPIC, "items"]))
    maintain_s = time.monotonic() - started
    assert all(r.failed is None for r in reports), [r.failed for r in reports]
    after_state = _state(root)
    seq, after = _timed_increments(spark, root, args, seq, rng, totals)
    if not args.keep:
        shutil.rmtree(root, ignore_errors=True)
    return {"commits": n, "history_passes": passes, "history_s": history_s, "maintain_s": maintain_s,
            "maintain": [r.line(False) for r in reports], "before": {"state": before_state, "runs": before},
            "after": {"state": after_state, "runs": after}}


def _median(runs: list[dict[str, Any]], key: str | None = None) -> float:
    values = [r["seconds"] if key is None else r["steps"].get(key, 0.0) for r in runs]
    return statistics.median(values)


def print_table(results: list[dict[str, Any]]) -> None:
    short = {"bronze files (delta-rs)": "bronze files", "schema history read": "schemas",
             "progress read": "progress read", "progress write": "progress write", "MERGE": "MERGE",
             "dedupe + decode + staging write (classic: lazy)": "stage",
             "counts (one aggregate; classic: + dedupe + decode)": "counts"}
    print("| N bronze commits | when | bronze files / versions | silver files / versions | s per increment | "
          + " | ".join(short[s] for s in STEPS_SHOWN) + " |")
    print("| --- " * (5 + len(STEPS_SHOWN)) + "|")
    for r in results:
        for when in ("before", "after"):
            s, runs = r[when]["state"], r[when]["runs"]
            label = "as grown" if when == "before" else f"after maintain ({r['maintain_s']:.1f} s)"
            print(f"| {r['commits']:,} | {label} | {s['bronze_files']:,} / {s['bronze_version']:,} | "
                  f"{s['silver_files']:,} / {s['silver_version']:,} | {_median(runs):.2f} | "
                  + " | ".join(f"{_median(runs, k):.2f}" for k in STEPS_SHOWN) + " |")


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    totals = install_step_timers()
    spark = create_session(engine_spec(ENGINE, 4))
    base = Path(tempfile.mkdtemp(prefix="file-growth-"))
    results = []
    try:
        for n in (int(x) for x in args.commits.split(",")):
            print(f"N={n}: building ...", file=sys.stderr, flush=True)
            results.append(run_one(spark, n, args, totals, base))
    finally:
        stop_session(spark)
        if not args.keep:
            shutil.rmtree(base, ignore_errors=True)
        else:
            print(f"kept {base}", file=sys.stderr)
    inc = args.increment_commits * args.increment_rows
    print(f"\nSail, {args.keys:,} keys, history commits of {args.rows} rows with a silver pass every "
          f"{args.commits_per_pass} commits; timed increments: {args.increment_commits} commits x "
          f"{args.increment_rows} rows = {inc:,} events, median of {args.increments}; seconds\n")
    print_table(results)
    out = Path(__file__).resolve().parent / "results" / f"file_growth_bench-{time.strftime('%Y%m%d-%H%M%S')}.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps({"args": vars(args), "results": results}, indent=1, default=str))
    print(f"\nwritten {out}")


if __name__ == "__main__":
    main()
