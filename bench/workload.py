"""The benchmark workload: one private server, a database per scenario, a table of realistic shape.

Every scenario gets a fresh database with one table, ``public.bench_rows``, and the publication
``dbz_publication FOR ALL TABLES`` (the name and mode that Debezium and our connector both use
by default), so every reader decodes exactly the same changes. Rows are generated server-side
with ``generate_series``: loading costs no client round trips per row.
"""

from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass
from typing import Any

import psycopg

from pipelines.local_postgres import LocalPostgres

TABLE = "bench_rows"
PUBLICATION = "dbz_publication"

TABLE_DDL = f"""
CREATE TABLE public.{TABLE} (
    id          bigint PRIMARY KEY,
    customer_id integer NOT NULL,
    quantity    integer NOT NULL,
    status      smallint NOT NULL,
    note        text,
    amount      numeric(12,2) NOT NULL,
    created_at  timestamptz NOT NULL,
    active      boolean NOT NULL
)"""

_INSERT = f"""
INSERT INTO public.{TABLE}
SELECT g, (g %% 10000)::int, (g %% 17)::int, (g %% 5)::smallint,
       'order note ' || g || ' for customer ' || (g %% 10000),
       ((g %% 1000000) / 100.0)::numeric(12,2),
       timestamptz '2026-01-01 00:00:00+00' + g * interval '1 second',
       g %% 3 = 0
FROM generate_series(%s::bigint, %s::bigint) AS g"""


@dataclass(frozen=True)
class BenchDb:
    """One scenario's database on the private server."""

    server: LocalPostgres
    name: str

    @property
    def dsn(self) -> str:
        return self.server.dsn(self.name)

    @property
    def port(self) -> int:
        return self.server.port

    def connect(self) -> psycopg.Connection[Any]:
        return psycopg.connect(self.dsn, autocommit=True)


def create_database(server: LocalPostgres, name: str) -> BenchDb:
    """A fresh database holding the empty bench table and the shared publication."""
    with psycopg.connect(server.dsn(), autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"')
    db = BenchDb(server, name)
    with db.connect() as conn:
        conn.execute(TABLE_DDL)
        conn.execute(f"CREATE PUBLICATION {PUBLICATION} FOR ALL TABLES")
    return db


def drop_database(db: BenchDb) -> None:
    """Drop every replication slot of the database, then the database."""
    with psycopg.connect(db.server.dsn(), autocommit=True) as conn:
        rows = conn.execute("SELECT slot_name, active_pid FROM pg_replication_slots WHERE database = %s",
                            (db.name,)).fetchall()
        for slot, pid in rows:
            if pid is not None:
                conn.execute("SELECT pg_terminate_backend(%s)", (pid,))
                time.sleep(0.2)
            with contextlib.suppress(psycopg.Error):
                conn.execute("SELECT pg_drop_replication_slot(%s)", (slot,))
        conn.execute(f'DROP DATABASE IF EXISTS "{db.name}" WITH (FORCE)')


def insert_rows(db: BenchDb, count: int, *, tx_rows: int, first_id: int = 1) -> int:
    """Insert ``count`` rows in transactions of ``tx_rows`` rows; returns the number of transactions."""
    transactions = 0
    with db.connect() as conn:
        start = first_id
        end = first_id + count - 1
        while start <= end:
            stop = min(end, start + tx_rows - 1)
            conn.execute(_INSERT, (start, stop))  # autocommit: one statement, one transaction
            transactions += 1
            start = stop + 1
    return transactions


_UPDATE = f"UPDATE public.{TABLE} SET status = status + 1, note = note || ' (changed)' WHERE id BETWEEN %s AND %s"
_DELETE = f"DELETE FROM public.{TABLE} WHERE id BETWEEN %s AND %s"


def change_rows(db: BenchDb, count: int, *, tx_rows: int) -> int:
    """Insert ``count`` rows, then update each, then delete each, every pass in transactions of
    ``tx_rows`` rows; returns the number of transactions."""
    transactions = insert_rows(db, count, tx_rows=tx_rows)
    with db.connect() as conn:
        for statement in (_UPDATE, _DELETE):
            for start in range(1, count + 1, tx_rows):
                conn.execute(statement, (start, min(count, start + tx_rows - 1)))  # autocommit: one transaction
                transactions += 1
    return transactions


def create_slot(db: BenchDb, slot: str) -> str:
    """Create a pgoutput logical replication slot; returns its consistent point (``X/Y``)."""
    with db.connect() as conn:
        row = conn.execute("SELECT lsn::text FROM pg_create_logical_replication_slot(%s, 'pgoutput')",
                           (slot,)).fetchone()
    assert row is not None
    return str(row[0])


def current_lsn(db: BenchDb) -> str:
    """The server's current WAL insert position as ``X/Y``."""
    with db.connect() as conn:
        row = conn.execute("SELECT pg_current_wal_lsn()::text").fetchone()
    assert row is not None
    return str(row[0])


def wal_bytes(db: BenchDb, start: str, end: str) -> int:
    """How many WAL bytes lie between two LSNs."""
    with db.connect() as conn:
        row = conn.execute("SELECT pg_wal_lsn_diff(%s::pg_lsn, %s::pg_lsn)::bigint", (end, start)).fetchone()
    assert row is not None
    return int(row[0])


def table_bytes(db: BenchDb) -> int:
    """The bench table's size on disk (heap, TOAST and indexes)."""
    with db.connect() as conn:
        row = conn.execute(f"SELECT pg_total_relation_size('public.{TABLE}')").fetchone()
    assert row is not None
    return int(row[0])


def settle(db: BenchDb) -> None:
    """VACUUM ANALYZE and CHECKPOINT: autovacuum and the checkpointer then stay quiet while we measure."""
    with db.connect() as conn:
        conn.execute(f"VACUUM ANALYZE public.{TABLE}")
        conn.execute("CHECKPOINT")
