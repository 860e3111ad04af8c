"""Memory of capture's bronze commit path (not a test): does a process grow per Delta commit?

``python -m bench.bronze_commit_memory_bench [--commits 1500] [--rows 50] [--tables 1]``

Capture commits once per ``commit_interval_ms`` to every bronze table that got rows, through a
`DeltaTable` it keeps open (`bronze.writer`: a write transaction of the staged files' add
actions, then ``update_incremental``). This harness repeats exactly that, with bronze-shaped data
files written by `bronze.data_files.OpenDataFile`, in a fresh process per variant, and samples
the process's RSS every ``--sample-every`` commits:

* ``kept``: one `DeltaTable` per table for the whole run (what capture does);
* ``reopened``: the `DeltaTable` is opened afresh every ``--reopen-every`` commits;
* ``new table``: every ``--reopen-every`` commits the commits go to a new table (the same work
  per commit on a table that stays small: separates growth with the table's file count from
  growth per commit);
* ``files only``: the data files are written but nothing is committed (the Parquet side alone);
* ``kept + malloc_trim``: as ``kept``, and glibc's ``malloc_trim(0)`` after every commit round
  (does glibc hold freed memory it could give back?);
* ``kept + MALLOC_ARENA_MAX=2``: as ``kept`` in a process with at most two glibc malloc arenas
  (does fragmentation across the arenas of delta-rs's tokio threads grow the process?);

* ``kept + jemalloc decay 0``: as ``kept`` with delta-rs's jemalloc returning freed pages at once
  (``_RJEM_MALLOC_CONF=dirty_decay_ms:0,muzzy_decay_ms:0``);
* ``kept + no checkpoints``: as ``kept`` without the post-commit checkpoint every 100 versions.

``--variants`` picks some of them (comma-separated).

It prints a table: RSS after the first tenth of the commits, at the end, the least-squares slope
in KB per commit over the commits after the first tenth, and ms per commit.
"""

from __future__ import annotations

import argparse
import ctypes
import ctypes.util
import datetime as dt
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

if not __package__:  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

VARIANTS = ("kept", "reopened", "new table", "files only", "kept + malloc_trim", "kept + MALLOC_ARENA_MAX=2",
            "kept + jemalloc decay 0", "kept + no checkpoints")
VARIANT_ENV = {"kept + MALLOC_ARENA_MAX=2": {"MALLOC_ARENA_MAX": "2"},
               "kept + jemalloc decay 0": {"_RJEM_MALLOC_CONF": "dirty_decay_ms:0,muzzy_decay_ms:0"}}


def _rows(first_seq: int, n: int, batch: int) -> Any:
    import pyarrow as pa

    from bronze.schema import BRONZE_SCHEMA

    now = dt.datetime.now(dt.UTC)
    return pa.Table.from_pylist(
        [{"key": json.dumps({"id": first_seq + i}), "value": json.dumps({"op": "u", "after": {"id": first_seq + i,
                                                                                            "payload": "x" * 40}}),
          "op": "u", "seq": first_seq + i, "position": f"0/{first_seq + i:X}", "schema_id": "s1", "headers": [],
          "ingested_at": now, "batch": batch} for i in range(n)], schema=BRONZE_SCHEMA)


