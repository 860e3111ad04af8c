"""Structured Streaming on classic Spark + Delta over a lakehouse a real capture filled (see
test_streaming). Runs in a fresh interpreter: pyspark cannot start a classic (JVM) session in a
process that made Spark Connect sessions. Prints one JSON line.

Steps, on one session:

1. every Delta table under ``<root>/bronze`` (data, offsets, schema history) gets a delta-rs
   checkpoint; delta-spark must read each with the rows delta-rs reads (protocol, table
   properties and column types are reported);
2. on a copy of the lakehouse whose last offsets row says the snapshot is incomplete, an
   available-now run starts no query;
3. an available-now run streams every table into silver (the test compares with the source);
4. a commit that removes bronze files (what discarding a snapshot writes): the
   next available-now run must stop at it and say to rebuild, leaving silver as it was.
"""

from __future__ import annotations

import datetime as dt
import json
import shutil
import sys
from pathlib import Path

import pyarrow as pa
from deltalake import DeltaTable, write_deltalake

from bronze.schema import OFFSETS_SCHEMA, offsets_path, topic_path
from pipelines.engine import create_session, stop_session
from pipelines.silver_stream import run_streams
from pipelines.validation import load_validated


def _delta_tables(folder: Path) -> list[Path]:
    return sorted(p.parent for p in folder.rglob("_delta_log") if p.is_dir())


def main(config_file: str, report: str) -> None:
    cfg = load_validated(config_file, secrets=False, connectors=False).config
    root = cfg.lakehouse.root
    spark = create_session(cfg.engine)
    out: dict[str, object] = {}
    try:
        tables = {}
        for path in _delta_tables(Path(root) / "bronze"):
            table = DeltaTable(str(path))
            table.create_checkpoint()
            rust = table.to_pyarrow_table()
            df = spark.read.format("delta").load(str(path))
            spark_rows = df.count()
            same = spark_rows == rust.num_rows
            if "seq" in rust.column_names:
                same = same and sorted(r["seq"] for r in df.select("seq").collect()) == sorted(
                    rust.column("seq").to_pylist())
            protocol = table.protocol()
            tables[str(path.relative_to(Path(root) / "bronze"))] = {
                "rows": rust.num_rows, "spark_reads_the_same": same,
                "protocol": [protocol.min_reader_version, protocol.min_writer_version],
                "configuration": table.metadata().configuration,
                "spark_types": {f.name: f.dataType.simpleString() for f in df.schema.fields},
            }
        out["bronze"] = tables

        copy = f"{root}-incomplete"
        shutil.copytree(root, copy)
        last = max(DeltaTable(offsets_path(copy, "pg")).to_pyarrow_table(columns=["batch"]).column("batch")
                   .to_pylist())
        write_deltalake(offsets_path(copy, "pg"), pa.Table.from_pydict(
            {"batch": [last + 1], "offset": ['{"lsn": 1, "snapshot": true}'], "snapshot_completed": [False],
             "topics": [[]], "records": [0], "committed_at": [dt.datetime.now(dt.UTC)]}, schema=OFFSETS_SCHEMA),
            mode="append")
        gated = run_streams(root=copy, engine=cfg.engine, tables=cfg.silver, options=cfg.silver_options,
                            sources={"pg": "pg"}, trigger="available_now", spark=spark, progress=print)
        out["incomplete_snapshot"] = {"started": gated.started, "waiting": gated.waiting}

        lines: list[str] = []
        first = run_streams(root=root, engine=cfg.engine, tables=cfg.silver, options=cfg.silver_options,
                            sources={"pg": "pg"}, trigger="available_now", spark=spark, progress=lines.append)
        out["first"] = {"started": first.started, "errors": first.errors, "lines": lines}

        accounts = DeltaTable(topic_path(root, "pg.public.accounts"))
        batches = sorted(set(accounts.to_pyarrow_table(columns=["batch"]).column("batch").to_pylist()))
        accounts.delete(f"batch >= {batches[-1]}")  # whole files go: a commit of remove actions only
        kept = accounts.to_pyarrow_table(columns=["seq"]).num_rows
        again = run_streams(root=root, engine=cfg.engine, tables=cfg.silver, options=cfg.silver_options,
                            sources={"pg": "pg"}, trigger="available_now", spark=spark, progress=print)
        out["after_remove"] = {"errors": again.errors, "bronze_rows_kept": kept,
                               "last_commit": accounts.history(1)[0].get("operation")}
    finally:
        stop_session(spark)
    Path(report).write_text(json.dumps(out, default=str))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
