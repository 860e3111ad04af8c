"""Memory and time of committing a capture's offsets, one commit per batch (not a test).

``python -m bench.offsets_commit_memory_bench [--commits 1000] [--variants path,kept,kept100]``

Each variant runs in a fresh process with delta-rs's allocator settings (`bronze.delta_allocator`),
appends ``--commits`` offsets rows (the bronze writer's row and commit metadata) to a local
offsets table (``delta.checkpointInterval`` 10, as capture creates it) and samples the process's
RSS every 100 commits:

* ``path``: ``write_deltalake`` by path (the log loaded from its last checkpoint every commit);
* ``kept``: ``write_deltalake`` on one `DeltaTable` kept open for the whole run;
* ``kept100``: the same, the table opened afresh every 100 commits (what `bronze.writer` does).

Prints RSS at commit 100 and at the end, the growth in KB per commit between them and ms per commit.
"""

from __future__ import annotations

import argparse
import datetime as dt
import subprocess
import sys
import tempfile
import time

import orjson

VARIANTS = ("path", "kept", "kept100")


def _child(variant: str, commits: int) -> dict[str, float]:
    from bronze.delta_allocator import configure_delta_allocator

    configure_delta_allocator()
    import psutil
    import pyarrow as pa
    from deltalake import CommitProperties, DeltaTable, Transaction, write_deltalake

    from bronze.schema import OFFSETS_CONFIGURATION, OFFSETS_SCHEMA

    folder = tempfile.mkdtemp(prefix="cdc-offsets-bench-")

    def row(i: int) -> pa.Table:
        return pa.Table.from_pydict(
            {"batch": [i], "offset": [orjson.dumps({"lsn": i * 1000}).decode()], "snapshot_completed": [True],
             "topics": [["p.public.t"]], "records": [1000], "committed_at": [dt.datetime.now(dt.UTC)]},
            schema=OFFSETS_SCHEMA)

    write_deltalake(folder, row(0), mode="append", configuration=OFFSETS_CONFIGURATION)
    table = DeltaTable(folder)
    process = psutil.Process()
    rss: dict[int, float] = {}
    started = time.perf_counter()
    for i in range(1, commits + 1):
        props = CommitProperties(custom_metadata={"cdc.batch": str(i)},
                                 app_transactions=[Transaction(app_id="p", version=i)])
        if variant == "path":
            write_deltalake(folder, row(i), mode="append", commit_properties=props)
        else:
            if variant == "kept100" and i % 100 == 0:
                table = DeltaTable(folder)
            write_deltalake(table, row(i), mode="append", commit_properties=props)
        if i % 100 == 0:
            rss[i] = process.memory_info().rss / 1e6
    seconds = time.perf_counter() - started
    first, last = min(rss), max(rss)
    return {"rss_first": rss[first], "rss_last": rss[last],
            "kb_per_commit": (rss[last] - rss[first]) * 1000 / max(last - first, 1),
            "ms_per_commit": seconds / commits * 1000}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--commits", type=int, default=1000)
    parser.add_argument("--variants", default=",".join(VARIANTS))
    parser.add_argument("--child", choices=VARIANTS, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(orjson.dumps(_child(args.child, args.commits)).decode())
        return
    print(f"| variant | RSS at commit 100 (MB) | RSS at commit {args.commits:,} (MB) | KB per commit | ms per commit |")
    print("|---|---:|---:|---:|---:|")
    for variant in args.variants.split(","):
        out = subprocess.run([sys.executable, "-m", "bench.offsets_commit_memory_bench", "--child", variant,
                              "--commits", str(args.commits)], capture_output=True, text=True, check=True).stdout
        r = orjson.loads(out.strip().splitlines()[-1])
        print(f"| {variant} | {r['rss_first']:.0f} | {r['rss_last']:.0f} | {r['kb_per_commit']:.1f} | "
              f"{r['ms_per_commit']:.1f} |", flush=True)


if __name__ == "__main__":
    main()
