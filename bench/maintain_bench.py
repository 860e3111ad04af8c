"""What ``cdc-lakehouse maintain`` buys on a bronze table written in many small commits.

Writes a bronze-shaped table (the bronze schema and table configuration) of ``--commits``
commits of ``--rows`` rows each with delta-rs, as a capture committing every
``commit_interval_ms`` would, then runs `pipelines.maintenance.run.maintain` with a 0-hour
VACUUM retention (no silver table reads it). Measured before and after: data files, bytes,
the time to open the table and list its files with their ``seq`` statistics (what silver's
incremental runner does before every increment, `silver.bronze_reader.bronze_files`) and the
time to read every row with delta-rs; and how long maintain took. Prints a markdown table.

    .venv/bin/python -m bench.maintain_bench --commits 2000 --rows 20
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import tempfile
import time
from pathlib import Path

import pyarrow as pa
from deltalake import DeltaTable, write_deltalake

from bronze.data_files import TABLE_CONFIGURATION
from bronze.schema import BRONZE_SCHEMA
from pipelines.config import parse_pipeline
from pipelines.maintenance.run import maintain, targets
from silver.bronze_reader import bronze_files

TOPIC = "bench.public.t"


def _batch(first_seq: int, rows: int, batch: int) -> pa.Table:
    now = dt.datetime.now(dt.UTC)
    seqs = list(range(first_seq, first_seq + rows))
    values = [json.dumps({"before": None, "after": {"id": s % 5000, "v": "x" * 40}, "op": "u"}) for s in seqs]
    return pa.Table.from_pydict({
        "key": [json.dumps({"id": s % 5000}) for s in seqs], "value": values, "op": ["u"] * rows, "seq": seqs,
        "position": [json.dumps({"lsn": s}) for s in seqs], "schema_id": ["s1"] * rows, "headers": [None] * rows,
        "ingested_at": [now] * rows, "batch": [batch] * rows}, schema=BRONZE_SCHEMA)


def _measure(path: str, repeat: int = 3) -> tuple[int, int, float, float]:
    plan, read = [], []
    for _ in range(repeat):
        t0 = time.perf_counter()
        files = bronze_files(path)
        plan.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        DeltaTable(path).to_pyarrow_table()
        read.append(time.perf_counter() - t0)
    assert files is not None
    actions = pa.table(DeltaTable(path).get_add_actions(flatten=True))
    return len(files.files), sum(actions.column("size_bytes").to_pylist()), min(plan), min(read)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--commits", type=int, default=2000)
    ap.add_argument("--rows", type=int, default=20)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "lake"
        path = str(root / "bronze" / TOPIC)
        for i in range(args.commits):
            write_deltalake(path, _batch(1 + i * args.rows, args.rows, i + 1), mode="append",
                            configuration=TABLE_CONFIGURATION if i == 0 else None)
        cfg = parse_pipeline(f'pipeline: bench\nlakehouse: {{root: "{root}"}}\nsources:\n'
                             "  - {name: bench, connector: postgres}\nmaintenance: {vacuum_retention_hours: 0}\n",
                             env={})
        before = _measure(path)
        t0 = time.perf_counter()
        (report,) = maintain(cfg, targets(cfg, tables=[TOPIC]))
        took = time.perf_counter() - t0
        after = _measure(path)
        print(f"bronze table: {args.commits} commits of {args.rows} rows ({args.commits * args.rows:,} rows)\n")
        print("| | data files | bytes | open + list files with seq stats (s) | read all rows (s) |")
        print("| --- | --- | --- | --- | --- |")
        for name, (files, size, plan, read) in (("before maintain", before), ("after maintain", after)):
            print(f"| {name} | {files:,} | {size:,} | {plan:.3f} | {read:.3f} |")
        print(f"\nmaintain took {took:.1f} s: compacted {report.compacted[0]} files into {report.compacted[1]}, "
              f"vacuumed {report.vacuumed} files")


if __name__ == "__main__":
    main()
