"""Silver apply benchmark (not a test): framework vs a hand-written PySpark job on Sail.

Scenario 1: 1,000,000 bronze changes over 250,000 keys (inserts, then updates and deletes),
applied by ``silver --once`` (`pipelines.silver_runner.run_silver`) and by a hand-written job
(dedupe by bronze key and seq, parse the surviving envelopes, MERGE). Each timing starts a
fresh Sail engine, so start-up is included, as a user running either job would see it.

Scenario 2: a silver table of 5,000,000 rows, then an incremental bronze batch of 10,000
changes: reports bronze files read (vs files in the table) and the time.

Usage: python bench/silver_bench.py [--changes N] [--keys K] [--big-rows N] [--dir D] [--skip-big]
"""

from __future__ import annotations

import argparse
import base64
import datetime as dt
import json
import os
import random
import shutil
import tempfile
import time

import pyarrow as pa
from deltalake import write_deltalake

from bronze.schema import BRONZE_SCHEMA, SCHEMAS_SCHEMA, schemas_path, topic_path
from pipelines.engine import EngineSpec, create_session, stop_session
from pipelines.silver_runner import run_silver
from silver.declarations import SilverOptions, SilverTable

SOURCE, TOPIC = "bench", "bench.public.items"
FIELDS = [
    {"type": "int64", "optional": False, "field": "id"},
    {"type": "string", "optional": True, "field": "name"},
    {"type": "bytes", "optional": True, "name": "org.apache.kafka.connect.data.Decimal", "version": 1,
     "parameters": {"scale": "2", "connect.decimal.precision": "12"}, "field": "price"},
    {"type": "int64", "optional": True, "name": "io.debezium.time.MicroTimestamp", "version": 1, "field": "updated_at"},
    {"type": "int32", "optional": True, "field": "qty"},
]
HAND_SCHEMA = ("struct<before:struct<id:bigint>,"
               "after:struct<id:bigint,name:string,price:string,updated_at:bigint,qty:int>,"
               "op:string,source:struct<ts_ms:bigint>>")


def register_schema(root: str) -> None:
    row = {"type": "struct", "optional": True, "name": f"{TOPIC}.Value", "fields": FIELDS}
    env = {"type": "struct", "optional": False, "name": f"{TOPIC}.Envelope", "fields": [
        {**row, "field": "before"}, {**row, "field": "after"},
        {"type": "struct", "optional": False, "field": "source", "fields": [
            {"type": "int64", "optional": False, "field": "ts_ms"}]},
        {"type": "string", "optional": False, "field": "op"}]}
    key = {"type": "struct", "optional": False, "fields": [FIELDS[0]]}
    tbl = pa.Table.from_pylist([{"topic": TOPIC, "schema_id": "v1", "table": "public.items", "primary_key": ["id"],
                                 "key_schema": json.dumps(key), "value_schema": json.dumps(env),
                                 "registered_at": dt.datetime.now(dt.UTC)}], schema=SCHEMAS_SCHEMA)
    write_deltalake(schemas_path(root, SOURCE), tbl, mode="append")


