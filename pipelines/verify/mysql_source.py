"""The MySQL/MariaDB side of `verify`: a consistent read with a known binlog position.

Connected like the capture (`cdc_sources.mysql.connection.connect`: UTC, utf8mb4, TLS and
``database.initial.statements`` as configured).

* MariaDB: ``START TRANSACTION WITH CONSISTENT SNAPSHOT`` opens the read view and the server
  reports the binlog position of exactly that view (``binlog_snapshot_file`` /
  ``binlog_snapshot_position``), with no lock.
* MySQL has no such status: as Debezium does, ``FLUSH TABLES WITH READ LOCK`` is held while
  the read view opens and the binlog position is read, then released (it blocks writers for
  that instant; it needs the RELOAD privilege).

A transaction's events are written to the binlog whole, at commit: a bronze row was in the
read iff its transaction starts before that position (the row's ``position`` ``file``/``pos``
is its transaction's start). Capture has everything of the read once its committed offset is
at or past the position.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa

from cdc_sources.mysql.checks import check_flavor
from cdc_sources.mysql.config import MySqlSourceConfig
from cdc_sources.mysql.connection import binlog_status_sql, connect, query_rows, server_info
from cdc_sources.mysql.offset import binlog_file_number
from pipelines.verify.canonical import ColumnKind
from pipelines.verify.model import ColumnPlan, ReadPoint, SourceColumn, VerifyError
from pipelines.verify.source_sql import MYSQL, bucket_query, rows_query

__all__ = ["BinlogReadPoint", "MySqlReader", "mysql_kind"]


class BinlogReadPoint(ReadPoint):
    """A binlog position: the end of the last transaction the read sees."""

    def __init__(self, file: str, pos: int) -> None:
        self.file, self.pos = file, pos
        self._at = (binlog_file_number(file), pos)

    def describe(self) -> str:
        return f"binlog {self.file}:{self.pos}"

    def _position(self, data: Mapping[str, Any]) -> tuple[int, int] | None:
        file, pos = data.get("file"), data.get("pos")
        if file is None or pos is None:
            return None
        return binlog_file_number(str(file)), int(pos)

    def capture_reached(self, offset: Mapping[str, Any]) -> bool:
        if offset.get("snapshot") not in (None, False, "false") and not offset.get("snapshot_completed"):
            return False
        at = self._position(offset)
        return at is not None and at >= self._at

    def includes(self, position: Mapping[str, Any]) -> bool:
        at = self._position(position)
        if at is None:
            raise VerifyError(f"a bronze row's position has no binlog file/pos: {dict(position)}")
        return at < self._at


_INTS = {"tinyint", "smallint", "mediumint", "int", "bigint", "tinyint unsigned", "smallint unsigned",
         "mediumint unsigned", "int unsigned", "year"}
_TEXTS = {"char", "varchar", "tinytext", "text", "mediumtext", "longtext", "enum"}
_BYTES = {"binary", "varbinary", "tinyblob", "blob", "mediumblob", "longblob"}


def mysql_kind(column: SourceColumn, silver: pa.DataType) -> ColumnKind | None:
    """The canonical kind of a MySQL column (``DATA_TYPE`` [+ ``unsigned``]) and its silver type."""
    t = column.type_name
    if t in _INTS and pa.types.is_integer(silver):
        return ColumnKind.INT
    if t == "bigint unsigned" and pa.types.is_decimal(silver) and silver.scale == 0:
        return ColumnKind.INT  # bigint.unsigned.handling.mode=precise; the long mode wraps around
    if t in ("decimal", "decimal unsigned") and pa.types.is_decimal(silver) and silver.scale == column.scale:
        return ColumnKind.DECIMAL
    if t in _TEXTS and (pa.types.is_string(silver) or pa.types.is_large_string(silver)):
        return ColumnKind.TEXT
    if t in _BYTES and (pa.types.is_binary(silver) or pa.types.is_large_binary(silver)):
        return ColumnKind.BYTES
    if t == "date" and pa.types.is_date32(silver):
        return ColumnKind.DATE
    if t in ("datetime", "timestamp") and pa.types.is_timestamp(silver):
        return ColumnKind.TIMESTAMP
    return None


class MySqlReader:
    """One consistent read of a MySQL/MariaDB source (see module doc). Not thread-safe."""

    kind_of = staticmethod(mysql_kind)

    def __init__(self, config: MySqlSourceConfig) -> None:
        self.config = config
        self.conn: Any = None

    def open(self) -> BinlogReadPoint:
        """Start the read; the returned point describes it."""
        self.close()
        self.conn = connect(self.config.connection)
        server = server_info(self.conn)
        check_flavor(self.config, server)
        with self.conn.cursor() as cur:
            cur.execute("SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ")
            if server.flavor == "mariadb":
                cur.execute("START TRANSACTION WITH CONSISTENT SNAPSHOT, READ ONLY")
                cur.execute("SHOW STATUS LIKE 'binlog_snapshot_%'")
                status = {str(k).lower(): v for k, v in cur.fetchall()}
                file = str(status.get("binlog_snapshot_file") or "")
                pos = int(status.get("binlog_snapshot_position") or 0)
            else:
                cur.execute("FLUSH TABLES WITH READ LOCK")
                try:
                    cur.execute("START TRANSACTION WITH CONSISTENT SNAPSHOT, READ ONLY")
                    cur.execute(binlog_status_sql(server))
                    row = cur.fetchone()
                finally:
                    cur.execute("UNLOCK TABLES")
                file, pos = (str(row[0]), int(row[1])) if row else ("", 0)
        if not file:
            raise VerifyError("the server reports no binlog position: is the binlog enabled (log_bin)?")
        return BinlogReadPoint(file, pos)

    def close(self) -> None:
        if self.conn is not None:
            self.conn.close()
            self.conn = None

    def columns(self, container: str, table: str) -> tuple[list[SourceColumn], list[str]]:
        """The table's columns and primary key.

        Raises:
            VerifyError: no such table.
        """
        rows = query_rows(self.conn,
                          "SELECT COLUMN_NAME, DATA_TYPE, COLUMN_TYPE, NUMERIC_SCALE FROM information_schema.COLUMNS "
                          "WHERE TABLE_SCHEMA = %s AND TABLE_NAME = %s ORDER BY ORDINAL_POSITION", (container, table))
        if not rows:
            raise VerifyError(f"source table {container}.{table} does not exist (or the user cannot see it)")
        key = query_rows(self.conn,
                         "SELECT COLUMN_NAME FROM information_schema.KEY_COLUMN_USAGE WHERE TABLE_SCHEMA = %s "
                         "AND TABLE_NAME = %s AND CONSTRAINT_NAME = 'PRIMARY' ORDER BY ORDINAL_POSITION",
                         (container, table))
        columns = []
        for name, data_type, column_type, scale in rows:
            kind = str(data_type).lower()
            if "unsigned" in str(column_type).lower():
                kind += " unsigned"
            columns.append(SourceColumn(str(name), kind, None if scale is None else int(scale)))
        return columns, [str(k) for (k,) in key]

    def bucket_sums(self, plan: ColumnPlan, buckets: int) -> dict[int, tuple[int, int]]:
        """Bucket -> (rows, checksum) of the source table."""
        rows = query_rows(self.conn, bucket_query(MYSQL, plan, buckets), ())
        return {int(b): (int(n), int(h)) for b, n, h in rows}

    def rows(self, plan: ColumnPlan, *, buckets: int, in_buckets: Sequence[int] = (),
             keys: Sequence[str] = ()) -> list[tuple[str | None, ...]]:
        """The compared columns' texts of the rows in ``in_buckets``, or of the key texts ``keys``."""
        if keys:
            return query_rows(self.conn, rows_query(MYSQL, plan, buckets=buckets, by_key=True), (list(keys),))
        if not in_buckets:
            return []
        return query_rows(self.conn, rows_query(MYSQL, plan, buckets=buckets, by_key=False), (list(in_buckets),))
