"""The silver bench's bronze data: a Debezium-shaped topic written with delta-rs (no engine).

Scenario 1 is ``changes`` bronze rows over ``keys`` keys: an insert of every key (one commit),
then updates (90%) and deletes (10%) of random keys in commits of 250,000 rows. Scenario 2's
increment is a batch of the same updates/deletes appended to the big table.
"""

from __future__ import annotations

import base64
import datetime as dt
import json
import random

import pyarrow as pa
from deltalake import write_deltalake

from bronze.schema import BRONZE_SCHEMA, SCHEMAS_SCHEMA, schemas_path, topic_path

SOURCE, TOPIC = "bench", "bench.public.items"
FIELDS = [
    {"type": "int64", "optional": False, "field": "id"},
    {"type": "string", "optional": True, "field": "name"},
    {"type": "bytes", "optional": True, "name": "org.apache.kafka.connect.data.Decimal", "version": 1,
     "parameters": {"scale": "2", "connect.decimal.precision": "12"}, "field": "price"},
    {"type": "int64", "optional": True, "name": "io.debezium.time.MicroTimestamp", "version": 1, "field": "updated_at"},
    {"type": "int32", "optional": True, "field": "qty"},
]


def register_schema(root: str) -> None:
    """The topic's schema history row (schema id ``v1``)."""
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


def append_increment(root: str, big_rows: int, delta: int) -> None:
    """Scenario 2's increment: ``delta`` updates/deletes of random keys of the big table."""
    tbl = bronze_batch(big_rows + 1, delta, big_rows, fresh_keys=False, rng=random.Random(11), batch=999)
    # the big table was written by Spark (string, not large_string): keep its physical types
    tbl = tbl.set_column(0, "key", tbl.column("key").cast(pa.string()))
    tbl = tbl.set_column(1, "value", tbl.column("value").cast(pa.string()))
    write_deltalake(topic_path(root, TOPIC), tbl, mode="append")
