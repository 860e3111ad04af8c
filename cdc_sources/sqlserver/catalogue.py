"""Every statement the SQL Server connector sends: a fixed catalogue, nothing else.

The connector reaches its server only through these statements (the narrow gateway): fixed
texts, plus builders that put bracket-quoted identifiers (``[name]``, ``]`` doubled) into a few
fixed shapes. Values always travel as ``?`` parameters. Every statement parses as T-SQL with
sqlglot (tests/cdc_sources/sqlserver/test_catalogue.py), so a typo shows without a server.

Transaction isolation is not a statement: it is set through the ODBC driver
(``SQL_ATTR_TXN_ISOLATION``), as Debezium sets it through JDBC; see `ISOLATION`.
Transactions begin and end through the driver too (autocommit off, ``commit``/``rollback``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum
from types import MappingProxyType
from typing import Final

from cdc_sources.common.blocking_snapshot import BlockingCollection, row_source

__all__ = [
    "CATALOGUE",
    "ISOLATION",
    "PARSED_TYPES",
    "Statement",
    "StatementKind",
    "blocking_select",
    "changes_direct",
    "changes_function",
    "chunk_select",
    "keyset_parameters",
    "lock_table",
    "max_key_select",
    "parse_default",
    "quote",
    "set_lock_timeout",
    "signal_delete",
    "signal_insert",
    "signal_watermarks",
    "snapshot_select",
    "use_database",
]


class StatementKind(Enum):
    """What a statement is for."""

    DATABASE_NAME = "the current database's name"
    VERSION = "the server's version (commit times are read in UTC from SQL Server 2017 on)"
    USE_DATABASE = "switch to one of database.names"
    CDC_ENABLED = "whether change data capture is enabled in a database (sys.databases)"
    MAX_LSN = "the highest LSN in the change tables (sys.fn_cdc_get_max_lsn)"
    MAX_LSN_PAIR = "the highest LSN and the highest transactional LSN of cdc.lsn_time_mapping"
    MIN_LSN = "the lowest LSN a capture instance still holds"
    INCREMENT_LSN = "the LSN after a given one"
    LSN_TO_TIME = "the commit time of an LSN"
    LSN_TO_TIME_UTC = "the commit time of an LSN, in UTC (SQL Server 2017 and later)"
    CAPTURE_INSTANCES = "every capture instance (sys.sp_cdc_help_change_data_capture)"
    NEW_CHANGE_TABLES = "capture instances created in an LSN range"
    KEY_COLUMNS = "a capture instance's key columns"
    TABLE_COLUMNS = "a source table's columns, types, nullability and default constraints"
    PARSE_DEFAULT = "a date/time column default's text read as the column's type (Debezium's PARSE)"
    CHANGES_FUNCTION = "a capture instance's changes in an LSN range, through its function"
    CHANGES_DIRECT = "a capture instance's changes in an LSN range, from its change table"
    SET_LOCK_TIMEOUT = "how long snapshot locks are waited for"
    LOCK_TABLE = "an exclusive table lock for the snapshot's schema capture"
    SNAPSHOT_SELECT = "the snapshot's read of a table's captured columns"
    CHUNK_SELECT = "an incremental snapshot's read of one chunk of a table, in key order"
    MAX_KEY_SELECT = "a table's largest key (where an incremental snapshot of it ends)"
    SIGNAL_INSERT = "a watermark row written to the signal table"
    SIGNAL_DELETE = "a watermark row deleted from the signal table (insert_delete: a chunk's close)"
    SIGNAL_WATERMARKS = "a chunk's watermark rows read back from the signal table"
    BLOCKING_SELECT = "a blocking snapshot's read of a table (or of the signal's SELECT)"


@dataclass(frozen=True)
class Statement:
    """One catalogue statement: its kind, T-SQL text and number of ``?`` parameters."""

    kind: StatementKind
    sql: str
    parameters: int = 0


def quote(identifier: str) -> str:
    """A bracket-quoted T-SQL identifier (``]`` doubled).

    Raises:
        ValueError: an empty identifier, one with a NUL, or longer than SQL Server's 128 characters.
    """
    if not identifier or "\x00" in identifier or len(identifier) > 128:
        raise ValueError(f"not a SQL Server identifier: {identifier!r}")
    return "[" + identifier.replace("]", "]]") + "]"


S = Statement
K = StatementKind

CATALOGUE: Final = MappingProxyType({s.kind: s for s in (
    S(K.DATABASE_NAME, "SELECT DB_NAME()"),
    S(K.VERSION, "SELECT @@VERSION"),
    S(K.MAX_LSN, "SELECT sys.fn_cdc_get_max_lsn()"),
    S(K.MAX_LSN_PAIR, "SELECT (SELECT MAX(start_lsn) FROM cdc.lsn_time_mapping), "
                      "(SELECT MAX(start_lsn) FROM cdc.lsn_time_mapping WHERE tran_id <> 0x00)"),
    S(K.MIN_LSN, "SELECT sys.fn_cdc_get_min_lsn(?)", 1),
    S(K.INCREMENT_LSN, "SELECT sys.fn_cdc_increment_lsn(?)", 1),
    S(K.LSN_TO_TIME, "SELECT sys.fn_cdc_map_lsn_to_time(?)", 1),
    S(K.LSN_TO_TIME_UTC, "SELECT sys.fn_cdc_map_lsn_to_time(?) AT TIME ZONE 'UTC'", 1),
    S(K.CAPTURE_INSTANCES, "EXEC sys.sp_cdc_help_change_data_capture"),
    S(K.NEW_CHANGE_TABLES, "SELECT object_id, source_object_id, capture_instance, start_lsn, end_lsn "
                           "FROM cdc.change_tables WHERE start_lsn BETWEEN ? AND ?", 2),
    S(K.KEY_COLUMNS, "SELECT column_name FROM cdc.index_columns WHERE object_id = ? ORDER BY index_ordinal", 1),
    S(K.TABLE_COLUMNS, "SELECT c.name, t.name, c.max_length, c.precision, c.scale, c.is_nullable, c.column_id, "
                       "d.definition "
                       "FROM sys.columns AS c JOIN sys.types AS t ON c.user_type_id = t.user_type_id "
                       "LEFT JOIN sys.default_constraints AS d ON d.object_id = c.default_object_id "
                       "WHERE c.object_id = OBJECT_ID(?) ORDER BY c.column_id", 1),
    S(K.CDC_ENABLED, "SELECT is_cdc_enabled FROM sys.databases WHERE name = ?", 1),
)})
"""The fixed statements (no identifiers in them), by kind."""

ISOLATION: Final = MappingProxyType({
    "read_uncommitted": 1,  # SQL_TXN_READ_UNCOMMITTED
    "read_committed": 2,  # SQL_TXN_READ_COMMITTED
    "repeatable_read": 4,  # SQL_TXN_REPEATABLE_READ
    "exclusive": 4,  # repeatable read, with the exclusive table locks kept to the end of the snapshot
    "snapshot": 0x20,  # SQL_TXN_SS_SNAPSHOT (Microsoft's ODBC driver)
})
"""``snapshot.isolation.mode`` -> the ODBC ``SQL_ATTR_TXN_ISOLATION`` value for the snapshot."""

_CDC_COLUMNS = "[__$start_lsn], [__$seqval], [__$operation], [__$update_mask]"


def use_database(database: str) -> Statement:
    return S(K.USE_DATABASE, f"USE {quote(database)}")


def changes_function(capture_instance: str) -> Statement:
    """``cdc.fn_cdc_get_all_changes_<instance>(from, to, N'all update old')``: both bounds inclusive,
    update before images included (operation 3)."""
    function = quote(f"fn_cdc_get_all_changes_{capture_instance}")
    return S(K.CHANGES_FUNCTION, f"SELECT * FROM cdc.{function}(?, ?, N'all update old')", 2)


def changes_direct(capture_instance: str, columns: Sequence[str]) -> Statement:
    """The change table ``cdc.<instance>_CT`` between two commit LSNs (inclusive), in stream order."""
    selected = ", ".join([_CDC_COLUMNS, *(quote(c) for c in columns)])
    return S(K.CHANGES_DIRECT, f"SELECT {selected} FROM [cdc].{quote(capture_instance + '_CT')} "
                               "WHERE [__$start_lsn] >= ? AND [__$start_lsn] <= ? "
                               "ORDER BY [__$start_lsn], [__$seqval], [__$operation]", 2)


PARSED_TYPES: Final = frozenset({"date", "time", "datetime", "datetime2", "smalldatetime", "datetimeoffset"})
"""The types whose column defaults Debezium has the server read with ``PARSE``."""


def parse_default(type_name: str) -> Statement:
    """``SELECT PARSE(? AS <type>)``: a date/time default's text read as the column's type, as
    Debezium's ``SqlServerDefaultValueConverter`` reads it (one of `PARSED_TYPES`)."""
    if type_name not in PARSED_TYPES:
        raise ValueError(f"Debezium does not read {type_name!r} defaults with PARSE")
    return S(K.PARSE_DEFAULT, f"SELECT PARSE(? AS {type_name})", 1)


