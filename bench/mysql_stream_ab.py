"""MariaDB streaming into bronze, two or more code trees side by side on the same binlog.

Run ``python -m bench.mysql_stream_ab --tree /path/to/before --tree /path/to/after``. One
private MariaDB (`pipelines.local_mariadb.LocalMariaDB`) serves every scenario; each scenario
makes its changes once, and every tree's connector streams exactly those changes into a bronze
root of its own (primed on the empty table by the same tree), round after round with the trees
interleaved, so that every tree sees the same binlog and, on a shared machine, the same load.
Each run is `bench._capture_child` of this repository (the probe) over the tree's code.

Per run: start→last (``run_capture`` called, modules imported, to the bronze commit holding the
last record), and the child's CPU time over the same span (every thread: decoding, rendering,
the bronze writer). On a loaded machine wall time mostly measures waiting for a CPU; CPU time
is the steadier measure of the work. The table is printed as markdown and written, with every
run, to ``bench/results/mysql_stream_ab-<time>.json``.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

if not __package__:  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.mysql_ours import MySqlTarget
from bench.mysql_workload import (
    MariaDbBench,
    change_rows,
    create_database,
    drop_database,
    insert_rows,
    settle,
)
from bench.ours import REPO_ROOT, BenchRunError, run_ours, summarize_ours
from pipelines.local_mariadb import LocalMariaDB

RESULTS_DIR = Path(__file__).resolve().parent / "results"


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m bench.mysql_stream_ab", description=__doc__.split("\n")[0])
    p.add_argument("--tree", type=Path, action="append", default=None,
                   help="a checkout whose connector code is run (repeat; default: this repository)")
    p.add_argument("--rows", type=int, default=200_000, help="rows inserted by stream and stream_many")
    p.add_argument("--tx-rows", type=int, default=1_000, help="rows per transaction of stream_many and changes")
    p.add_argument("--changes-rows", type=int, default=50_000,
                   help="rows inserted, updated and deleted by changes (four records a row)")
    p.add_argument("--rounds", type=int, default=3, help="runs per tree and scenario")
    p.add_argument("--scenarios", default="stream,stream_many,changes", help="comma-separated subset")
    p.add_argument("--results-dir", type=Path, default=RESULTS_DIR)
    args = p.parse_args(argv)
    args.tree = [t.resolve() for t in (args.tree or [REPO_ROOT])]
    for tree in args.tree:
        if not (tree / "cdc_sources" / "mysql" / "stream.py").is_file():
            p.error(f"--tree {tree}: no cdc_sources/mysql/stream.py there")
    unknown = set(args.scenarios.split(",")) - {"stream", "stream_many", "changes"}
    if unknown:
        p.error(f"--scenarios: unknown {', '.join(sorted(unknown))}")
    return args


def say(text: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {text}", flush=True)


def scenario(server: LocalMariaDB, work: Path, key: str, trees: list[Path], rounds: int, records: int,
             workload: Callable[[MariaDbBench], object], ids: itertools.count[int]) -> list[dict[str, Any]]:
    """Prime a pipeline per tree and round, make the changes, stream them: every run's numbers."""
    db = create_database(server, f"ab_{key}")
    try:
        targets = {(t, r): MySqlTarget(db, work / f"lake_{key}_{i}_{r}", next(ids))
                   for i, t in enumerate(trees) for r in range(rounds)}
        say(f"{key}: priming {len(targets)} pipelines on the empty table")
        for (tree, _), target in targets.items():
            run_ours(target, expected=0, tree=tree)
        say(f"{key}: making the changes")
        workload(db)
        settle(db)
        out = []
        for r in range(rounds):
            for tree in trees:
                load = os.getloadavg()[0]
                raw = run_ours(targets[(tree, r)], expected=records, tree=tree)
                run = summarize_ours(raw, records)
                if run["bronze_rows"] < records:
                    raise BenchRunError(f"{tree}: bronze holds {run['bronze_rows']} of {records} records")
                say(f"{key} round {r + 1} {tree}: {run['events_per_s']:,.0f} events/s, CPU {run['cpu_s']:.2f}s, "
                    f"peak RSS {run['peak_rss_mb']:.0f} MB, load {load:.1f}")
                out.append({"scenario": key, "tree": str(tree), "round": r, "load_1min": load,
                            "pandas_probe_skipped": raw.get("pandas_probe_skipped", False),
                            **{k: run[k] for k in ("start_to_last_s", "start_to_first_s", "events_per_s", "cpu_s",
                                                   "peak_rss_mb", "bronze_commits", "records")}})
        return out
    finally:
        drop_database(db)


def table(runs: list[dict[str, Any]], trees: list[Path]) -> str:
    lines = ["| Scenario | Tree | Runs | Events/s best | median | worst | Start→first s median | CPU s median | "
             "CPU s best | Events per CPU s (median) | Peak RSS MB | Load (1 min) |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
    for key in dict.fromkeys(r["scenario"] for r in runs):
        for tree in trees:
            mine = [r for r in runs if r["scenario"] == key and r["tree"] == str(tree)]
            rates = sorted(r["events_per_s"] for r in mine)
            cpu = statistics.median(r["cpu_s"] for r in mine)
            loads = [r["load_1min"] for r in mine]
            lines.append(f"| {key} ({mine[0]['records']:,} records) | {tree} | {len(mine)} | {rates[-1]:,.0f} | "
                         f"{statistics.median(rates):,.0f} | {rates[0]:,.0f} | "
                         f"{statistics.median(r['start_to_first_s'] for r in mine):.3f} | {cpu:.2f} | "
                         f"{min(r['cpu_s'] for r in mine):.2f} | "
                         f"{mine[0]['records'] / cpu:,.0f} | {max(r['peak_rss_mb'] for r in mine):.0f} | "
                         f"{min(loads):.1f}-{max(loads):.1f} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="cdc-mysql-ab-"))
    server = LocalMariaDB(work / "mariadb")
    say(f"starting a private MariaDB in {server.data_dir} on port {server.port}; trees: "
        + ", ".join(map(str, args.tree)))
    server.start()
    ids = itertools.count(5600)
    n, tx = args.rows, args.tx_rows
    plans: dict[str, tuple[int, Callable[[MariaDbBench], object]]] = {
        "stream": (n, lambda db: insert_rows(db, n, tx_rows=n)),
        "stream_many": (n, lambda db: insert_rows(db, n, tx_rows=tx)),
        "changes": (4 * args.changes_rows, lambda db: change_rows(db, args.changes_rows, tx_rows=tx)),
    }
    runs: list[dict[str, Any]] = []
    try:
        for key in args.scenarios.split(","):
            records, workload = plans[key]
            runs += scenario(server, work, key, args.tree, args.rounds, records, workload, ids)
    finally:
        server.stop()
        shutil.rmtree(work, ignore_errors=True)
    out = table(runs, args.tree)
    print("\n" + out)
    args.results_dir.mkdir(parents=True, exist_ok=True)
    path = args.results_dir / f"mysql_stream_ab-{time.strftime('%Y%m%d-%H%M%S')}.json"
    path.write_text(json.dumps({"trees": [str(t) for t in args.tree], "runs": runs, "table": out}, indent=1))
    say(f"results written to {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
