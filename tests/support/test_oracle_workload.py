"""The workload generator's decoding sees every transaction committed before it is called, also
one whose commit is not flushed yet (the test servers commit with ``synchronous_commit=off``)."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from contextlib import contextmanager

import psycopg

from tests.support.oracle_workload import OracleWorkload


@contextmanager
def _walwriter_paused(dsn: str) -> Iterator[None]:
    """The server's WAL writer stopped (SIGSTOP) meanwhile, so an asynchronous commit stays unflushed
    until something flushes the WAL itself; resumed (SIGCONT) whatever happens."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        row = conn.execute("SELECT pid FROM pg_stat_activity WHERE backend_type = 'walwriter'").fetchone()
    assert row is not None, "the server shows no walwriter process"
    os.kill(int(row[0]), signal.SIGSTOP)
    try:
        yield
    finally:
        os.kill(int(row[0]), signal.SIGCONT)


def test_decode_includes_a_commit_not_yet_flushed(pg_db: str) -> None:
    w = OracleWorkload(pg_db)
    with _walwriter_paused(pg_db):
        with psycopg.connect(pg_db, autocommit=True, options="-c synchronous_commit=off") as conn:
            conn.execute('INSERT INTO "INVENTORY"."ORDERS" VALUES (7, NULL, 3, \'NEW\')')
            row = conn.execute("SELECT pg_current_wal_flush_lsn() < pg_current_wal_insert_lsn()").fetchone()
        assert row == (True,), "the commit was flushed already: the case under test did not happen"
        decoded = w.decode()
    assert [(c.table, c.op, c.after) for tx in decoded for c in tx.changes] == [
        ("ORDERS", "c", {"ID": 7, "CUSTOMER_ID": None, "QTY": 3, "STATUS": "NEW"})]
    assert w.decode() == []
