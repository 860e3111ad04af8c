"""The narrow gateway: every statement and procedure call the Oracle connector sends to the database.

The connector reaches Oracle only through `OracleGateway`, which runs `Statement` s and
`Procedure` calls built here and nothing else. Fixed texts are constants; the others are built
from typed values (identifiers double-quoted with ``"`` doubled, SCNs as integers), so no value
of a row or an option is ever spliced into SQL unquoted. Statement texts keep Debezium's JDBC
``?`` placeholders (`Statement.sql`); python-oracledb receives them as ``:b1``, ``:b2``, ...
(`Statement.oracle_sql`), which it binds by position.

The LogMiner session is Debezium 3.6.3's for the online-catalog strategy: the redo logs
(`statements.all_minable_logs`) are added with ``DBMS_LOGMNR.ADD_LOGFILE``, mining starts with
``DBMS_LOGMNR.START_LOGMNR`` over ``[start SCN, end SCN]`` with ``DICT_FROM_ONLINE_CATALOG`` and
``NO_ROWID_IN_STMT``, the window is read with `mining_query.mining_query`, and
``DBMS_LOGMNR.END_LOGMNR`` ends it.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from cdc_sources.oracle import statements as st
from cdc_sources.oracle.mining_query import EXCLUDED_SCHEMAS

__all__ = [
    "CAPTURABLE_TABLES",
    "CATALOGUE",
    "CURRENT_SCN",
    "DBMS_LOGMNR_OPTIONS",
    "OPEN_TRANSACTIONS",
    "PRIMARY_KEY",
    "TABLE_COLUMNS",
    "GatewayError",
    "OracleGateway",
    "Procedure",
    "ProcedureName",
    "Statement",
    "StatementKind",
    "add_logfile",
    "end_logmnr",
    "minable_logs",
    "mining",
    "quote",
    "snapshot_select",
    "start_logmnr",
]


class GatewayError(RuntimeError):
    """A database call failed (names the statement kind; never a credential)."""


class StatementKind(enum.Enum):
    NLS_SESSION = "nls session"
    UTC_SESSION = "utc session"
    CURRENT_SCN = "current scn"
    TABLE_COLUMNS = "table columns"
    PRIMARY_KEY = "primary key"
    SUPPLEMENTAL_LOGGING_MIN = "supplemental logging min"
    CAPTURABLE_TABLES = "capturable tables"
    OPEN_TRANSACTIONS = "open transactions"
    MINABLE_LOGS = "minable logs"
    MINING = "mining query"
    SNAPSHOT_SELECT = "snapshot select"
    CHUNK_SELECT = "chunk select"
    MAX_KEY = "max key"
    SIGNAL_INSERT = "signal insert"
    SIGNAL_DELETE = "signal delete"
    SIGNAL_READ = "signal read"
    BLOCKING_SELECT = "blocking snapshot select"


_BIND = re.compile(r"""'[^']*'|"[^"]*"|\?""")


@dataclass(frozen=True, slots=True)
class Statement:
    """One catalogue statement: its kind, its text with ``?`` placeholders, and their number."""

    kind: StatementKind
    sql: str
    parameters: int = 0

    @property
    def oracle_sql(self) -> str:
        """The text python-oracledb runs: each ``?`` outside a literal or quoted name becomes ``:b<n>``."""
        count = 0

        def bind(m: re.Match[str]) -> str:
            nonlocal count
            if m.group(0) != "?":
                return m.group(0)
            count += 1
            return f":b{count}"

        return _BIND.sub(bind, self.sql)


class ProcedureName(enum.Enum):
    ADD_LOGFILE = "DBMS_LOGMNR.ADD_LOGFILE"
    START_LOGMNR = "DBMS_LOGMNR.START_LOGMNR"
    END_LOGMNR = "DBMS_LOGMNR.END_LOGMNR"


@dataclass(frozen=True, slots=True)
class Procedure:
    """One catalogue procedure call: its name and keyword arguments."""

    name: ProcedureName
    arguments: Mapping[str, Any]


DBMS_LOGMNR_OPTIONS = {"NEW": 1, "ADDFILE": 3, "DICT_FROM_ONLINE_CATALOG": 16, "NO_ROWID_IN_STMT": 2048}
"""The ``DBMS_LOGMNR`` constants the session passes (their values in Oracle's package)."""