def _dec(n: int) -> str:
    return base64.b64encode(n.to_bytes(max(1, (n.bit_length() + 8) // 8), "big", signed=True)).decode()


def _source(seq: int) -> str:
    return ('{"version":"3.3.1.Final","connector":"postgresql","name":"bench",'
            f'"ts_ms":{1_700_000_000_000 + seq},"snapshot":"false","db":"b","schema":"public","table":"items",'
            f'"txId":{1000 + seq // 10},"lsn":{seq * 16}}}')


def _envelope(op: str, k: int, seq: int) -> str:
    if op == "d":
        before = f'{{"id":{k},"name":null,"price":null,"updated_at":null,"qty":null}}'
        return f'{{"before":{before},"after":null,"source":{_source(seq)},"transaction":null,"op":"d","ts_ms":1}}'
    after = (f'{{"id":{k},"name":"item-{k}-{seq}","price":"{_dec(seq * 7 % 1_000_000)}",'
             f'"updated_at":{1_700_000_000_000_000 + seq},"qty":{seq % 100}}}')
    return f'{{"before":null,"after":{after},"source":{_source(seq)},"transaction":null,"op":"{op}","ts_ms":1}}'


def bronze_batch(first_seq: int, n: int, keys: int, *, fresh_keys: bool, rng: random.Random,
                 batch: int) -> pa.Table:
    """``n`` changes: the first ``keys`` insert new keys when ``fresh_keys``, the rest update/delete."""
    rows_key, rows_val, rows_op = [], [], []
    for i in range(n):
        seq = first_seq + i
        if fresh_keys and i < keys:
            k, op = i, "c"
        else:
            k, op = rng.randrange(keys), ("d" if rng.random() < 0.1 else "u")
        rows_key.append(f'{{"id":{k}}}')
        rows_val.append(_envelope(op, k, seq))
        rows_op.append(op)
    now = dt.datetime.now(dt.UTC)
    return pa.table({
        "key": pa.array(rows_key, pa.large_string()), "value": pa.array(rows_val, pa.large_string()),
        "op": rows_op, "seq": pa.array(range(first_seq, first_seq + n), pa.int64()),
        "position": pa.array(["{}"] * n), "schema_id": pa.array(["v1"] * n),
        "headers": pa.array([None] * n, pa.map_(pa.string(), pa.string())),
        "ingested_at": pa.array([now] * n, pa.timestamp("us", tz="UTC")),
        "batch": pa.array([batch] * n, pa.int64())}, schema=BRONZE_SCHEMA)


def write_bronze(root: str, changes: int, keys: int, *, chunk: int = 250_000) -> None:
    """Inserts of every key first (one commit), then updates/deletes in ``chunk``-row commits."""
    rng = random.Random(7)
    register_schema(root)
    write_deltalake(topic_path(root, TOPIC), bronze_batch(1, keys, keys, fresh_keys=True, rng=rng, batch=1),
                    mode="append")
    for b, start in enumerate(range(keys, changes, chunk)):
        n = min(chunk, changes - start)
        table = bronze_batch(start + 1, n, keys, fresh_keys=False, rng=rng, batch=b + 2)
        write_deltalake(topic_path(root, TOPIC), table, mode="append")


def hand_written(root: str, silver: str) -> float:
    """Dedupe by bronze key and seq, parse the survivors, MERGE (fresh Sail, start-up included)."""
    t0 = time.perf_counter()
    spark = create_session(EngineSpec())
    try:
        from pyspark.sql import Window
        from pyspark.sql import functions as sf

        spark.createDataFrame([], "id bigint, name string, price string, updated_at bigint, qty int, seq bigint") \
            .write.format("delta").mode("overwrite").save(silver)
        bronze = spark.read.format("delta").load(topic_path(root, TOPIC))
        w = Window.partitionBy("key").orderBy(sf.col("seq").desc())
        latest = bronze.withColumn("rn", sf.row_number().over(w)).where("rn = 1")
        parsed = latest.select("seq", sf.from_json("value", HAND_SCHEMA).alias("v"))
        parsed.select("seq", sf.col("v.op").alias("op"), "v.after.*", sf.col("v.before.id").alias("bid")) \
            .withColumn("id", sf.coalesce("id", "bid")).createOrReplaceTempView("changes")
        spark.sql(f"""MERGE INTO delta.`{silver}` t USING changes s ON t.id = s.id
            WHEN MATCHED AND s.op = 'd' THEN DELETE
            WHEN MATCHED THEN UPDATE SET name = s.name, price = s.price, updated_at = s.updated_at, qty = s.qty,
                                         seq = s.seq
            WHEN NOT MATCHED AND s.op <> 'd' THEN INSERT (id, name, price, updated_at, qty, seq)
                 VALUES (s.id, s.name, s.price, s.updated_at, s.qty, s.seq)""").collect()
    finally:
        stop_session(spark)
    return time.perf_counter() - t0


def framework(root: str, label: str) -> float:
    t0 = time.perf_counter()
    result = run_silver(root=root, engine=EngineSpec(), tables=[SilverTable(table="items", source=TOPIC)],
                        options=SilverOptions(), sources={SOURCE: SOURCE}, once=True,
                        progress=lambda line: print(f"  [{label}] {line}"))
    assert result.ok, result.errors
    return time.perf_counter() - t0


def precreate_empty_silver(root: str) -> None:
    """The silver table as the framework would create it, empty: the next run MERGEs."""
    spark = create_session(EngineSpec())
    try:
        spark.createDataFrame([], "id bigint, name string, price decimal(12,2), updated_at timestamp, qty int, "
                                  "_cdc_seq bigint, _cdc_op string, _cdc_ts timestamp") \
            .write.format("delta").save(os.path.join(root, "silver", "items"))
    finally:
        stop_session(spark)


def scenario_1(base: str, changes: int, keys: int) -> None:
    root = os.path.join(base, "s1")
    t = time.perf_counter()
    write_bronze(root, changes, keys)
    print(f"scenario 1: wrote {changes:,} bronze changes over {keys:,} keys in {time.perf_counter() - t:.1f}s")
    timings: dict[str, list[float]] = {"hand-written job": [], "framework --once (creates table)": [],
                                       "framework --once (MERGE into empty table)": []}
    for i in range(2):  # alternate, twice, so machine noise hits both
        timings["hand-written job"].append(hand_written(root, os.path.join(base, f"hand_silver{i}")))
        shutil.rmtree(os.path.join(root, "silver"), ignore_errors=True)
        timings["framework --once (creates table)"].append(framework(root, "framework"))
        shutil.rmtree(os.path.join(root, "silver"), ignore_errors=True)
        precreate_empty_silver(root)
        timings["framework --once (MERGE into empty table)"].append(framework(root, "framework, merge"))
        shutil.rmtree(os.path.join(root, "silver"), ignore_errors=True)
    for name, runs in timings.items():
        best = min(runs)
        print(f"  {name:42s}: best {best:6.2f}s  {changes / best:10,.0f} changes/s  (runs: "
              + ", ".join(f"{r:.2f}s" for r in runs) + ")")


def big_bronze_with_spark(root: str, rows: int, files: int) -> None:
    """``rows`` inserts (keys 0..rows-1) written by Spark in ``files`` commits (fast to generate)."""
    from pyspark.sql import functions as sf

    spark = create_session(EngineSpec())
    try:
        per = rows // files
        for f in range(files):
            ids = spark.range(f * per, (f + 1) * per).withColumnRenamed("id", "k")
            source = sf.format_string('{"version":"3.3.1.Final","connector":"postgresql","name":"bench",'
                                      '"ts_ms":%d,"snapshot":"true","db":"b","schema":"public","table":"items",'
                                      '"txId":1,"lsn":%d}', sf.col("k") + 1_700_000_000_000, sf.col("k"))
            after = sf.format_string('{"id":%d,"name":"item-%d","price":"AQI=","updated_at":%d,"qty":%d}',
                                     "k", "k", sf.col("k") + 1_700_000_000_000_000, sf.col("k") % 100)
            value = sf.format_string('{"before":null,"after":%s,"source":%s,"transaction":null,"op":"r","ts_ms":1}',
                                     after, source)
            ids.select(sf.format_string('{"id":%d}', "k").alias("key"), value.alias("value"),
                       sf.lit("r").alias("op"), (sf.col("k") + 1).alias("seq"), sf.lit("{}").alias("position"),
                       sf.lit("v1").alias("schema_id"),
                       sf.lit(None).cast("map<string,string>").alias("headers"),
                       sf.current_timestamp().alias("ingested_at"), sf.lit(f + 1).cast("bigint").alias("batch")) \
                .write.format("delta").mode("append").save(topic_path(root, TOPIC))
    finally:
        stop_session(spark)


def scenario_2(base: str, big_rows: int, delta: int) -> None:
    root = os.path.join(base, "s2")
    register_schema(root)
    t = time.perf_counter()
    big_bronze_with_spark(root, big_rows, 10)
    print(f"scenario 2: wrote {big_rows:,} bronze inserts (10 commits) in {time.perf_counter() - t:.1f}s")
    load = framework(root, "initial load")
    print(f"  initial load of {big_rows:,} rows: {load:.2f}s")
    tbl = bronze_batch(big_rows + 1, delta, big_rows, fresh_keys=False, rng=random.Random(11), batch=999)
    # the big table was written by Spark (string, not large_string): keep its physical types
    tbl = tbl.set_column(0, "key", tbl.column("key").cast(pa.string()))
    tbl = tbl.set_column(1, "value", tbl.column("value").cast(pa.string()))
    write_deltalake(topic_path(root, TOPIC), tbl, mode="append")
    fw = framework(root, f"increment of {delta:,}")
    print(f"  increment of {delta:,} changes into {big_rows:,} rows: {fw:.2f}s (start-up included); "
          "bronze files read: see the line above")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--changes", type=int, default=1_000_000)
    ap.add_argument("--keys", type=int, default=250_000)
    ap.add_argument("--big-rows", type=int, default=5_000_000)
    ap.add_argument("--delta", type=int, default=10_000)
    ap.add_argument("--dir", default=None)
    ap.add_argument("--skip-big", action="store_true")
    ap.add_argument("--only-big", action="store_true")
    args = ap.parse_args()
    base = args.dir or tempfile.mkdtemp(prefix="silver-bench-")
    print(f"bench dir: {base}; cores: {os.cpu_count()}")
    if not args.only_big:
        scenario_1(base, args.changes, args.keys)
    if not args.skip_big:
        scenario_2(base, args.big_rows, args.delta)


if __name__ == "__main__":
    main()
