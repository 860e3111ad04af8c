"""Record what the real Debezium PostgreSQL connector emits, as reference samples.

Starts a private PostgreSQL (``pipelines.local_postgres``), runs a few Debezium engine runs
covering the envelope shapes our connector must reproduce, and writes one JSON object per
record to ``tests/cases/postgres/debezium_samples.jsonl``::

    /tmp/venv/bin/python -m tests.conformance.collect_samples [--out PATH]

Each line: ``case`` (scenario/what), ``topic``, ``key``, ``value``, ``headers``, ``key_schema``,
``value_schema`` (texts exactly as JsonConverter writes them) and ``source_offset``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg

from pipelines.local_postgres import LocalPostgres
from tests.conformance.debezium_runner import DbzRecord, run_debezium_postgres

DEFAULT_OUT = Path(__file__).resolve().parents[1] / "cases" / "postgres" / "debezium_samples.jsonl"

TYPES_DDL = """
CREATE TABLE typed (
    id int PRIMARY KEY,
    amount numeric(10,2),
    ratio numeric,
    created timestamp,
    created_tz timestamptz,
    note text,
    payload bytea,
    flag bool,
    uid uuid,
    doc jsonb
)"""
TYPES_ROW = (
    "(1, 12345.67, 3.14159, '2024-01-02 03:04:05.123456', '2024-01-02 03:04:05.123456+02', "
    "'héllo', '\\x0001ff', true, 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', '{\"b\": 1, \"a\": [1, 2]}')"
)
SETUP = [
    TYPES_DDL,
    f"INSERT INTO typed VALUES {TYPES_ROW}, (2, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL)",
    "CREATE TABLE alpha (id int PRIMARY KEY, v text)",
    "INSERT INTO alpha VALUES (1, 'a1'), (2, 'a2'), (3, 'a3')",
    "CREATE TABLE beta (id int PRIMARY KEY, v text)",
    "INSERT INTO beta VALUES (1, 'b1'), (2, 'b2'), (3, 'b3')",
    "CREATE TABLE full_ri (id int PRIMARY KEY, v text, n int)",
    "ALTER TABLE full_ri REPLICA IDENTITY FULL",
    "INSERT INTO full_ri VALUES (1, 'x', 1)",
]
DEFAULT_WORKLOAD = [
    "INSERT INTO typed VALUES (3, -0.5, 100, '1970-01-01 00:00:00', '1999-12-31 23:59:59.5+00', "
    "'x', '\\x', false, '00000000-0000-0000-0000-000000000000', '[]')",
    "UPDATE typed SET note = 'updated', amount = 1.00 WHERE id = 3",
    "DELETE FROM typed WHERE id = 3",
    "UPDATE full_ri SET v = 'y', n = 2 WHERE id = 1",
    "DELETE FROM full_ri WHERE id = 1",
    "UPDATE alpha SET id = 10 WHERE id = 1",
    "SELECT pg_logical_emit_message(true, 'my-prefix', 'transactional payload')",
    "SELECT pg_logical_emit_message(false, 'other-prefix', 'non-transactional payload')",
    "TRUNCATE beta",
]


def _sql(dsn: str, statements: list[str]) -> Callable[[], None]:
    def run() -> None:
        with psycopg.connect(dsn, autocommit=True) as conn:
            for stmt in statements:
                conn.execute(stmt.encode())
    return run


def _tx_workload(dsn: str) -> None:
    with psycopg.connect(dsn) as conn:  # one transaction, two tables
        conn.execute("INSERT INTO alpha VALUES (20, 'a20')")
        conn.execute("INSERT INTO beta VALUES (20, 'b20')")
        conn.execute("UPDATE alpha SET v = 'a20x' WHERE id = 20")
    time.sleep(2.5)  # let at least one heartbeat go out


def _describe(rec: DbzRecord, prefix: str) -> str:
    if rec.topic.startswith("__debezium-heartbeat"):
        return "heartbeat"
    if rec.topic == f"{prefix}.transaction":
        return "transaction_" + str(json.loads(rec.value or "{}").get("status", "?")).lower()
    if rec.value is None:
        return "tombstone"
    value = json.loads(rec.value)
    op = value.get("op")
    if op == "r":
        return f"snapshot_read_{value['source']['snapshot']}"
    names = {"c": "insert", "u": "update", "d": "delete", "t": "truncate", "m": "message"}
    label = names.get(str(op), f"op_{op}")
    if op == "m":
        label += "_transactional" if value["source"]["txId"] is not None else "_non_transactional"
    if "__debezium.newkey" in rec.headers or "__debezium.oldkey" in rec.headers:
        label += "_pk_change"
    return label


def _write(out: Any, case: str, prefix: str, records: list[DbzRecord], max_heartbeats: int = 2) -> None:
    heartbeats = 0
    for rec in records:
        if rec.topic.startswith("__debezium-heartbeat"):
            heartbeats += 1
            if heartbeats > max_heartbeats:
                continue
        out.write(json.dumps({
            "case": f"{case}/{_describe(rec, prefix)}", "topic": rec.topic, "key": rec.key,
            "value": rec.value, "headers": rec.headers, "key_schema": rec.key_schema,
            "value_schema": rec.value_schema, "source_offset": rec.source_offset,
        }, ensure_ascii=False) + "\n")


def collect(server: LocalPostgres, out_path: Path) -> None:
    """Run the scenarios against ``server`` and write the samples file."""
    with psycopg.connect(server.dsn(), autocommit=True) as conn:
        conn.execute("DROP DATABASE IF EXISTS samples WITH (FORCE)")
        conn.execute("CREATE DATABASE samples")
    dsn = server.dsn("samples")
    _sql(dsn, SETUP)()
    conn_args: dict[str, Any] = {"host": "127.0.0.1", "port": server.port, "dbname": "samples",
                                 "user": server.superuser, "password": ""}
    with out_path.open("w", encoding="utf-8") as out:
        records = run_debezium_postgres(
            **conn_args, properties={"topic.prefix": "dflt", "skipped.operations": "none"},
            workload=_sql(dsn, DEFAULT_WORKLOAD), idle_timeout_s=5,
        )
        _write(out, "defaults", "dflt", records)
        _sql(dsn, ["DELETE FROM alpha WHERE id >= 10", "INSERT INTO alpha VALUES (1, 'a1')",
                   "INSERT INTO beta VALUES (1, 'b1'), (2, 'b2'), (3, 'b3')"])()
        records = run_debezium_postgres(
            **conn_args,
            properties={"topic.prefix": "txmd", "provide.transaction.metadata": "true",
                        "heartbeat.interval.ms": "1000", "table.include.list": "public.alpha,public.beta"},
            workload=lambda: _tx_workload(dsn), idle_timeout_s=3, max_runtime_s=30,
        )  # heartbeats never let it go idle: max_runtime_s ends this run
        _write(out, "txmeta_heartbeat", "txmd", records)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args()
    base = Path(tempfile.mkdtemp(prefix="cdc-dbz-samples-"))
    os.chmod(base, 0o755)
    server = LocalPostgres(base / "data").start()
    try:
        collect(server, args.out)
    finally:
        server.stop("immediate")
        shutil.rmtree(base, ignore_errors=True)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
