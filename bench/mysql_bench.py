"""Capture speed and memory of our MySQL/MariaDB connector against the server's raw limits.

Run ``python -m bench.mysql_bench`` (or ``python bench/mysql_bench.py``); ``--help`` lists the
options, ``bench/README.md`` (MySQL section) explains every number. One private MariaDB
(`pipelines.local_mariadb.LocalMariaDB`) is started for the whole run; each scenario uses its
own database on it. The results table is printed as markdown and written, with every raw
number, to ``bench/results/mysql_bench-<time>.json``.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

if not __package__:  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.mysql_report import SYSTEMS, details, targets_table
from bench.mysql_scenarios import MySqlBenchContext, snapshot, streaming
from bench.report import profile_summary, results_table, write_json
from pipelines.local_mariadb import LocalMariaDB

SCENARIOS = ("stream", "stream_many", "snapshot", "memory")
RESULTS_DIR = Path(__file__).resolve().parent / "results"


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m bench.mysql_bench", description=__doc__.split("\n")[0])
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
    p.add_argument("--profile", action="store_true",
                   help="also run our connector under cProfile (stream and snapshot) and print the top functions")
    p.add_argument("--profile-top", type=int, default=25, help="how many functions each profile listing shows")
    p.add_argument("--results-dir", type=Path, default=RESULTS_DIR)
    p.add_argument("--workdir", type=Path, default=None, help="scratch directory (default: a new temp dir)")
    p.add_argument("--keep", action="store_true", help="keep the scratch directory (server, bronze)")
    args = p.parse_args(argv)
    unknown = set(args.scenarios.split(",")) - set(SCENARIOS)
    if unknown:
        p.error(f"unknown scenarios {sorted(unknown)}; valid: {', '.join(SCENARIOS)}")
    return args


def run_scenarios(ctx: MySqlBenchContext, args: argparse.Namespace) -> list[dict[str, Any]]:
    chosen = args.scenarios.split(",")
    out = []
    if "stream" in chosen:
        out.append(streaming(ctx, "stream", f"Streaming {args.rows_stream:,}-row insert", args.rows_stream,
                             args.rows_stream, profile=True))
    if "stream_many" in chosen:
        out.append(streaming(ctx, "stream_many", f"Streaming {args.rows_stream:,}-row insert", args.rows_stream,
                             args.stream_tx_rows))
    if "snapshot" in chosen:
        out.append(snapshot(ctx, "snapshot", f"Snapshot of a {args.rows_snapshot:,}-row table", args.rows_snapshot))
    if "memory" in chosen:
        out.append(streaming(ctx, "memory", f"Memory: one {args.rows_memory:,}-row transaction streamed",
                             args.rows_memory, args.rows_memory, repeat=1, source_only=False, library=False))
    return out


def render(scenarios: list[dict[str, Any]]) -> str:
    return (
        "## MySQL/MariaDB capture benchmark\n\n" + results_table(scenarios, SYSTEMS)
        + "\nStart→last: from the reader's start (ours: `run_capture` called in a child process with its "
        "modules imported; python-mysql-replication and pymysql: before connecting, imports done; "
        "mariadb-binlog/mariadb: process start) to the last record (ours: committed in bronze; "
        "others: decoded or read). Ours ÷ this > 1: ours is faster; for the limits it is the fraction "
        "reached.\n\n" + targets_table(scenarios) + "\n" + details(scenarios)
    )


def _server_version() -> str:
    out = subprocess.run([shutil.which("mariadbd") or "/usr/sbin/mariadbd", "--version"], capture_output=True,
                         text=True, check=False)
    return out.stdout.strip()


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    started = time.monotonic()

    def say(msg: str) -> None:
        print(f"[{time.monotonic() - started:7.1f}s] {msg}", flush=True)

    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="cdc-mysql-bench-"))
    workdir.mkdir(parents=True, exist_ok=True)
    args.results_dir.mkdir(parents=True, exist_ok=True)
    server = LocalMariaDB(workdir / "mariadb")
    version = _server_version()
    say(f"starting a private MariaDB ({version}) in {server.data_dir} on port {server.port}")
    server.start()
    ctx = MySqlBenchContext(workdir, args.results_dir, say, server=server, profile=args.profile,
                            repeat=max(1, args.repeat))
    try:
        scenarios = run_scenarios(ctx, args)
    finally:
        server.stop()
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)
    markdown = render(scenarios)
    print("\n" + markdown)
    for s in scenarios:
        if s.get("profile"):
            print(f"### Profile of our connector: {s['title']}\n\n```\n"
                  f"{profile_summary(s['profile'], args.profile_top)}```\n")
    path = write_json(args.results_dir, ctx.stamp, vars(args), scenarios, markdown, {"mariadb": version},
                      name="mysql_bench")
    say(f"results written to {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
