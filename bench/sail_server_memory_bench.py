"""Memory of the Sail server process alone over silver passes (not a test): does it grow per pass?

``python -m bench.sail_server_memory_bench [--passes 120] [--rows 250] [--keys 10000] [--variants ...]``

A looping ``run`` starts the Sail server as a child process (`pipelines.sail_process`) and runs a
silver pass every ``interval_seconds`` on bronze that gains a commit a second. This harness does
the same without capture: for each variant, a fresh bronze topic of ``--keys`` inserts (delta-rs,
`bench.silver_data`), a Sail server child started with the variant's environment, one Spark
Connect session, then ``--passes`` times: append ``--rows`` updates/deletes to bronze (one commit)
and run one silver pass (`run_silver` with that session, the runner's own code). The server
process's RSS is sampled every ``--sample-every`` passes; it prints RSS after the first tenth,
at the end, the least-squares slope in KB per pass after the first tenth, and seconds per pass.

Variants (environment of the server process, on top of `pipelines.sail_memory`'s defaults):

* ``default``: what a run uses (``MIMALLOC_PURGE_DELAY=0``, ``MIMALLOC_ALLOW_THP=0``);
* ``purge decommits``: ``MIMALLOC_PURGE_DECOMMITS=1``, which is already mimalloc's default in
  pysail 0.7 (``MIMALLOC_VERBOSE=1`` lists the options): a second run of ``default``, for the noise;
* ``reclaim on free``: ``MIMALLOC_PAGE_RECLAIM_ON_FREE=1``: a page abandoned by a thread that
  exited (tokio's blocking threads come and go) is taken back by the thread that frees into it;
* ``no full retain``: ``MIMALLOC_PAGE_FULL_RETAIN=0``: a thread keeps no full pages of its own;
* ``parallelism 1``: Sail's ``execution.default_parallelism`` 1 (``SAIL_EXECUTION__DEFAULT_PARALLELISM``;
  fewer partitions: fewer concurrent tasks and buffers per pass);
* ``no arena eager commit``: ``MIMALLOC_ARENA_EAGER_COMMIT=0``;
* ``glibc arenas 2``: ``MALLOC_ARENA_MAX=2`` (glibc's allocator, for what is not mimalloc's).
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile
import time
from pathlib import Path

if not __package__:  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

VARIANTS: dict[str, dict[str, str]] = {
    "default": {},
    "purge decommits": {"MIMALLOC_PURGE_DECOMMITS": "1"},
    "reclaim on free": {"MIMALLOC_PAGE_RECLAIM_ON_FREE": "1"},
    "no full retain": {"MIMALLOC_PAGE_FULL_RETAIN": "0"},
    "parallelism 1": {"SAIL_EXECUTION__DEFAULT_PARALLELISM": "1"},
    "no arena eager commit": {"MIMALLOC_ARENA_EAGER_COMMIT": "0"},
    "glibc arenas 2": {"MALLOC_ARENA_MAX": "2"},
}


def run_variant(name: str, passes: int, rows: int, keys: int, sample_every: int,
                root: str) -> tuple[list[tuple[int, float]], float]:
    """One variant: its (pass, server RSS MB) samples and seconds per pass."""
    from deltalake import write_deltalake
    from pyspark.sql import SparkSession

    from bench.silver_data import SOURCE, TOPIC, bronze_batch, register_schema
    from bronze.schema import topic_path
    from pipelines.engine import EngineSpec
    from pipelines.sail_process import start_sail_child
    from pipelines.silver_runner import run_silver
    from silver.declarations import SilverOptions, SilverTable

    register_schema(root)
    rng = random.Random(7)
    write_deltalake(topic_path(root, TOPIC), bronze_batch(1, keys, keys, fresh_keys=True, rng=rng, batch=1),
                    mode="append")
    saved = {k: os.environ.get(k) for k in VARIANTS[name]}
    os.environ.update(VARIANTS[name])
    try:
        child = start_sail_child()
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    samples: list[tuple[int, float]] = []
    seq = keys + 1
    try:
        spark = SparkSession.Builder().remote(child.url).config("spark.sql.session.timeZone", "UTC").create()
        table = SilverTable(table="items", source=TOPIC)
        started = time.perf_counter()
        for p in range(1, passes + 1):
            write_deltalake(topic_path(root, TOPIC),
                            bronze_batch(seq, rows, keys, fresh_keys=False, rng=rng, batch=p + 1), mode="append")
            seq += rows
            result = run_silver(root=root, engine=EngineSpec(), tables=[table], options=SilverOptions(),
                                sources={SOURCE: SOURCE}, once=True, spark=spark)
            if not result.ok:
                raise RuntimeError(f"silver failed: {result.errors}")
            if p % sample_every == 0:
                rss = child.rss_bytes()
                samples.append((p, (rss or 0) / 2**20))
        seconds = (time.perf_counter() - started) / passes
        spark.stop()
    finally:
        child.stop()
    return samples, seconds


def _slope(points: list[tuple[int, float]]) -> float:
    n = len(points)
    mx, my = sum(p[0] for p in points) / n, sum(p[1] for p in points) / n
    den = sum((p[0] - mx) ** 2 for p in points)
    return 0.0 if den == 0 else sum((p[0] - mx) * (p[1] - my) for p in points) / den


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.sail_server_memory_bench", description=__doc__.split("\n", 1)[0])
    p.add_argument("--passes", type=int, default=120)
    p.add_argument("--rows", type=int, default=250, help="bronze rows appended before each pass")
    p.add_argument("--keys", type=int, default=10_000)
    p.add_argument("--sample-every", type=int, default=5)
    p.add_argument("--variants", default=",".join(VARIANTS), help="comma-separated, of: " + ", ".join(VARIANTS))
    a = p.parse_args(argv)
    chosen = [v.strip() for v in a.variants.split(",") if v.strip()]
    unknown = [v for v in chosen if v not in VARIANTS]
    if unknown:
        p.error(f"unknown variant(s) {', '.join(unknown)}; choose from {', '.join(VARIANTS)}")
    rows = []
    for name in chosen:  # each its own server process: allocators do not carry over
        with tempfile.TemporaryDirectory(prefix="sail-mem-") as tmp:
            samples, seconds = run_variant(name, a.passes, a.rows, a.keys, a.sample_every, tmp)
        pts = [(n, mb) for n, mb in samples if n >= a.passes // 10]
        rows.append(f"| {name} | {pts[0][1]:.0f} | {pts[-1][1]:.0f} | {1024 * _slope(pts):.0f} | {seconds:.2f} |")
        print(rows[-1], file=sys.stderr, flush=True)
    print(f"\n{a.passes} silver passes of one table, {a.rows} bronze rows appended before each, "
          f"{a.keys:,} keys; load average {os.getloadavg()[0]:.1f} at the end\n")
    print("| variant | server RSS at 10% MB | at end MB | slope KB/pass (after 10%) | s/pass |")
    print("|---|---:|---:|---:|---:|")
    print("\n".join(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
