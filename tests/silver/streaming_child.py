"""Runs the Structured Streaming driver on classic Spark in a fresh interpreter (see test_streaming).

pyspark cannot start a classic (JVM) session in a process that already made Spark Connect
sessions, so the test runs this script in a subprocess. Prints one JSON line with what the
recorded apply function saw and the progress records.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import sys

import pyarrow as pa
import pyarrow.parquet as pq
from pyspark.sql.types import StructType

from bronze.schema import BRONZE_SCHEMA, topic_path
from pipelines.engine import EngineSpec, _classic_session, stop_session
from silver.context import ApplyResult
from silver.declarations import SilverOptions, SilverTable
from silver.progress import Progress
from silver.streaming import StreamSettings, start_stream

TOPIC = "shop.public.t"
SCHEMA = {"type": "struct", "fields": [
    {"name": n, "type": t, "nullable": nullable, "metadata": {}} for n, t, nullable in [
        ("key", "string", True), ("value", "string", True), ("op", "string", True), ("seq", "long", False),
        ("position", "string", False), ("schema_id", "string", True),
        ("headers", {"type": "map", "keyType": "string", "valueType": "string", "valueContainsNull": True}, True),
        ("ingested_at", "timestamp", False), ("batch", "long", False)]]}


class MemoryProgress:
    def __init__(self) -> None:
        self.records: dict[str, Progress] = {}

    def read(self, table: str) -> Progress | None:
        return self.records.get(table)

    def write(self, progress: Progress) -> None:
        self.records[progress.table] = progress


def bronze_file(root: str, name: str, seqs: list[int]) -> None:
    now = dt.datetime.now(dt.UTC)
    rows = [{"key": f'{{"id":{s}}}', "value": "{}", "op": "c", "seq": s, "position": "{}", "schema_id": "v1",
             "headers": None, "ingested_at": now, "batch": 1} for s in seqs]
    os.makedirs(topic_path(root, TOPIC), exist_ok=True)
    pq.write_table(pa.Table.from_pylist(rows, schema=BRONZE_SCHEMA), f"{topic_path(root, TOPIC)}/{name}.parquet")


def main(workdir: str) -> None:
    root = f"{workdir}/lake"
    spark = _classic_session(EngineSpec(kind="spark", conf={"spark.sql.shuffle.partitions": "2"}), with_delta=False)
    seen: list[dict[str, object]] = []
    store = MemoryProgress()

    def record(ctx, decl, target, batch, *, expected_keys=None):  # type: ignore[no-untyped-def]
        seqs = sorted(r["seq"] for r in batch.select("seq").collect())
        seen.append({"run_id": ctx.run_id, "seqs": seqs, "expected_keys": expected_keys,
                     "target": target.location})
        return ApplyResult(events=len(seqs), max_seq=max(seqs), keys=("id",))

    settings = StreamSettings(checkpoint_location=f"{workdir}/ckpt", source_format="parquet")
    decl = SilverTable(table="t", source=TOPIC)
    try:
        for name, seqs in (("a", [1, 2, 3]), ("b", [4, 5])):
            bronze_file(root, name, seqs)
            query = start_stream(spark, root=root, decl=decl, source="shop", options=SilverOptions(),
                                 settings=settings, apply_fn=record, bronze_schema=StructType.fromJson(SCHEMA),
                                 progress_store=store)
            query.awaitTermination(300)
            assert query.exception() is None, query.exception()
    finally:
        stop_session(spark)
    print(json.dumps({"seen": seen, "last_seq": store.records["t"].last_seq,
                      "checkpoint": sorted(os.listdir(f"{workdir}/ckpt"))}))


if __name__ == "__main__":
    main(sys.argv[1])