def set_lock_timeout(milliseconds: int) -> Statement:
    """``SET LOCK_TIMEOUT``: -1 waits forever, 0 fails at once (``snapshot.lock.timeout.ms``)."""
    if isinstance(milliseconds, bool) or not isinstance(milliseconds, int) or milliseconds < -1:
        raise ValueError(f"a lock timeout is -1 or more milliseconds, got {milliseconds!r}")
    return S(K.SET_LOCK_TIMEOUT, f"SET LOCK_TIMEOUT {milliseconds}")


def lock_table(schema: str, table: str) -> Statement:
    """An exclusive lock on a table, held to the end of the transaction, reading no row."""
    return S(K.LOCK_TABLE, f"SELECT TOP(0) * FROM {quote(schema)}.{quote(table)} WITH (TABLOCKX)")


def snapshot_select(schema: str, table: str, columns: Sequence[str]) -> Statement:
    """The snapshot's read of ``columns`` (the captured, unfiltered ones) of a table."""
    if not columns:
        raise ValueError(f"a snapshot of {schema}.{table} needs at least one column")
    return S(K.SNAPSHOT_SELECT, f"SELECT {', '.join(quote(c) for c in columns)} FROM {quote(schema)}.{quote(table)}")


_TYPE = re.compile(r"[A-Za-z][A-Za-z0-9_ ]*(\((max|[0-9]+(, ?[0-9]+)?)\))?")


