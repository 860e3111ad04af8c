"""What a Sail server keeps per request (not a test): server RSS over many identical requests.

``python -m bench.sail_query_memory_bench [--requests 900] [--variants ...]``

Each variant starts a Sail server child process (`pipelines.sail_process`, the settings a run
uses, Parquet caches off so that they do not count), sends ``--requests`` requests through
Spark Connect, samples the server's RSS every 25 and prints the growth per request after the
first 50 (the server's warm-up). A server that keeps nothing per request stays flat.

Variants:

* ``range count``: ``spark.range(1000).where(...).count()``: one ExecutePlan, no data source;
* ``range count (new session every 50)``: the same, with the session released (``stop``) and a
  new one made every 50 requests: what stays is not the session's;
* ``range collect``: ``spark.range(1).collect()``;
* ``sql``: ``spark.sql("SELECT 1")`` alone (one ExecutePlan of a SQL command, nothing collected);
* ``sql collect``: ``spark.sql(...).collect()`` of a small query over ``range(10)`` (how silver runs
  its MERGE statements);
* ``schema only``: ``spark.read.format("delta").load(path).schema``: one AnalyzePlan;
* ``delta count (same version)``: a filtered count of a small Delta table that does not change;
* ``delta count (new version)``: the same after a delta-rs commit of 50 rows before each request
  (what silver does: every pass reads a newer bronze version).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

if not __package__:  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

VARIANTS = ("range count", "range count (new session every 50)", "range collect", "sql", "sql collect",
            "schema only", "delta count (same version)", "delta count (new version)")
CACHES_OFF = {"SAIL_PARQUET__FILE_METADATA_CACHE__TYPE": "none", "SAIL_PARQUET__FILE_STATISTICS_CACHE__TYPE": "none"}


def _batch(i: int, n: int = 50) -> Any:
    import pyarrow as pa

    return pa.table({"seq": pa.array(range(i * n, i * n + n), pa.int64()),
                     **{f"c{c}": pa.array([f"v{c} {j}" for j in range(n)]) for c in range(8)}})


def run_variant(name: str, requests: int, root: str) -> list[tuple[int, float]]:
    """(requests sent, server RSS MB) every 25 requests."""
    from deltalake import write_deltalake
    from pyspark.sql import SparkSession

    from pipelines.sail_process import start_sail_child

    path = f"{root}/t"
    write_deltalake(path, _batch(0), mode="append")
    saved = {k: os.environ.get(k) for k in CACHES_OFF}
    os.environ.update(CACHES_OFF)
    try:
        child = start_sail_child()
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    samples: list[tuple[int, float]] = []
    try:
        spark = SparkSession.Builder().remote(child.url).create()
        spark.range(3).count()
        request: Callable[[Any, int], object] = {
            "range count": lambda s, i: s.range(1000).where("id % 7 = 3").count(),
            "range count (new session every 50)": lambda s, i: s.range(1000).where("id % 7 = 3").count(),
            "range collect": lambda s, i: s.range(1).collect(),
            "sql": lambda s, i: s.sql("SELECT 1"),
            "sql collect": lambda s, i: s.sql("SELECT id, id * 2 AS b, concat('x', id) AS c FROM range(10) "
                                              "WHERE id % 3 = 1 AND id > 0").collect(),
            "schema only": lambda s, i: s.read.format("delta").load(path).schema,
            "delta count (same version)": lambda s, i: s.read.format("delta").load(path).where("seq % 7 = 3").count(),
            "delta count (new version)": lambda s, i: (
                write_deltalake(path, _batch(i), mode="append"),
                s.read.format("delta").load(path).where("seq % 7 = 3").count()),
        }[name]
        for i in range(1, requests + 1):
            request(spark, i)
            if name.endswith("every 50)") and i % 50 == 0:
                spark.stop()
                spark = SparkSession.Builder().remote(child.url).create()
            if i % 25 == 0:
                samples.append((i, (child.rss_bytes() or 0) / 2**20))
        spark.stop()
    finally:
        child.stop()
    return samples


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.sail_query_memory_bench",
                                description=__doc__.split("\n", 1)[0])
    p.add_argument("--requests", type=int, default=900)
    p.add_argument("--variants", default=",".join(VARIANTS), help="comma-separated, of: " + ", ".join(VARIANTS))
    a = p.parse_args(argv)
    chosen = [v.strip() for v in a.variants.split(",") if v.strip()]
    unknown = [v for v in chosen if v not in VARIANTS]
    if unknown:
        p.error(f"unknown variant(s) {', '.join(unknown)}; choose from {', '.join(VARIANTS)}")
    if a.requests < 100:
        p.error("--requests must be at least 100")
    rows = []
    for name in chosen:  # each its own server process
        with tempfile.TemporaryDirectory(prefix="sail-query-mem-") as tmp:
            samples = run_variant(name, a.requests, tmp)
        (n0, mb0), (n1, mb1) = samples[1], samples[-1]
        rows.append(f"| {name} | {mb0:.1f} | {mb1:.1f} | {1024 * (mb1 - mb0) / (n1 - n0):.1f} |")
        print(rows[-1], file=sys.stderr, flush=True)
    print(f"\n{a.requests} requests per variant, a Sail server process each (Parquet caches off); "
          f"load average {os.getloadavg()[0]:.1f} at the end\n")
    print("| variant | server RSS after 50 requests MB | at the end MB | KB per request (after 50) |")
    print("|---|---:|---:|---:|")
    print("\n".join(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
