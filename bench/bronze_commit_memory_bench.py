"""Memory of capture's bronze commit path (not a test): does a process grow per Delta commit?

``python -m bench.bronze_commit_memory_bench [--commits 1500] [--rows 50] [--tables 1]
[--variants kept,reopened] [--reopen-every 100,500] [--repeats 2]``

Capture commits once per ``commit_interval_ms`` to every bronze table that got rows, through a
`DeltaTable` it keeps open (`bronze.writer`: a write transaction of the staged files' add
actions, then ``update_incremental``). This harness repeats exactly that, with bronze-shaped data
files written by `bronze.data_files.OpenDataFile`, in a fresh process per variant with delta-rs's
allocator set as capture sets it (`bronze.delta_allocator`), and samples the process's RSS every
``--sample-every`` commits:

* ``kept``: one `DeltaTable` per table for the whole run, never opened afresh;
* ``reopened``: the table kept open by `bronze.kept_table.KeptTable`, opened afresh every N
  commits, one run per N of ``--reopen-every`` (what the writer does for bronze and offsets
  tables, with N = `bronze.kept_table.REOPEN_EVERY`);
* ``new table``: every N commits the commits go to a new table (the same work
  per commit on a table that stays small: separates growth with the table's file count from
  growth per commit);
* ``files only``: the data files are written but nothing is committed (the Parquet side alone);
* ``kept + malloc_trim``: as ``kept``, and glibc's ``malloc_trim(0)`` after every commit round
  (does glibc hold freed memory it could give back?);
* ``kept + MALLOC_ARENA_MAX=2``: as ``kept`` in a process with at most two glibc malloc arenas
  (does fragmentation across the arenas of delta-rs's tokio threads grow the process?);

* ``kept + jemalloc's own decay``: as ``kept`` with delta-rs's jemalloc keeping freed pages for
  its default ten seconds (``_RJEM_MALLOC_CONF`` empty, where capture sets
  ``dirty_decay_ms:0,muzzy_decay_ms:0``);
* ``kept + no checkpoints``: as ``kept`` without the post-commit checkpoint every 100 versions.

``--variants`` picks some of them (comma-separated); ``--repeats`` runs them all that many times,
round after round.

It prints a table: RSS after the first tenth of the commits, at the end, the least-squares slope
in KB per commit over the commits after the first tenth, ms per commit, and the machine's 1-minute
load average when the run started and ended (the machine may be shared).
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
            "kept + jemalloc's own decay", "kept + no checkpoints")
PER_N = ("reopened", "new table")
"""Variants run once per N of ``--reopen-every``."""
VARIANT_ENV = {"kept + MALLOC_ARENA_MAX=2": {"MALLOC_ARENA_MAX": "2"},
               "kept + jemalloc's own decay": {"_RJEM_MALLOC_CONF": ""}}


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
    from bronze.delta_allocator import configure_delta_allocator

    configure_delta_allocator()  # before delta-rs loads, as the CLI does (a variant's own value wins)
    import psutil
    from deltalake import DeltaTable
    from deltalake.schema import Schema as DeltaSchema
    from deltalake.transaction import PostCommitHookProperties, create_table_with_add_actions

    from bronze.data_files import TABLE_CONFIGURATION, OpenDataFile, TableLocation
    from bronze.kept_table import KeptTable
    from bronze.schema import BRONZE_SCHEMA

    me = psutil.Process()
    hooks = PostCommitHookProperties(create_checkpoint=False) if variant == "kept + no checkpoints" else None
    trim = ctypes.CDLL(ctypes.util.find_library("c")).malloc_trim if variant == "kept + malloc_trim" else None
    def paths_of(generation: int) -> list[str]:
        return [str(workdir / f"t{i}-{generation}") for i in range(tables)]

    paths = paths_of(0)
    open_tables: dict[str, KeptTable] = {}
    load_start = os.getloadavg()[0]
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
            kept = open_tables.get(path)
            if kept is None:
                kept = open_tables[path] = KeptTable(path, reopen_every=reopen_every if variant == "reopened" else None)
            table = kept.get()
            assert isinstance(table, DeltaTable)
            table.create_write_transaction([add], "append", BRONZE_SCHEMA, post_commithook_properties=hooks)
            table.update_incremental()
            kept.committed()
        if trim is not None:
            trim(0)
        if batch % sample_every == 0:
            samples.append((batch, me.memory_info().rss / 2**20))
    label = f"{variant} every {reopen_every}" if variant in PER_N else variant
    return {"variant": label, "samples": samples, "seconds": time.perf_counter() - started,
            "load": [load_start, os.getloadavg()[0]]}


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
    p.add_argument("--reopen-every", default="100",
                   help="N for the reopened and new-table variants, comma-separated (one run per N)")
    p.add_argument("--repeats", type=int, default=1, help="run every variant this many times")
    p.add_argument("--sample-every", type=int, default=50)
    p.add_argument("--variants", default=",".join(VARIANTS), help="comma-separated, of: " + ", ".join(VARIANTS))
    p.add_argument("--variant", choices=VARIANTS, help=argparse.SUPPRESS)  # the child's own run
    a = p.parse_args(argv)
    chosen = [v.strip() for v in a.variants.split(",") if v.strip()]
    unknown = [v for v in chosen if v not in VARIANTS]
    if unknown:
        p.error(f"unknown variant(s) {', '.join(unknown)}; choose from {', '.join(VARIANTS)}")
    try:
        every = [int(n) for n in a.reopen_every.split(",") if n.strip()]
    except ValueError:
        p.error(f"--reopen-every: {a.reopen_every!r} is not a comma-separated list of whole numbers")
    if not every or min(every) < 1:
        p.error(f"--reopen-every: {a.reopen_every!r}: give one or more numbers of at least 1")
    if a.variant is not None:
        with tempfile.TemporaryDirectory(prefix="bronze-commit-mem-") as tmp:
            out = run_variant(a.variant, a.commits, a.rows, a.tables, every[0], a.sample_every, Path(tmp))
        print(json.dumps(out))
        return 0
    runs = [(v, n) for v in chosen for n in (every if v in PER_N else [every[0]])]
    results = []
    for _ in range(a.repeats):
        for variant, n in runs:  # a fresh process each: allocators do not carry over
            cmd = [sys.executable, "-m", "bench.bronze_commit_memory_bench", "--variant", variant,
                   f"--reopen-every={n}",
                   *(f"--{k.replace('_', '-')}={v}" for k, v in vars(a).items()
                     if k not in ("variant", "variants", "reopen_every", "repeats"))]
            done = subprocess.run(cmd, check=True, capture_output=True, text=True,
                                  cwd=Path(__file__).resolve().parents[1],
                                  env={**os.environ, **VARIANT_ENV.get(variant, {})})
            results.append(json.loads(done.stdout.strip().splitlines()[-1]))
            print(_row(results[-1], a.commits), file=sys.stderr, flush=True)  # each as it ends: shows progress
    print(f"\n{a.commits} commits x {a.tables} table(s), {a.rows} rows per data file, {a.repeats} repeat(s)\n")
    print("| variant | RSS at 10% MB | RSS at end MB | slope KB/commit (after 10%) | ms/commit | load start/end |")
    print("|---|---:|---:|---:|---:|---:|")
    for r in results:
        print(_row(r, a.commits))
    return 0


def _row(r: dict[str, Any], commits: int) -> str:
    pts = [(c, m) for c, m in r["samples"] if c >= commits // 10]
    return (f"| {r['variant']} | {pts[0][1]:.0f} | {pts[-1][1]:.0f} | {1024 * _slope(pts):.1f} "
            f"| {1000 * r['seconds'] / commits:.1f} | {r['load'][0]:.1f} / {r['load'][1]:.1f} |")


if __name__ == "__main__":
    sys.exit(main())