def _typed(sql_type: str) -> str:
    """``CAST(? AS <sql_type>)``: a key value sent as text, compared as the key column's type."""
    if not _TYPE.fullmatch(sql_type):
        raise ValueError(f"not a SQL Server column type: {sql_type!r}")
    return f"CAST(? AS {sql_type})"


def _keyset(key: Sequence[str], types: Sequence[str], last: str) -> str:
    """``key > (?, ...)`` (``last`` ``>``) or ``key <= (?, ...)`` (``<=``) spelled out column by
    column, as T-SQL has no row-value comparison: ``(k1 > ? OR (k1 = ? AND k2 > ?))``; each
    column's values come in key order, one ``?`` per use (see `keyset_parameters`)."""
    strict = "<" if last == "<=" else ">"
    terms = []
    for n in range(len(key)):
        equal = [f"{quote(k)} = {_typed(t)}" for k, t in zip(key[:n], types[:n], strict=True)]
        op = last if n == len(key) - 1 else strict
        terms.append("(" + " AND ".join([*equal, f"{quote(key[n])} {op} {_typed(types[n])}"]) + ")")
    return "(" + " OR ".join(terms) + ")"


def keyset_parameters(values: Sequence[object]) -> list[object]:
    """The parameters of one `_keyset` predicate for a key's ``values``: the terms use
    ``values[:1]``, ``values[:2]``, ... in turn."""
    return [v for n in range(len(values)) for v in values[:n + 1]]


