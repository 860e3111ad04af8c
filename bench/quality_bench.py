"""Quality-gate benchmark (not a test): what ``expectations:`` add to ``silver --once``.

Run ``python -m bench.quality_bench`` (``--changes``/``--keys`` size the bronze topic, ``--engine``
picks ``sail`` or ``spark``, ``--repeat`` runs each side N times and reports the fastest). The
bronze data is the silver bench's (`bench.silver_data`: inserts of every key, then updates and
deletes). Each run builds the silver table from scratch in a fresh lakehouse, once without
expectations and once with eight (every type; freshness fails and warns, the others pass), and
times the whole run and, for the gated one, the gate (projection, toArrow, Great Expectations,
results commit) and, on classic Spark, the Spark jobs of the check itself. Great Expectations'
import is measured apart (once per process). Prints a markdown table.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

if not __package__:  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.silver_data import SOURCE, TOPIC, register_schema, write_bronze

EXPECTATIONS: list[dict[str, Any]] = [
    {"type": "not_null", "column": "name", "action": "fail"},
    {"type": "unique", "columns": ["name"], "action": "fail"},
    {"type": "between", "column": "qty", "min": 0, "max": 99, "action": "quarantine"},
    {"type": "between", "name": "price_range", "column": "price", "min": 0, "max": 1_000_000, "action": "warn"},
    {"type": "regex", "column": "name", "pattern": "^item-", "action": "quarantine"},
    {"type": "row_count", "min": 1, "action": "fail"},
    {"type": "freshness", "column": "updated_at", "max_age_seconds": 3600, "action": "warn"},
    {"type": "sql", "name": "qty_sane", "condition": "qty >= 0 AND length(name) > 5", "action": "quarantine"},
]


def _parse(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m bench.quality_bench", description=__doc__.split("\n", 1)[0])
    p.add_argument("--changes", type=int, default=200_000, help="bronze changes")
    p.add_argument("--keys", type=int, default=50_000, help="distinct keys")
    p.add_argument("--engine", choices=("sail", "spark"), default="sail")
    p.add_argument("--repeat", type=int, default=2, help="runs per side; the fastest is reported")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = _parse(argv)
    from pipelines.engine import EngineSpec, create_session, stop_session
    from pipelines.silver_runner import run_silver
    from silver import gate, increment
    from silver.declarations import SilverOptions, SilverTable

    gate_seconds: list[float] = []
    check_jobs: list[int] = []
    real_gate, real_check = increment.gate_increment, gate.check_increment

    def timed_gate(*a: Any, **kw: Any) -> Any:
        started = time.perf_counter()
        try:
            return real_gate(*a, **kw)
        finally:
            gate_seconds.append(time.perf_counter() - started)

    def counted_check(*a: Any, **kw: Any) -> Any:
        if args.engine != "spark":  # Spark jobs are counted on classic Spark (its status tracker)
            return real_check(*a, **kw)
        sc = spark.sparkContext
        sc.setJobGroup("quality_bench_check", "check_increment")
        try:
            return real_check(*a, **kw)
        finally:
            check_jobs.append(len(sc.statusTracker().getJobIdsForGroup("quality_bench_check")))
            sc.setJobGroup("", "")

    increment.gate_increment = timed_gate  # type: ignore[assignment]
    gate.check_increment = counted_check  # type: ignore[assignment]
    work = Path(tempfile.mkdtemp(prefix="quality_bench-"))
    seed = work / "seed"
    print(f"writing {args.changes:,} bronze changes over {args.keys:,} keys ...", flush=True)
    register_schema(str(seed))
    write_bronze(str(seed), args.changes, args.keys)
    spark = create_session(EngineSpec(kind=args.engine))
    import_started = time.perf_counter()
    import great_expectations  # noqa: F401  # its import, apart from the runs
    import_seconds = time.perf_counter() - import_started
    rows: list[tuple[str, float, float | None, int, int]] = []
    try:
        for label, expectations in (("no expectations", []), ("8 expectations", EXPECTATIONS)):
            best: tuple[float, float | None, int, int] | None = None
            for i in range(args.repeat):
                root = work / f"{len(rows)}-{i}"
                shutil.copytree(seed, root)
                decl = SilverTable(table="items", source=TOPIC, expectations=expectations)  # type: ignore[arg-type]
                gate_seconds.clear()
                started = time.perf_counter()
                (res,) = run_silver(root=str(root), engine=EngineSpec(kind=args.engine), tables=[decl],
                                    options=SilverOptions(), sources={SOURCE: SOURCE}, once=True, spark=spark).tables
                took = time.perf_counter() - started
                if res.status != "applied":
                    raise SystemExit(f"run failed: {res.error}")
                gated = sum(gate_seconds) if expectations else None
                if best is None or took < best[0]:
                    best = (took, gated, res.upserts, res.quarantined)
                print(f"  {label} run {i + 1}: {took:.2f}s", flush=True)
            assert best is not None
            rows.append((label, *best))
    finally:
        stop_session(spark)
        shutil.rmtree(work, ignore_errors=True)
    print(f"\nengine: {args.engine}; {args.changes:,} changes, {args.keys:,} keys; best of {args.repeat}; "
          f"Great Expectations import: {import_seconds:.2f}s (once per process)\n")
    print("| declaration | silver --once (s) | gate (s) | upserts | quarantined |")
    print("|---|---:|---:|---:|---:|")
    for label, took, gated, upserts, quarantined in rows:
        print(f"| {label} | {took:.2f} | {'-' if gated is None else f'{gated:.2f}'} | {upserts:,} | {quarantined:,} |")
    if check_jobs:
        print(f"\nSpark jobs of the check (projection, toArrow, Great Expectations) per gated run: {check_jobs}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
