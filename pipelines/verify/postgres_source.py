"""The PostgreSQL side of `verify`: a consistent read with a known position, and its queries.

The read is a ``REPEATABLE READ READ ONLY`` transaction, connected like the capture
(`cdc_sources.postgres.connection.connect_sql`: same settings, UTC, hex bytea). Its first
statement takes the snapshot and, in the same statement, after it,
``pg_current_snapshot()`` (which transactions the snapshot sees: every xid below ``xmin``,
none from ``xmax``, none listed in between) and ``pg_current_wal_insert_lsn()``.

* Every transaction the snapshot sees committed before the statement ran, so its commit
  record is below that insert LSN: once capture has committed an offset at or past it, every
  such transaction is in bronze.
* Which bronze rows belong to the read is decided by their transaction id (the row's
  ``position.txId``) against the snapshot, not by LSN: a transaction committing while the
  snapshot is taken can have a commit LSN below the insert LSN without being visible.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa

from cdc_sources.postgres.config import PostgresSourceConfig
from cdc_sources.postgres.connection import connect_sql
from pipelines.verify.canonical import ColumnKind
from pipelines.verify.model import ColumnPlan, ReadPoint, SourceColumn, VerifyError
from pipelines.verify.source_sql import POSTGRES, bucket_query, rows_query

__all__ = ["PostgresReadPoint", "PostgresReader", "postgres_kind"]

_XID_SPAN = 1 << 32


class PostgresReadPoint(ReadPoint):
    """A snapshot (``xmin:xmax:xip``, 64-bit xids) and the WAL insert LSN taken with it."""

    def __init__(self, snapshot: str, insert_lsn: int) -> None:
        xmin, xmax, xip = snapshot.split(":")
        self.xmin, self.xmax = int(xmin), int(xmax)
        self.xip = frozenset(int(x) for x in xip.split(",") if x)
        self.insert_lsn = insert_lsn

    def describe(self) -> str:
        return f"LSN {self.insert_lsn >> 32:X}/{self.insert_lsn & 0xFFFFFFFF:X} (snapshot {self.xmin}:{self.xmax})"

    def capture_reached(self, offset: Mapping[str, Any]) -> bool:
        if offset.get("snapshot") not in (None, False, "false") and not offset.get("snapshot_completed"):
            return False
        lsn = offset.get("lsn")
        return lsn is not None and int(lsn) >= self.insert_lsn

    def includes(self, position: Mapping[str, Any]) -> bool:
        if position.get("snapshot") not in (None, False, "false"):
            # a capture snapshot's row: the state at the snapshot's consistent point (its "lsn")
            return int(position.get("lsn") or 0) < self.insert_lsn
        tx = position.get("txId")
        if tx is None:
            raise VerifyError(f"a bronze row's position has no txId: {dict(position)}")
        xid = self._full_xid(int(tx))
        return xid < self.xmax and xid not in self.xip

    def _full_xid(self, xid32: int) -> int:
        """The 64-bit xid of a 32-bit one, taken as the nearest to ``xmax`` (pgoutput sends 32 bits)."""
        delta = (xid32 - self.xmax) % _XID_SPAN
        if delta >= _XID_SPAN // 2:
            delta -= _XID_SPAN
        return self.xmax + delta


_INTS = {"int2", "int4", "int8"}
_TEXTS = {"text", "varchar", "uuid", "json", "jsonb"}
_TIMESTAMPS = {"timestamp", "timestamptz"}


def postgres_kind(column: SourceColumn, silver: pa.DataType) -> ColumnKind | None:
    """The canonical kind of a PostgreSQL column (``udt_name``) and its silver type, if proven."""
    t = column.type_name
    if t in _INTS and pa.types.is_integer(silver):
        return ColumnKind.INT
    if (t == "numeric" and column.scale is not None and pa.types.is_decimal(silver)
            and silver.scale == column.scale):
        return ColumnKind.DECIMAL
    if t == "numeric" and column.scale is None and _is_text(silver):
        return ColumnKind.NUMBER  # NUMERIC without a scale: silver holds the exact text by default
    if t in _TEXTS and (pa.types.is_string(silver) or pa.types.is_large_string(silver)):
        return ColumnKind.TEXT
    pairs = {("bool", pa.types.is_boolean), ("bytea", pa.types.is_binary), ("bytea", pa.types.is_large_binary),
             ("date", pa.types.is_date32), ("timestamp", pa.types.is_timestamp),
             ("timestamptz", pa.types.is_timestamp), ("float8", pa.types.is_float64),
             ("float4", pa.types.is_float32)}
    kinds = {"bool": ColumnKind.BOOL, "bytea": ColumnKind.BYTES, "date": ColumnKind.DATE,
             "timestamp": ColumnKind.TIMESTAMP, "timestamptz": ColumnKind.TIMESTAMP, "float8": ColumnKind.FLOAT64,
             "float4": ColumnKind.FLOAT32}
    for name, test in pairs:
        if t == name and test(silver):
            return kinds[name]
    return None


def _is_text(silver: pa.DataType) -> bool:
    return bool(pa.types.is_string(silver) or pa.types.is_large_string(silver))


class PostgresReader:
    """One consistent read of a PostgreSQL source (see module doc). Not thread-safe."""

    kind_of = staticmethod(postgres_kind)

    def __init__(self, config: PostgresSourceConfig) -> None:
        self.config = config
        self.conn: Any = None

    def open(self) -> PostgresReadPoint:
        """Start the read; the returned point describes it."""
        self.close()
        self.conn = connect_sql(self.config.connection, autocommit=True,
                                initial_statements=self.config.opt("database.initial.statements"))
        self.conn.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
        snapshot, lsn = self.conn.execute(
            "SELECT pg_current_snapshot()::text, pg_current_wal_insert_lsn()::text").fetchone()
        hi, lo = str(lsn).split("/")
        return PostgresReadPoint(str(snapshot), (int(hi, 16) << 32) | int(lo, 16))

    def close(self) -> None:
        if self.conn is not None:
            self.conn.close()
            self.conn = None

    def columns(self, container: str, table: str) -> tuple[list[SourceColumn], list[str]]:
        """The table's columns and primary key.

        Raises:
            VerifyError: no such table.
        """
        rows = self.conn.execute(
            "SELECT column_name, udt_name, CASE WHEN data_type = 'numeric' THEN numeric_scale END "
            "FROM information_schema.columns WHERE table_schema = %s AND table_name = %s ORDER BY ordinal_position",
            (container, table)).fetchall()
        if not rows:
            raise VerifyError(f"source table {container}.{table} does not exist (or the user cannot see it)")
        key = self.conn.execute(
            "SELECT a.attname FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid "
            "AND a.attnum = ANY(i.indkey::int2[]) WHERE i.indrelid = format('%%I.%%I', %s::text, %s::text)::regclass "
            "AND i.indisprimary ORDER BY array_position(i.indkey::int2[], a.attnum)", (container, table)).fetchall()
        columns = [SourceColumn(str(n), str(t), None if s is None else int(s)) for n, t, s in rows]
        return columns, [str(k) for (k,) in key]

    def bucket_sums(self, plan: ColumnPlan, buckets: int) -> dict[int, tuple[int, int]]:
        """Bucket -> (rows, checksum) of the source table."""
        rows = self.conn.execute(bucket_query(POSTGRES, plan, buckets), ()).fetchall()
        return {int(b): (int(n), int(h)) for b, n, h in rows}

    def rows(self, plan: ColumnPlan, *, buckets: int, in_buckets: Sequence[int] = (),
             keys: Sequence[str] = ()) -> list[tuple[str | None, ...]]:
        """The compared columns' texts of the rows in ``in_buckets``, or of the key texts ``keys``."""
        if keys:
            return [tuple(r) for r in self.conn.execute(rows_query(POSTGRES, plan, buckets=buckets, by_key=True),
                                                        (list(keys),)).fetchall()]
        if not in_buckets:
            return []
        return [tuple(r) for r in self.conn.execute(rows_query(POSTGRES, plan, buckets=buckets, by_key=False),
                                                    (list(in_buckets),)).fetchall()]