def chunk_select(schema: str, table: str, columns: Sequence[str], key: Sequence[str], key_types: Sequence[str], *,
                 after: bool, upto: bool, condition: str | None, limit: int | None) -> Statement:
    """An incremental snapshot's chunk: ``columns`` of the rows whose ``key`` is above the last
    chunk's (``after``) and not above the table's largest (``upto``), matching ``condition``
    (the signal's ``additional-conditions``, T-SQL as given), in key order, ``TOP (limit)``.
    Parameters: `keyset_parameters` of the after key, then of the upto key."""
    if not columns or not key or len(key) != len(key_types):
        raise ValueError(f"a chunk of {schema}.{table} needs columns and one type per key column")
    where = []
    if after:
        where.append(_keyset(key, key_types, ">"))
    if upto:
        where.append(_keyset(key, key_types, "<="))
    if condition:
        where.append(f"({condition})")
    top = "" if limit is None else f"TOP ({int(limit)}) "
    sql = (f"SELECT {top}{', '.join(quote(c) for c in columns)} FROM {quote(schema)}.{quote(table)}"
           + (" WHERE " + " AND ".join(where) if where else "")
           + " ORDER BY " + ", ".join(quote(k) for k in key))
    n = len(key) * (len(key) + 1) // 2
    return S(K.CHUNK_SELECT, sql, n * (int(after) + int(upto)))


def max_key_select(schema: str, table: str, key: Sequence[str], condition: str | None) -> Statement:
    """The largest ``key`` of the rows matching ``condition``: where an incremental snapshot of the table ends."""
    if not key:
        raise ValueError(f"the largest key of {schema}.{table} needs key columns")
    where = f" WHERE ({condition})" if condition else ""
    return S(K.MAX_KEY_SELECT, f"SELECT TOP (1) {', '.join(quote(k) for k in key)} FROM {quote(schema)}.{quote(table)}"
                               f"{where} ORDER BY {', '.join(quote(k) + ' DESC' for k in key)}")


def signal_insert(schema: str, table: str) -> Statement:
    """A row ``(id, type, data)`` into the signal table (its first three columns, by position, as Debezium writes)."""
    return S(K.SIGNAL_INSERT, f"INSERT INTO {quote(schema)}.{quote(table)} VALUES (?, ?, ?)", 3)


def signal_delete(schema: str, table: str, id_column: str) -> Statement:
    """The signal table's row of one id, deleted (``insert_delete``: a chunk's open watermark at its close)."""
    return S(K.SIGNAL_DELETE, f"DELETE FROM {quote(schema)}.{quote(table)} WHERE {quote(id_column)} = ?", 1)


def signal_watermarks(schema: str, table: str, id_column: str, data_column: str) -> Statement:
    """The signal table's rows of two ids (a chunk's open and close watermarks): id and data."""
    return S(K.SIGNAL_WATERMARKS, f"SELECT {quote(id_column)}, {quote(data_column)} FROM {quote(schema)}."
                                  f"{quote(table)} WHERE {quote(id_column)} IN (?, ?)", 2)


def blocking_select(schema: str, table: str, columns: Sequence[str], select: str | None) -> Statement:
    """A blocking snapshot's read of ``columns`` of a table: all its rows, those matching the
    signal's condition, or the rows of the signal's full ``SELECT`` (Debezium's rule for a
    blocking snapshot's ``additional-conditions``), aliased ``t``."""
    if not columns:
        raise ValueError(f"a snapshot of {schema}.{table} needs at least one column")
    source = row_source(BlockingCollection(schema, table, select), f"{quote(schema)}.{quote(table)}")
    return S(K.BLOCKING_SELECT, f"SELECT {', '.join('t.' + quote(c) for c in columns)} FROM {source}")
