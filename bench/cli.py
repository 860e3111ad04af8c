"""What the capture bench commands share: their options, the scenarios they run, and the run itself.

`bench.capture_bench` (PostgreSQL) and `bench.mysql_bench` (MySQL/MariaDB) take the same sizing,
scenario and output options, run the same five scenarios (`SCENARIOS`; both benches
add `changes`: inserts, updates and deletes) on one private server they start, and print and
write their results the same way (`run_bench`). Each adds its own options and gives how to start
its server, how to run a scenario and how to render the results.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from bench.measure import RunContext, Say
from bench.report import profile_summary, write_json

SCENARIOS = ("stream", "stream_many", "stream_small", "snapshot", "memory")
"""The scenarios every capture bench has."""
PROFILED = ("stream", "stream_small")
"""The streaming scenarios that ``--profile`` also runs under cProfile (with the snapshot)."""
RESULTS_DIR = Path(__file__).resolve().parent / "results"


def parser(prog: str, doc: str, scenarios: tuple[str, ...] = SCENARIOS) -> argparse.ArgumentParser:
    """A bench command's parser with the sizing and scenario options (its description: the
    first line of ``doc``; ``scenarios``: the ones it can run, all by default)."""
    p = argparse.ArgumentParser(prog=prog, description=doc.split("\n", maxsplit=1)[0])
    p.add_argument("--rows-stream", type=int, default=200_000, help="rows inserted for the streaming scenarios")
    p.add_argument("--rows-snapshot", type=int, default=1_000_000, help="rows in the snapshot scenario's table")
    p.add_argument(
        "--rows-memory",
        type=int,
        default=1_000_000,
        help="rows of the single transaction streamed in the memory scenario",
    )
    p.add_argument("--stream-tx-rows", type=int, default=1_000,
                   help="rows per transaction in the stream_many and changes scenarios")
    p.add_argument("--rows-small", type=int, default=20_000,
                   help="rows inserted by the stream_small scenario, one row per transaction")
    p.add_argument("--scenarios", default=",".join(scenarios), help=f"comma-separated subset of {', '.join(scenarios)}")
    p.set_defaults(valid_scenarios=scenarios)
    p.add_argument(
        "--repeat",
        type=int,
        default=1,
        help="run every reader this many times and report the fastest (the memory scenario runs once)",
    )
    return p


def add_profile_option(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--profile",
        action="store_true",
        help="also run our connector under cProfile (stream, stream_small and snapshot) and print the top functions",
    )


def add_output_options(p: argparse.ArgumentParser, *, kept: str) -> None:
    """``--results-dir``, ``--workdir`` and ``--keep`` (``kept``: what the scratch directory holds)."""
    p.add_argument("--results-dir", type=Path, default=RESULTS_DIR)
    p.add_argument("--workdir", type=Path, default=None, help="scratch directory (default: a new temp dir)")
    p.add_argument("--keep", action="store_true", help=f"keep the scratch directory ({kept})")


def parse_checked(p: argparse.ArgumentParser, argv: list[str] | None) -> argparse.Namespace:
    """Parse ``argv``; unknown scenario names are an error."""
    args = p.parse_args(argv)
    unknown = set(args.scenarios.split(",")) - set(args.valid_scenarios)
    if unknown:
        p.error(f"unknown scenarios {sorted(unknown)}; valid: {', '.join(args.valid_scenarios)}")
    return args


@dataclass(frozen=True)
class Planned:
    """One chosen scenario: its key and title, the rows it writes and the rows per transaction."""

    key: str
    title: str
    rows: int
    tx_rows: int


def planned(args: argparse.Namespace) -> list[Planned]:
    """The scenarios ``--scenarios`` chose, in run order, sized by the options."""
    chosen = args.scenarios.split(",")
    plans = [
        Planned("stream", f"Streaming {args.rows_stream:,}-row insert", args.rows_stream, args.rows_stream),
        Planned("stream_many", f"Streaming {args.rows_stream:,}-row insert", args.rows_stream, args.stream_tx_rows),
        Planned("stream_small", f"Streaming {args.rows_small:,} one-row inserts", args.rows_small, 1),
        Planned("snapshot", f"Snapshot of a {args.rows_snapshot:,}-row table", args.rows_snapshot, args.rows_snapshot),
        Planned(
            "memory", f"Memory: one {args.rows_memory:,}-row transaction streamed", args.rows_memory, args.rows_memory
        ),
        Planned("changes", f"Streaming {args.rows_stream:,} rows inserted, updated, deleted", args.rows_stream,
                args.stream_tx_rows),
    ]
    return [p for p in plans if p.key in chosen]


def progress() -> Say:
    """Prints a progress line with the seconds since this call."""
    started = time.monotonic()

    def say(msg: str) -> None:
        print(f"[{time.monotonic() - started:7.1f}s] {msg}", flush=True)

    return say


Ctx = TypeVar("Ctx", bound=RunContext)


def run_bench(
    args: argparse.Namespace,
    *,
    name: str,
    start: Callable[[Path, Say], tuple[Ctx, Callable[[], object], dict[str, Any]]],
    scenarios: Callable[[Ctx], list[dict[str, Any]]],
    render: Callable[[list[dict[str, Any]]], str],
    profile_top: int = 15,
) -> int:
    """Run a bench: start its server in a scratch directory, run the scenarios, stop the server
    (and remove the directory unless ``--keep``), print the markdown results and the profiles,
    and write everything to ``<results dir>/<name>-<stamp>.json``.

    ``start(workdir, say)`` starts the server; it returns the run context, how to stop the
    server and the server's description for the JSON's ``machine`` block.
    """
    say = progress()
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix=f"cdc-{name.replace('_', '-')}-"))
    workdir.mkdir(parents=True, exist_ok=True)
    args.results_dir.mkdir(parents=True, exist_ok=True)
    ctx, stop, server = start(workdir, say)
    try:
        results = scenarios(ctx)
    finally:
        stop()
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)
    markdown = render(results)
    print("\n" + markdown)
    for s in results:
        if s.get("profile"):
            print(
                f"### Profile of our connector: {s['title']}\n\n```\n{profile_summary(s['profile'], profile_top)}```\n"
            )
    path = write_json(args.results_dir, ctx.stamp, vars(args), results, markdown, server, name=name)
    say(f"results written to {path}")
    return 0
