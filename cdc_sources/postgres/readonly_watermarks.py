"""PostgreSQL's watermarks for read-only incremental snapshots (`cdc_sources.common.readonly_watermarks`).

The low watermark is ``pg_snapshot_xmin(pg_current_snapshot())`` (PostgreSQL 13+), the oldest
transaction id still running before the chunk is read; a streamed transaction whose id
(``txId``, 32 bits, compared modulo 2^32) is not below it opens the window. The high watermark
is ``pg_current_wal_flush_lsn()`` after the read: the window closes before the first
transaction whose commit LSN (the first element of its records' order keys) is at or beyond
it, or at a checkpoint whose LSN is. Both are read-only queries on the session's connection.
"""

from __future__ import annotations

from typing import Any

import orjson

__all__ = ["PostgresWatermarks", "xid_at_least"]

_XID_SPACE = 1 << 32


def xid_at_least(xid: int, low: int) -> bool:
    """Whether the 32-bit transaction id ``xid`` is at or after the 64-bit ``low`` (modulo 2^32)."""
    return (xid - low) % _XID_SPACE < _XID_SPACE // 2


class PostgresWatermarks:
    """Implements `cdc_sources.common.readonly_watermarks.TransactionWatermarks` for PostgreSQL.

    Args:
        conn: an autocommit psycopg connection (read-only is enough).
    """

    def __init__(self, conn: Any) -> None:
        self.conn = conn

    def low(self) -> int:
        row = self.conn.execute("SELECT pg_snapshot_xmin(pg_current_snapshot())::text").fetchone()
        return int(row[0])

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
