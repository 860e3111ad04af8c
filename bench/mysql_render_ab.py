"""Rendering binlog rows into bronze texts, CPU per row, two or more code trees side by side.

Run ``python -m bench.mysql_render_ab --tree /path/to/before --tree .``. No server: each tree's
``stream_blocks.insert_block`` renders the same rows (the bench table of `bench.mysql_workload`:
``id BIGINT`` key, three integers, ``VARCHAR(100)``, ``DECIMAL(12,2)``, ``DATETIME``,
``BOOLEAN``; values as the binlog row decoder returns them, ``Decimal`` and ``datetime``
included) in events of 121 rows, in a child process per tree and round (trees interleaved).
The time is the child's CPU time (``time.process_time``) over the rendering only, the best of
``--repeat`` passes inside the child; so it is the rendering's own work, without reading or
decoding the binlog and without the bronze writer, and it stays readable on a loaded machine.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import statistics
import subprocess
import sys
import time
from decimal import Decimal
from pathlib import Path

CHILD = "bench.mysql_render_ab"
DDL = ("CREATE TABLE bench_rows (id BIGINT PRIMARY KEY, customer_id INT, quantity INT, status SMALLINT, "
       "note VARCHAR(100), amount DECIMAL(12,2), created_at DATETIME, active BOOLEAN)")


def child(rows: int, repeat: int) -> dict[str, float]:
    """Render ``rows`` rows ``repeat`` times in this process (the tree on ``sys.path``)."""
    from cdc_sources.mysql.codec import build_codec
    from cdc_sources.mysql.converters import MySqlConverterSettings
    from cdc_sources.mysql.ddl.schema_model import SchemaModel
    from cdc_sources.mysql.model import TableId
    from cdc_sources.mysql.policy import MySqlFilterPolicy
    from cdc_sources.mysql.stream_blocks import EventTemplates, insert_block

    model = SchemaModel()
    model.apply(DDL, database="bench")
    table = model.table(TableId("bench", "bench_rows"))
    policy, _ = MySqlFilterPolicy.from_options({})
    codec = build_codec(prefix="b", connector="mariadb", table=table, settings=MySqlConverterSettings(),
                        policy=policy, origin="binlog")
    start = dt.datetime(2024, 1, 1)
    images = [{"values": {"id": i, "customer_id": i % 977, "quantity": i % 13, "status": i % 5,
                          "note": f"note {i}", "amount": Decimal(f"{i % 1000000}E-2"),
                          "created_at": start + dt.timedelta(seconds=i), "active": i % 2},
               "none_sources": {}} for i in range(rows)]
    events = [images[i:i + 121] for i in range(0, rows, 121)]
    templates = EventTemplates(('{"version":"x","connector":"mariadb","row":', ',"thread":1}'),
                               ('{"file":"mysql-bin.000002","pos":4,"row":', "}"), (2, 4), {"h": "v"})
    best = float("inf")
    for _ in range(repeat):
        began = time.process_time()
        for event in events:
            insert_block(codec, event, templates)
        best = min(best, time.process_time() - began)
    return {"cpu_s": best}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.mysql_render_ab", description=__doc__.split("\n")[0])
    p.add_argument("--tree", type=Path, action="append", default=None, help="a checkout (repeat; default: here)")
    p.add_argument("--rows", type=int, default=200_000, help="rows rendered per pass")
    p.add_argument("--repeat", type=int, default=5, help="passes per child (the best counts)")
    p.add_argument("--rounds", type=int, default=5, help="children per tree")
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.child:
        print(json.dumps(child(args.rows, args.repeat)))
        return 0
    trees = [t.resolve() for t in (args.tree or [Path(__file__).resolve().parents[1]])]
    here = Path(__file__).resolve()
    runs: dict[Path, list[float]] = {t: [] for t in trees}
    loads = []
    for r in range(args.rounds):
        for tree in trees:
            loads.append(os.getloadavg()[0])
            out = subprocess.run([sys.executable, str(here), "--child", "--rows", str(args.rows), "--repeat",
                                  str(args.repeat)], cwd=tree, env={**os.environ, "PYTHONPATH": str(tree)},
                                 capture_output=True, text=True, check=True)
            runs[tree].append(json.loads(out.stdout)["cpu_s"])
            print(f"round {r + 1} {tree}: {runs[tree][-1]:.3f} s CPU", flush=True)
    print("\n| Tree | Rounds | CPU s best | median | µs per row (best) | Load (1 min) |")
    print("|---|---:|---:|---:|---:|---|")
    for tree, cpu in runs.items():
        print(f"| {tree} | {len(cpu)} | {min(cpu):.3f} | {statistics.median(cpu):.3f} | "
              f"{min(cpu) / args.rows * 1e6:.2f} | {min(loads):.1f}-{max(loads):.1f} |")
    return 0


if __name__ == "__main__":
    if not __package__:  # run as a script (the children): the tree is on PYTHONPATH
        sys.path.insert(0, os.environ.get("PYTHONPATH", "."))
    sys.exit(main())