NLS_SESSION = Statement(StatementKind.NLS_SESSION, st.NLS_SESSION)
UTC_SESSION = Statement(StatementKind.UTC_SESSION, st.UTC_SESSION)
CURRENT_SCN = Statement(StatementKind.CURRENT_SCN, "SELECT CURRENT_SCN FROM V$DATABASE")
TABLE_COLUMNS = Statement(
    StatementKind.TABLE_COLUMNS,
    "SELECT COLUMN_NAME, DATA_TYPE, DATA_LENGTH, DATA_PRECISION, DATA_SCALE, NULLABLE FROM ALL_TAB_COLUMNS "
    "WHERE OWNER = ? AND TABLE_NAME = ? ORDER BY COLUMN_ID", 2)
"""A table's columns in table order (bind: owner, table name)."""
PRIMARY_KEY = Statement(
    StatementKind.PRIMARY_KEY,
    "SELECT C.COLUMN_NAME FROM ALL_CONSTRAINTS K, ALL_CONS_COLUMNS C WHERE K.CONSTRAINT_TYPE = 'P' "
    "AND K.OWNER = ? AND K.TABLE_NAME = ? AND C.OWNER = K.OWNER AND C.CONSTRAINT_NAME = K.CONSTRAINT_NAME "
    "ORDER BY C.POSITION", 2)
"""A table's primary key columns in key order (bind: owner, table name)."""
SUPPLEMENTAL_LOGGING_MIN = Statement(StatementKind.SUPPLEMENTAL_LOGGING_MIN, st.SUPPLEMENTAL_LOGGING_MIN)
CAPTURABLE_TABLES = Statement(
    StatementKind.CAPTURABLE_TABLES,
    "SELECT OWNER, TABLE_NAME FROM ALL_TABLES WHERE OWNER NOT IN ("
    + ",".join(f"'{s}'" for s in EXCLUDED_SCHEMAS) + ") AND NESTED = 'NO' ORDER BY OWNER, TABLE_NAME")
"""The tables the user can read outside Oracle's own schemas (the filters pick the captured ones)."""
OPEN_TRANSACTIONS = Statement(StatementKind.OPEN_TRANSACTIONS, "SELECT XID, START_SCN FROM V$TRANSACTION")
"""The transactions in flight (at a snapshot: their changes are mined from their start)."""

CATALOGUE: dict[StatementKind, Statement] = {
    s.kind: s for s in (NLS_SESSION, UTC_SESSION, CURRENT_SCN, TABLE_COLUMNS, PRIMARY_KEY, SUPPLEMENTAL_LOGGING_MIN,
                        CAPTURABLE_TABLES, OPEN_TRANSACTIONS)}
"""The fixed statements; the others are built by the functions below."""


def quote(name: str) -> str:
    """An Oracle quoted identifier."""
    return '"' + name.replace('"', '""') + '"'


def _scn(value: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"not an SCN: {value!r}")
    return value


def snapshot_select(owner: str, table: str, columns: Sequence[str], scn: int) -> Statement:
    """The table's rows as of ``scn`` (a flashback query), its columns in the given order."""
    if not columns:
        raise ValueError(f"table {owner}.{table}: no columns to select")
    return Statement(StatementKind.SNAPSHOT_SELECT,
                     f"SELECT {', '.join(quote(c) for c in columns)} FROM {quote(owner)}.{quote(table)} "
                     f"AS OF SCN {_scn(scn)}")


def minable_logs(scn: int, destinations: Sequence[str] = ("LOG_ARCHIVE_DEST_1",)) -> Statement:
    """The redo logs to mine from ``scn`` (online and archived, Debezium's query)."""
    return Statement(StatementKind.MINABLE_LOGS, st.all_minable_logs(_scn(scn), 0, False, destinations))


def mining(query: str) -> Statement:
    """The ``V$LOGMNR_CONTENTS`` query built by `cdc_sources.oracle.mining_query.mining_query`
    (bind: the window's lower SCN, exclusive, and upper SCN, inclusive)."""
    if not query.startswith("SELECT ") or " FROM V$LOGMNR_CONTENTS WHERE SCN > ? AND SCN <= ?" not in query:
        raise ValueError("not a LogMiner mining query")
    return Statement(StatementKind.MINING, query, 2)


