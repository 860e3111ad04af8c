"""PostgreSQL's watermarks for read-only incremental snapshots (`cdc_sources.common.readonly_watermarks`).

The low watermark is ``pg_snapshot_xmin(pg_current_snapshot())`` (PostgreSQL 13+), the oldest
transaction id still running before the chunk is read; a streamed transaction whose id
(``txId``, 32 bits, compared modulo 2^32) is not below it opens the window. The high watermark
is ``pg_current_wal_flush_lsn()`` after the read: the window closes before the first
transaction whose commit LSN (the first element of its records' order keys) is at or beyond
it, or at a checkpoint whose LSN is. Both are read-only queries on the session's connection.

A transaction's commit record is flushed to the WAL (the stream may decode it) before the
transaction leaves the running set (new snapshots see it); synchronous replication holds it in
between until the standby answers. A chunk read in that gap misses a change the stream has already
passed on, and its older row would then follow that change. So the low watermark waits until no
such transaction remains (`committed_unseen`): none of the recent transactions the stream passed
on (`PostgresWatermarks.passing`) still holds the lock on its id, and no backend of the database
waits for a synchronous standby (which also covers transactions passed on before a restart; the
capture role needs ``pg_read_all_stats`` to see other roles' backends). Every transaction the
stream has passed on is then visible to the chunk's read, and one committed later has an id at or
after the low watermark: its changes open the window and drop the chunk's rows for their keys. The
wait lasts at most `CATCH_UP_S` seconds (then the capture fails: a standby that never answers).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Collection, Iterable
from typing import Any

import orjson

from cdc_sources.spi import SourceError

__all__ = ["CATCH_UP_S", "PostgresWatermarks", "committed_unseen", "xid_at_least"]

log = logging.getLogger(__name__)

_XID_SPACE = 1 << 32

CATCH_UP_S = 30.0
"""How long the low watermark waits for transactions the stream passed on to become visible."""

RECENT = 1 << 16
"""How many of the stream's latest transaction ids are remembered (`PostgresWatermarks.passing`)."""

_LOW_SQL = """/* cdc-lakehouse: read-only low watermark */
SELECT pg_snapshot_xmin(pg_current_snapshot())::text,
       ARRAY(SELECT transactionid::text FROM pg_locks
             WHERE locktype = 'transactionid' AND mode = 'ExclusiveLock' AND granted),
       ARRAY(SELECT pid FROM pg_stat_activity WHERE wait_event = 'SyncRep' AND datname = current_database())"""
"""The oldest running transaction; the ids of the running ones (each holds the lock on its id
until it has left the running set); the backends waiting for a synchronous standby (after their
commit record was flushed)."""


def xid_at_least(xid: int, low: int) -> bool:
    """Whether the 32-bit transaction id ``xid`` is at or after the 64-bit ``low`` (modulo 2^32)."""
    return (xid - low) % _XID_SPACE < _XID_SPACE // 2


def committed_unseen(running: Iterable[str], passed: Collection[int]) -> list[int]:
    """The ids among ``running`` (``pg_locks``' texts) of transactions the stream has passed on:
    committed, yet not visible to a snapshot taken now."""
    return sorted({xid for xid in map(int, running) if xid in passed})


class PostgresWatermarks:
    """Implements `cdc_sources.common.readonly_watermarks.TransactionWatermarks` for PostgreSQL.

    Args:
        conn: an autocommit psycopg connection (read-only is enough).
    """

    def __init__(self, conn: Any, *, catch_up_s: float = CATCH_UP_S, recent: int = RECENT) -> None:
        self.conn = conn
        self.catch_up_s = catch_up_s
        self.recent = recent
        self._passed: dict[int, None] = {}  # the stream's latest transaction ids, oldest first
        self._last: object = None  # the txId of the last record noted
        self._checked_role = False

    def passing(self, position: str) -> None:
        xid = orjson.loads(position).get("txId")
        if xid is None or xid == self._last:
            return
        self._last = xid
        passed = self._passed
        passed[int(xid)] = None
        if len(passed) > self.recent:
            del passed[next(iter(passed))]

    @property
    def recent_ids(self) -> tuple[int, ...]:
        """The transaction ids `passing` remembers, oldest first."""
        return tuple(self._passed)

    def low(self) -> int:
        if not self._checked_role:
            self._checked_role = True
            row = self.conn.execute("SELECT pg_has_role('pg_read_all_stats', 'MEMBER')").fetchone()
            if not row[0]:
                log.warning("read-only incremental snapshot: the capture role is not a member of "
                            "pg_read_all_stats, so a chunk read cannot see which transactions of other roles wait "
                            "for a synchronous standby: after a restart it may miss one the stream passed on before")
        deadline = time.monotonic() + self.catch_up_s
        while True:
            low, running, sync_waits = self.conn.execute(_LOW_SQL).fetchone()
            unseen = committed_unseen(running, self._passed.keys())
            if not unseen and not sync_waits:
                return int(low)
            if time.monotonic() > deadline:
                what = (f"transactions {', '.join(map(str, unseen))} stayed committed but not visible" if unseen
                        else f"backends {', '.join(map(str, sync_waits))} kept waiting for a synchronous standby")
                raise SourceError(f"read-only incremental snapshot: for {self.catch_up_s:.0f} s {what}; a chunk "
                                  "read now could miss changes the stream has passed on")
            time.sleep(0.005)

    def high(self) -> int:
        row = self.conn.execute("SELECT (pg_current_wal_flush_lsn() - '0/0'::pg_lsn)::bigint").fetchone()
        return int(row[0])

    def opens(self, low: int, position: str) -> bool:
        xid = orjson.loads(position).get("txId")
        return xid is not None and xid_at_least(int(xid), low)

    def passed(self, high: int, order_key: tuple[int, ...]) -> bool:
        return order_key[0] >= high

    def checkpoint_passed(self, high: int, offset: dict[str, object]) -> bool:
        lsn = offset.get("lsn")
        return isinstance(lsn, int) and lsn >= high

    def close_order_key(self, high: int, seq: int) -> tuple[int, ...]:
        # records of a transaction committed at ``high`` have (high, lsn > 0, n): after these
        return (high, 0, seq)

    def close_position(self, high: int, mark: int | None) -> str:
        return orjson.dumps({"lsn_proc": high, "lsn_commit": mark, "lsn": high}).decode()
