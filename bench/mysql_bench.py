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
from bench.mysql_report import SYSTEMS, details, targets_table
from bench.mysql_scenarios import MySqlBenchContext, snapshot, streaming
from bench.report import results_table
from pipelines.local_mariadb import LocalMariaDB


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = parser("python -m bench.mysql_bench", __doc__, (*SCENARIOS, "changes"))
    add_profile_option(p)
    p.add_argument("--profile-top", type=int, default=25, help="how many functions each profile listing shows")
    add_output_options(p, kept="server, bronze")
    return parse_checked(p, argv)


def run_scenarios(ctx: MySqlBenchContext, args: argparse.Namespace) -> list[dict[str, Any]]:
    out = []
    for s in planned(args):
        if s.key == "snapshot":
            out.append(snapshot(ctx, s.key, s.title, s.rows))
        elif s.key == "changes":
            out.append(streaming(ctx, s.key, s.title, s.rows, s.tx_rows, changes=True))
        elif s.key == "memory":
            out.append(streaming(ctx, s.key, s.title, s.rows, s.tx_rows, repeat=1, source_only=False, library=False))
        else:
            out.append(streaming(ctx, s.key, s.title, s.rows, s.tx_rows, profile=s.key in PROFILED))
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

    def start(workdir: Path, say: Say) -> tuple[MySqlBenchContext, Callable[[], object], dict[str, Any]]:
        server = LocalMariaDB(workdir / "mariadb")
        version = _server_version()
        say(f"starting a private MariaDB ({version}) in {server.data_dir} on port {server.port}")
        server.start()
        ctx = MySqlBenchContext(workdir, args.results_dir, say, server=server, profile=args.profile,
                                repeat=max(1, args.repeat))
        return ctx, server.stop, {"mariadb": version}

    return run_bench(args, name="mysql_bench", start=start, scenarios=lambda ctx: run_scenarios(ctx, args),
                     render=render, profile_top=args.profile_top)


if __name__ == "__main__":
    sys.exit(main())