def run_variant(variant: str, commits: int, rows: int, tables: int, reopen_every: int, sample_every: int,
                workdir: Path) -> dict[str, Any]:
    """One variant in this process (see module doc); returns its RSS samples and time."""
    import psutil
    from deltalake import DeltaTable
    from deltalake.schema import Schema as DeltaSchema
    from deltalake.transaction import PostCommitHookProperties, create_table_with_add_actions

    from bronze.data_files import TABLE_CONFIGURATION, OpenDataFile, TableLocation
    from bronze.schema import BRONZE_SCHEMA

    me = psutil.Process()
    hooks = PostCommitHookProperties(create_checkpoint=False) if variant == "kept + no checkpoints" else None
    trim = ctypes.CDLL(ctypes.util.find_library("c")).malloc_trim if variant == "kept + malloc_trim" else None
    def paths_of(generation: int) -> list[str]:
        return [str(workdir / f"t{i}-{generation}") for i in range(tables)]

    paths = paths_of(0)
    open_tables: dict[str, DeltaTable] = {}
    samples: list[tuple[int, float]] = []
    seq = 0
    started = time.perf_counter()
    for batch in range(1, commits + 1):
        fresh = variant == "new table" and batch % reopen_every == 1 and batch > 1
        if fresh:
            open_tables.clear()
            paths = paths_of(batch)
        for path in paths:
            data = OpenDataFile(TableLocation.of(path, None))
            data.append(_rows(seq, rows, batch))
            seq += rows
            add = data.close()
            if variant == "files only":
                continue
            if batch == 1 or fresh:
                create_table_with_add_actions(path, DeltaSchema.from_arrow(BRONZE_SCHEMA), [add], mode="error",
                                              configuration=TABLE_CONFIGURATION)
                continue
            if path not in open_tables or (variant == "reopened" and batch % reopen_every == 0):
                open_tables[path] = DeltaTable(path)
            table = open_tables[path]
            table.create_write_transaction([add], "append", BRONZE_SCHEMA, post_commithook_properties=hooks)
            table.update_incremental()
        if trim is not None:
            trim(0)
        if batch % sample_every == 0:
            samples.append((batch, me.memory_info().rss / 2**20))
    return {"variant": variant, "samples": samples, "seconds": time.perf_counter() - started}


def _slope(points: list[tuple[int, float]]) -> float:
    n = len(points)
    mx, my = sum(p[0] for p in points) / n, sum(p[1] for p in points) / n
    den = sum((p[0] - mx) ** 2 for p in points)
    return 0.0 if den == 0 else sum((p[0] - mx) * (p[1] - my) for p in points) / den


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.bronze_commit_memory_bench",
                                description=__doc__.split("\n", 1)[0])
    p.add_argument("--commits", type=int, default=1500)
    p.add_argument("--rows", type=int, default=50, help="rows per data file (one file per table and commit)")
    p.add_argument("--tables", type=int, default=1)
    p.add_argument("--reopen-every", type=int, default=100)
    p.add_argument("--sample-every", type=int, default=50)
    p.add_argument("--variants", default=",".join(VARIANTS), help="comma-separated, of: " + ", ".join(VARIANTS))
    p.add_argument("--variant", choices=VARIANTS, help=argparse.SUPPRESS)  # the child's own run
    a = p.parse_args(argv)
    chosen = [v.strip() for v in a.variants.split(",") if v.strip()]
    unknown = [v for v in chosen if v not in VARIANTS]
    if unknown:
        p.error(f"unknown variant(s) {', '.join(unknown)}; choose from {', '.join(VARIANTS)}")
    if a.variant is not None:
        with tempfile.TemporaryDirectory(prefix="bronze-commit-mem-") as tmp:
            out = run_variant(a.variant, a.commits, a.rows, a.tables, a.reopen_every, a.sample_every, Path(tmp))
        print(json.dumps(out))
        return 0
    results = []
    for variant in chosen:  # a fresh process each: allocators do not carry over
        cmd = [sys.executable, "-m", "bench.bronze_commit_memory_bench", "--variant", variant,
               *(f"--{k.replace('_', '-')}={v}" for k, v in vars(a).items() if k not in ("variant", "variants"))]
        done = subprocess.run(cmd, check=True, capture_output=True, text=True,
                              cwd=Path(__file__).resolve().parents[1],
                              env={**os.environ, **VARIANT_ENV.get(variant, {})})
        results.append(json.loads(done.stdout.strip().splitlines()[-1]))
        print(_row(results[-1], a.commits), file=sys.stderr, flush=True)  # each as it ends: a long run shows progress
    print(f"\n{a.commits} commits x {a.tables} table(s), {a.rows} rows per data file, reopened every "
          f"{a.reopen_every} commits\n")
    print("| variant | RSS at 10% MB | RSS at end MB | slope KB/commit (after 10%) | ms/commit |")
    print("|---|---:|---:|---:|---:|")
    for r in results:
        print(_row(r, a.commits))
    return 0


def _row(r: dict[str, Any], commits: int) -> str:
    pts = [(c, m) for c, m in r["samples"] if c >= commits // 10]
    return (f"| {r['variant']} | {pts[0][1]:.0f} | {pts[-1][1]:.0f} | {1024 * _slope(pts):.1f} "
            f"| {1000 * r['seconds'] / commits:.1f} |")


if __name__ == "__main__":
    sys.exit(main())
