"""A fake Oracle database that changes while capture runs: PostgreSQL tables and their decoding.

`LiveRedo` is the fake's `LiveBackend` over an `OracleWorkload` database (PostgreSQL):

- each ``SELECT CURRENT_SCN`` takes a point where no transaction on the workload's tables is in
  flight (``LOCK TABLE ... IN EXCLUSIVE MODE`` waits for the writers, then the WAL insert
  position L), and the fake's ``V$LOGMNR_CONTENTS`` becomes the LogMiner rows of every
  transaction committed before L (the slot is peeked, never consumed: the same rows in every
  process, so a capture killed and restarted mines what it mined before), with the current SCN
  just after the last commit and below L (a writer the lock held back starts at L);
- the incremental snapshot's statements (chunk selects, watermark inserts into the signal
  table, watermark look-ups) run on the PostgreSQL tables, with python-oracledb's ``:b<n>`` binds
  as psycopg's: a chunk reads the rows committed at that moment, and a watermark is a real
  insert that the decoding brings back at its commit.

``python -m tests.support.oracle_live <dsn> <root> <options JSON> <seconds per mining query>
[<seconds per flashback fetch>]`` captures from it in a child process until killed (what the SIGKILL
tests kill). ``AS OF SCN`` selects read the decoded transactions committed at or below the SCN.
"""

from __future__ import annotations

import json
import re
import sys
import threading
from collections.abc import Mapping, Sequence
from typing import Any

import psycopg

from bronze.writer import BronzeWriter
from cdc_sources.oracle.mining_query import MiningQuerySettings, mining_query
from pipelines.coordinator import CaptureResult, Coordinator
from pipelines.metrics import SourceMetrics
from tests.support.oracle_capture import SOURCE, connector
from tests.support.oracle_fake import FakeColumn, FakeOracleDatabase, FakeTable
from tests.support.oracle_workload import OWNER, TABLES, OracleWorkload

__all__ = ["SIGNAL", "SIGNAL_TABLE", "LiveRedo", "capture", "create_signal_table", "live_database", "psycopg_sql"]

SIGNAL = "DEBEZIUM_SIGNAL"
SIGNAL_TABLE = FakeTable(OWNER, SIGNAL, (FakeColumn("ID", "VARCHAR2", 42, nullable=False),
                                         FakeColumn("TYPE", "VARCHAR2", 32, nullable=False),
                                         FakeColumn("DATA", "VARCHAR2", 2048)), ("ID",))
_BIND = re.compile(r""""(?:[^"]|"")*"|'(?:[^']|'')*'|:b\d+""")


def create_signal_table(dsn: str) -> None:
    """The signal table, Debezium's shape (``id``, ``type``, ``data``), upper-case as Oracle names it."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f'CREATE TABLE "{OWNER}"."{SIGNAL}" ("ID" varchar(42) PRIMARY KEY, "TYPE" varchar(32) NOT NULL, '
                     '"DATA" varchar(2048))')
        conn.execute(f'ALTER TABLE "{OWNER}"."{SIGNAL}" REPLICA IDENTITY FULL')


def psycopg_sql(sql: str) -> str:
    """python-oracledb's ``:b<n>`` binds (outside quotes) as psycopg's ``%s``, in the same order."""
    return _BIND.sub(lambda m: "%s" if m.group(0).startswith(":b") else m.group(0).replace("%", "%%"), sql)


class LiveRedo:
    """The fake's live backend over ``workload`` (see the module doc)."""

    def __init__(self, workload: OracleWorkload) -> None:
        self.workload = workload
        self._conn = psycopg.connect(workload.dsn, autocommit=True)
        self._lock = threading.Lock()

    def refresh(self, database: FakeOracleDatabase) -> None:
        with self._lock, psycopg.connect(self.workload.dsn) as conn:
            with conn.transaction():
                names = ", ".join(f'"{OWNER}"."{t}"' for t in (*TABLES, SIGNAL))
                conn.execute(f"LOCK TABLE {names} IN EXCLUSIVE MODE")
                row = conn.execute("SELECT pg_current_wal_insert_lsn()::text").fetchone()
                assert row is not None
            hi, lo = str(row[0]).split("/")
            upto = (int(hi, 16) << 32) + int(lo, 16)
            transactions = self.workload.decode(peek_upto=upto)
            self.workload.transactions = transactions  # what `rows_as_of` (flashback selects) reads
            # below L: a writer let go by the lock starts its transaction at L itself; and the last
            # commit (+1: a rolled-back transaction's injected ROLLBACK row) when below: the flush
            # marker each refresh writes moves L, and the database would never be idle
            last = max((t.commit_lsn for t in transactions), default=0) + 1
            database.replace_contents(self.workload.logminer_rows(transactions), min(last, upto - 1))

    def execute(self, sql: str, params: Sequence[Any]) -> tuple[Sequence[str], list[tuple[Any, ...]]]:
        with self._lock:
            if not sql.startswith("SELECT "):
                self._conn.execute(psycopg_sql(sql), list(params))
                return (), []
            with self._conn.transaction():
                # PostgreSQL makes a commit visible after writing its WAL record (a writer waiting for
                # the flush is not visible yet, though its commit precedes a later watermark's): the
                # lock waits for every writer, so what the read sees is what precedes it in the WAL
                names = ", ".join(f'"{OWNER}"."{t}"' for t in TABLES)
                self._conn.execute(f"LOCK TABLE {names} IN SHARE MODE")
                cur = self._conn.execute(psycopg_sql(sql), list(params))
                assert cur.description is not None
                return [d.name for d in cur.description], [tuple(r) for r in cur.fetchall()]

    def close(self) -> None:
        self._conn.close()


def live_database(workload: OracleWorkload) -> FakeOracleDatabase:
    """A fake database over the workload's PostgreSQL tables and the signal table."""
    tables = {(OWNER, n): t for n, t in TABLES.items()} | {(OWNER, SIGNAL): SIGNAL_TABLE}
    db = FakeOracleDatabase(tables, [], workload.rows_as_of, 0, mining_query(MiningQuerySettings()))
    db.live = LiveRedo(workload)
    return db


def capture(root: str, db: FakeOracleDatabase, options: Mapping[str, Any], *, until_idle: bool,
            stop: threading.Event | None = None, metrics: SourceMetrics | None = None) -> CaptureResult:
    """One capture run (the coordinator and writer of ``pipelines.capture``), ``until_idle`` or until stopped;
    ``metrics``: what the coordinator reports to."""
    writer = BronzeWriter(root, SOURCE, None)
    try:
        stored = writer.recover()
        session = connector(db, options).open(stored.offset if stored else None, writer.read_history())
        try:
            return Coordinator(session, writer, stored, commit_interval_ms=50, commit_max_records=20,
                               stop=stop, metrics=metrics).run(until_idle=until_idle)
        finally:
            session.close()
    finally:
        writer.close()


if __name__ == "__main__":
    live = live_database(OracleWorkload(sys.argv[1], create=False))
    live.window_delay_s = float(sys.argv[4])
    live.snapshot_fetch_delay_s = float(sys.argv[5]) if len(sys.argv) > 5 else 0.0
    capture(sys.argv[2], live, json.loads(sys.argv[3]), until_idle=False)
