"""What Sail's Parquet caches keep per file read (not a test): server RSS after reading new files.

``python -m bench.sail_cache_bench [--files 1500] [--sets 3] [--variants ...]``

A looping silver run reads new Parquet files all the time (bronze files per capture commit, the
files every MERGE and pass write), most of them once. This harness writes ``--sets`` folders of
``--files`` small Parquet files (10 columns, 200 rows, page index: about a bronze file's shape),
starts a Sail server child process (`pipelines.sail_process`) per variant with the variant's
environment, reads each folder once through Spark Connect (a filter that makes Sail open every
file), then all of them again, and prints the server's RSS after each read and the growth per
file from the second folder on (the first one includes the server's warm-up).

Variants (the server's environment; the cache settings of `pipelines.sail_caches` are removed
first, so that ``sail defaults`` is Sail's own):

* ``sail defaults``: metadata cache without a size limit, statistics cache 10,000 entries, both
  kept 30 minutes;
* ``caches off``: both caches off (``none``);
* ``pipeline defaults``: `pipelines.sail_caches.SAIL_CACHE_ENV` (what a run uses).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

if not __package__:  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pipelines.sail_caches import SAIL_CACHE_ENV

VARIANTS: dict[str, dict[str, str]] = {
    "sail defaults": {},
    "caches off": {"SAIL_PARQUET__FILE_METADATA_CACHE__TYPE": "none",
                   "SAIL_PARQUET__FILE_STATISTICS_CACHE__TYPE": "none"},
    "pipeline defaults": dict(SAIL_CACHE_ENV),
}


def write_sets(root: Path, sets: int, files: int) -> list[Path]:
    """``sets`` folders of ``files`` small Parquet files each (distinct paths: nothing is cached yet)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    out = []
    n = 200
    for s in range(sets):
        folder = root / f"set{s}"
        folder.mkdir(parents=True)
        for i in range(files):
            base = (s * files + i) * n
            table = pa.table({"seq": pa.array(range(base, base + n), pa.int64()), "op": pa.array(["u"] * n),
                              "key": pa.array([f"k{j}" for j in range(n)]),
                              **{f"c{c}": pa.array([f"payload {c} {j}" for j in range(n)]) for c in range(7)}})
            pq.write_table(table, folder / f"part-{i:05d}.parquet", write_page_index=True)
        out.append(folder)
    return out


def run_variant(name: str, folders: list[Path]) -> list[float]:
    """Server RSS in MB: after start, after reading each folder, after reading all again."""
    from pyspark.sql import SparkSession

    from pipelines.sail_process import start_sail_child

    saved = dict(os.environ)
    for key in SAIL_CACHE_ENV:
        os.environ.pop(key, None)
    os.environ.update(VARIANTS[name])
    try:
        child = start_sail_child()
    finally:
        os.environ.clear()
        os.environ.update(saved)

    def rss() -> float:
        time.sleep(2)  # let the server settle (moka evicts on its next maintenance)
        return (child.rss_bytes() or 0) / 2**20

    try:
        spark = SparkSession.Builder().remote(child.url).create()
        spark.range(10).count()
        out = [rss()]
        for folder in folders:
            spark.read.parquet(str(folder)).where("seq % 7 = 3").count()
            out.append(rss())
        for folder in folders:
            spark.read.parquet(str(folder)).where("seq % 7 = 3").count()
        out.append(rss())
        spark.stop()
    finally:
        child.stop()
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.sail_cache_bench", description=__doc__.split("\n", 1)[0])
    p.add_argument("--files", type=int, default=1500, help="Parquet files per folder")
    p.add_argument("--sets", type=int, default=3, help="folders, each read once (at least 2)")
    p.add_argument("--variants", default=",".join(VARIANTS), help="comma-separated, of: " + ", ".join(VARIANTS))
    a = p.parse_args(argv)
    chosen = [v.strip() for v in a.variants.split(",") if v.strip()]
    unknown = [v for v in chosen if v not in VARIANTS]
    if unknown:
        p.error(f"unknown variant(s) {', '.join(unknown)}; choose from {', '.join(VARIANTS)}")
    if a.sets < 2 or a.files < 1:
        p.error("--sets must be at least 2 and --files positive")
    rows = []
    with tempfile.TemporaryDirectory(prefix="sail-cache-") as tmp:
        print(f"writing {a.sets} x {a.files:,} Parquet files", file=sys.stderr, flush=True)
        folders = write_sets(Path(tmp), a.sets, a.files)
        for name in chosen:  # each its own server process
            mb = run_variant(name, folders)
            per_file = 1024 * (mb[-2] - mb[1]) / (a.files * (a.sets - 1))
            reads = " | ".join(f"{x:.0f}" for x in mb[1:-1])
            rows.append(f"| {name} | {mb[0]:.0f} | {reads} | {mb[-1]:.0f} | {per_file:.1f} |")
            print(rows[-1], file=sys.stderr, flush=True)
    print(f"\n{a.sets} folders of {a.files:,} Parquet files (10 columns, 200 rows), each read once, then all "
          f"again; load average {os.getloadavg()[0]:.1f} at the end\n")
    heads = " | ".join(f"after folder {s + 1} MB" for s in range(a.sets))
    print(f"| variant | server RSS at start MB | {heads} | after reading all again MB "
          "| KB per new file (after folder 1) |")
    print("|---|---:|" + "---:|" * a.sets + "---:|---:|")
    print("\n".join(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