def add_logfile(file_name: str, first: bool) -> Procedure:
    options = DBMS_LOGMNR_OPTIONS["NEW" if first else "ADDFILE"]
    return Procedure(ProcedureName.ADD_LOGFILE, {"LOGFILENAME": file_name, "OPTIONS": options})


def start_logmnr(start_scn: int, end_scn: int) -> Procedure:
    """Mining of ``[start_scn, end_scn]`` with the online catalog as dictionary."""
    if _scn(end_scn) < _scn(start_scn):
        raise ValueError(f"mining window ends ({end_scn}) before it starts ({start_scn})")
    options = DBMS_LOGMNR_OPTIONS["DICT_FROM_ONLINE_CATALOG"] + DBMS_LOGMNR_OPTIONS["NO_ROWID_IN_STMT"]
    return Procedure(ProcedureName.START_LOGMNR, {"STARTSCN": start_scn, "ENDSCN": end_scn, "OPTIONS": options})


def end_logmnr() -> Procedure:
    return Procedure(ProcedureName.END_LOGMNR, {})


class Cursor(Protocol):
    """What the gateway uses of a python-oracledb cursor."""

    arraysize: int
    description: Any

    def execute(self, statement: str, parameters: Any = None) -> Any: ...
    def fetchmany(self, size: int = ...) -> list[Any]: ...
    def callproc(self, name: str, parameters: Any = None, keyword_parameters: Any = None) -> Any: ...
    def close(self) -> None: ...


class Connection(Protocol):
    """What the gateway uses of a python-oracledb connection."""

    def cursor(self) -> Any: ...
    def commit(self) -> None: ...
    def close(self) -> None: ...


class OracleGateway:
    """Runs catalogue statements and procedures on a python-oracledb connection (or one that
    behaves like it)."""

    def __init__(self, connection: Connection, *, fetch_size: int = 2000) -> None:
        self._conn = connection
        self._fetch_size = fetch_size

    def run(self, statement: Statement, parameters: Sequence[Any] = ()) -> None:
        """Run a statement that returns no rows."""
        self._check(statement, parameters)
        cursor = self._conn.cursor()
        try:
            cursor.execute(statement.oracle_sql, list(parameters) or None)
        finally:
            cursor.close()

    def rows(self, statement: Statement, parameters: Sequence[Any] = ()) -> Iterator[tuple[Any, ...]]:
        """The statement's rows, fetched ``fetch_size`` at a time."""
        self._check(statement, parameters)
        cursor = self._conn.cursor()
        try:
            cursor.arraysize = self._fetch_size
            cursor.execute(statement.oracle_sql, list(parameters) or None)
            while True:
                batch = cursor.fetchmany(self._fetch_size)
                if not batch:
                    return
                yield from (tuple(r) for r in batch)
        finally:
            cursor.close()

    def columns(self, statement: Statement, parameters: Sequence[Any] = ()) -> tuple[list[str], list[tuple[Any, ...]]]:
        """The statement's column names and all its rows (for small answers)."""
        self._check(statement, parameters)
        cursor = self._conn.cursor()
        try:
            cursor.execute(statement.oracle_sql, list(parameters) or None)
            names = [d[0] for d in cursor.description or ()]
            out: list[tuple[Any, ...]] = []
            while batch := cursor.fetchmany(self._fetch_size):
                out.extend(tuple(r) for r in batch)
            return names, out
        finally:
            cursor.close()

    def call(self, procedure: Procedure) -> None:
        cursor = self._conn.cursor()
        try:
            cursor.callproc(procedure.name.value, keyword_parameters=dict(procedure.arguments))
        finally:
            cursor.close()

    def commit(self) -> None:
        """Commit the connection's transaction (a statement `run` that wrote)."""
        self._conn.commit()

    def close(self) -> None:
        self._conn.close()

    @staticmethod
    def _check(statement: Statement, parameters: Sequence[Any]) -> None:
        if len(parameters) != statement.parameters:
            raise ValueError(f"{statement.kind.value}: {statement.parameters} parameter(s) expected, "
                             f"{len(parameters)} given")
