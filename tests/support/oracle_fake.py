"""A fake python-oracledb connection that serves only the Oracle gateway's catalogue statements.

`FakeOracleDatabase` holds what a real database would answer: the tables (``ALL_TAB_COLUMNS``,
primary keys), their rows as of any SCN (for ``AS OF SCN`` selects), the current SCN, and the
``V$LOGMNR_CONTENTS`` rows with Debezium 3.6.3's exact column set (`LOGMNR_COLUMNS`).
`FakeOracleConnection` (duck-typed ``cursor()``/``close()``; cursors with ``execute``,
``fetchmany``, ``fetchall``, ``fetchone``, ``description``, ``callproc``) answers:

- the fixed catalogue statements (session settings, current SCN, table columns, primary key,
  supplemental logging), byte for byte;
- snapshot selects and the minable-logs query, recognised by rebuilding them with the
  catalogue's builders from the values they carry (a text the builder would not produce fails);
- the mining query the database was given (`FakeOracleDatabase.mining_query`), only between
  ``DBMS_LOGMNR.START_LOGMNR`` and ``END_LOGMNR`` and only inside the started window: rows with
  ``SCN > :b1 AND SCN <= :b2``, no higher than the current SCN, with the default filter mode's
  predicates (operation codes, Oracle's own schemas, materialized view logs);
- ``DBMS_LOGMNR.ADD_LOGFILE``/``START_LOGMNR``/``END_LOGMNR`` through ``callproc``;
- with a `LiveBackend` (a database that changes while capture runs, `tests.support.oracle_live`):
  ``SELECT CURRENT_SCN`` first brings the contents up to date, and the incremental snapshot's
  statements (chunk and largest-key selects, signal-table inserts, deletes and look-ups, recognised by
  their shape) run on the backend's tables.

Anything else raises `FakeOracleError` naming the statement. Every statement served is kept in
`FakeOracleDatabase.served` (tests parse them with sqlglot).
"""

from __future__ import annotations

import bisect
import json
import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol

from cdc_sources.oracle import gateway as gw
from cdc_sources.oracle.mining_query import EXCLUDED_SCHEMAS

LOGMNR_COLUMNS = ("SCN", "SQL_REDO", "OPERATION_CODE", "TIMESTAMP", "XID", "CSF", "TABLE_NAME", "SEG_OWNER",
                  "OPERATION", "ROW_ID", "ROLLBACK", "STATUS", "INFO", "SSN", "THREAD#", "DATA_OBJ#", "DATA_OBJV#",
                  "DATA_OBJD#", "START_SCN", "COMMIT_SCN", "SEQUENCE#", "START_TIMESTAMP", "COMMIT_TIMESTAMP",
                  "RS_ID", "USERNAME", "CLIENT_ID")
"""The columns of Debezium 3.6.3's mining query, in its order (with every tracking option on)."""

_CODES = frozenset({1, 2, 3, 6, 7, 27, 34, 36, 255})
_EXCLUDED = frozenset(EXCLUDED_SCHEMAS)
REDO_LOG = "/u01/oradata/ORCLCDB/redo01.log"


def load_contents(path: str | Path) -> list[dict[str, Any]]:
    """A fixture corpus: JSON lines of ``V$LOGMNR_CONTENTS`` rows, each completed to the exact
    column set (a column a line leaves out is NULL; ``TIMESTAMP`` is ISO text; ``CSF``,
    ``ROLLBACK``, ``STATUS``, ``SSN`` default to 0, ``THREAD#`` to 1)."""
    out = []
    for n, line in enumerate(Path(path).read_text().splitlines(), start=1):
        if not line.strip():
            continue
        given = json.loads(line)
        unknown = set(given) - set(LOGMNR_COLUMNS)
        if unknown:
            raise ValueError(f"{path}:{n}: not V$LOGMNR_CONTENTS columns: {sorted(unknown)}")
        row: dict[str, Any] = {**dict.fromkeys(LOGMNR_COLUMNS), "CSF": 0, "ROLLBACK": 0, "STATUS": 0, "SSN": 0,
                               "THREAD#": 1, **given}
        if row["TIMESTAMP"] is not None:
            row["TIMESTAMP"] = datetime.fromisoformat(row["TIMESTAMP"])
        out.append(row)
    return out


class LiveBackend(Protocol):
    """A database behind the fake that changes while capture runs."""

    def refresh(self, database: FakeOracleDatabase) -> None:
        """Bring ``database.contents`` and ``database.current_scn`` up to date."""
        ...

    def execute(self, sql: str, params: Sequence[Any]) -> tuple[Sequence[str], list[tuple[Any, ...]]]:
        """Run an incremental-snapshot statement (python-oracledb's ``:b<n>`` binds): column names and rows."""
        ...


class FakeOracleError(Exception):
    """What the fake raises for a statement outside the catalogue or a call out of order."""


@dataclass(frozen=True, slots=True)
class FakeColumn:
    """An ``ALL_TAB_COLUMNS`` row."""

    name: str
    data_type: str
    length: int = 22
    precision: int | None = None
    scale: int | None = None
    nullable: bool = True


@dataclass(frozen=True, slots=True)
class FakeTable:
    owner: str
    name: str
    columns: tuple[FakeColumn, ...]
    key: tuple[str, ...]


@dataclass
class FakeOracleDatabase:
    """The state behind the fake connections.

    Attributes:
        tables: the tables by (owner, name).
        contents: ``V$LOGMNR_CONTENTS`` rows (dicts over `LOGMNR_COLUMNS`), in SCN order.
        rows_as_of: the rows of a table as of an SCN, as tuples in column order.
        current_scn: what ``SELECT CURRENT_SCN`` answers; mining never returns rows above it.
        mining_query: the mining query text the connector is configured to run (``?`` form).
        final_scn, scn_step: a live database: each ``SELECT CURRENT_SCN`` moves ``current_scn``
            ``scn_step`` further, up to ``final_scn`` (None: it stays).
    """

    tables: dict[tuple[str, str], FakeTable]
    contents: list[dict[str, Any]]
    rows_as_of: Callable[[str, str, int], list[tuple[Any, ...]]]
    current_scn: int
    mining_query: str
    final_scn: int | None = None
    scn_step: int = 0
    window_delay_s: float = 0.0
    """Each mining query takes this long (a slow database: the kill test's window to kill in)."""
    snapshot_fetch_delay_s: float = 0.0
    """Each fetch from an ``AS OF SCN`` select takes this long (a slow snapshot: the kill test's window)."""
    oldest_scn: int = 0
    """The logs holding SCNs below this were removed: the minable-logs query from a lower SCN answers none."""
    dictionary_changes: list[tuple[int, tuple[str, str], FakeTable | None]] = field(default_factory=list)
    """DDL the database ran: from each SCN on, the dictionary (``ALL_TABLES``, ``ALL_TAB_COLUMNS``,
    keys, ``AS OF SCN`` selects) shows the table as given (None: dropped)."""
    served: list[str] = field(default_factory=list)
    _codes: frozenset[int] = field(init=False, repr=False, default=_CODES)
    calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    live: LiveBackend | None = None
    """The changing database behind the fake (None: `contents` and `current_scn` are fixed)."""

    def __post_init__(self) -> None:
        for row in self.contents:
            missing = set(LOGMNR_COLUMNS) ^ set(row)
            if missing:
                raise ValueError(f"V$LOGMNR_CONTENTS row at SCN {row.get('SCN')}: columns differ: {sorted(missing)}")
        self.contents.sort(key=lambda r: int(r["SCN"]))
        # the operation codes the query selects (LOB operations only with lob.enabled)
        listed = re.search(r"OPERATION_CODE IN \(([0-9,]+)\)", self.mining_query)
        self._codes = frozenset(int(c) for c in listed.group(1).split(",")) if listed else _CODES
        self._scns = [int(r["SCN"]) for r in self.contents]

    def replace_contents(self, contents: list[dict[str, Any]], current_scn: int) -> None:
        """A live database's ``V$LOGMNR_CONTENTS`` rows and current SCN now (the SCN never moves back)."""
        self.contents = sorted(contents, key=lambda r: int(r["SCN"]))
        self._scns = [int(r["SCN"]) for r in self.contents]
        self.current_scn = max(self.current_scn, current_scn)

    def tables_at(self, scn: int) -> dict[tuple[str, str], FakeTable]:
        """The dictionary as of ``scn``: `tables` with every change at or below it applied."""
        out = dict(self.tables)
        for at, name, table in sorted(self.dictionary_changes, key=lambda c: c[0]):
            if at > scn:
                break
            if table is None:
                out.pop(name, None)
            else:
                out[name] = table
        return out

    def rows_between(self, low: int, high: int) -> list[dict[str, Any]]:
        """The rows with ``low < SCN <= high``, in SCN order."""
        return self.contents[bisect.bisect_right(self._scns, low):bisect.bisect_right(self._scns, high)]

    def open_transactions(self, scn: int) -> list[tuple[str, int]]:
        """The transactions started at or below ``scn`` that have not ended there (``V$TRANSACTION``)."""
        started: dict[str, int] = {}
        for r in self.rows_between(-1, scn):
            if r["OPERATION_CODE"] in (7, 36):
                started.pop(r["XID"], None)
            elif r["OPERATION_CODE"] in (1, 2, 3, 6):
                started.setdefault(r["XID"], int(r["SCN"]))
        return sorted(started.items(), key=lambda x: x[1])

    def connect(self) -> FakeOracleConnection:
        return FakeOracleConnection(self)


class FakeOracleConnection:
    """A python-oracledb connection look-alike over a `FakeOracleDatabase`."""

    def __init__(self, database: FakeOracleDatabase) -> None:
        self.database = database
        self.closed = False
        self.mining_window: tuple[int, int] | None = None
        self.logfiles: list[str] = []

    def cursor(self) -> FakeCursor:
        if self.closed:
            raise FakeOracleError("DPY-1001: not connected to database")
        return FakeCursor(self)

    def commit(self) -> None:
        pass

    def close(self) -> None:
        self.closed = True


_SNAPSHOT = re.compile(r'SELECT (.+) FROM "((?:[^"]|"")+)"\."((?:[^"]|"")+)" AS OF SCN (\d+)', re.S)
_NAME = re.compile(r'"((?:[^"]|"")*)"')
_MINABLE = re.compile(r"A\.NEXT_CHANGE# > (\d+) ")
_QNAME = r'"(?:[^"]|"")+"'
_INCREMENTAL = (
    re.compile(rf'SELECT {_QNAME}(?:, {_QNAME})* FROM {_QNAME}\.{_QNAME}(?: WHERE .+)? ORDER BY {_QNAME}(?: DESC)?'
               rf'(?:, {_QNAME}(?: DESC)?)*(?: FETCH FIRST \d+ ROWS ONLY)?', re.S),
    re.compile(rf"INSERT INTO {_QNAME}\.{_QNAME} VALUES \(:b1, :b2, :b3\)"),
    re.compile(rf"SELECT \* FROM {_QNAME}\.{_QNAME} WHERE {_QNAME} IN \(:b1, :b2\)"),
    re.compile(rf"DELETE FROM {_QNAME}\.{_QNAME} WHERE {_QNAME} = :b1"),
)
"""The incremental snapshot's statements (`cdc_sources.oracle.chunk_statements`), by shape."""


class FakeCursor:
    def __init__(self, connection: FakeOracleConnection) -> None:
        self._conn = connection
        self._db = connection.database
        self._rows: list[tuple[Any, ...]] = []
        self.description: list[tuple[Any, ...]] | None = None
        self.arraysize = 100
        self.rowcount = 0
        self._delay = 0.0

    # -- python-oracledb's cursor ------------------------------------------------------------

    def execute(self, statement: str, parameters: Sequence[Any] | None = None) -> None:
        params = list(parameters or [])
        self._db.served.append(statement)
        names, rows = self._answer(statement, params)
        self._delay = self._db.snapshot_fetch_delay_s if _SNAPSHOT.fullmatch(statement) else 0.0
        self.description = [(n, None, None, None, None, None, True) for n in names] if names else None
        self._rows = rows
        self.rowcount = len(rows)

    def fetchmany(self, size: int | None = None) -> list[tuple[Any, ...]]:
        n = self.arraysize if size is None else size
        if self._delay and self._rows:
            time.sleep(self._delay)
        out, self._rows = self._rows[:n], self._rows[n:]
        return out

    def fetchall(self) -> list[tuple[Any, ...]]:
        out, self._rows = self._rows, []
        return out

    def fetchone(self) -> tuple[Any, ...] | None:
        return self.fetchmany(1)[0] if self._rows else None

    def callproc(self, name: str, parameters: Sequence[Any] | None = None,
                 keyword_parameters: Mapping[str, Any] | None = None) -> list[Any]:
        kw = dict(keyword_parameters or {})
        self._db.calls.append((name, kw))
        if parameters:
            raise FakeOracleError(f"{name}: positional parameters are not used by the connector")
        if name == gw.ProcedureName.ADD_LOGFILE.value:
            if kw.get("OPTIONS") == gw.DBMS_LOGMNR_OPTIONS["NEW"]:
                self._conn.logfiles = []
            self._conn.logfiles.append(str(kw["LOGFILENAME"]))
        elif name == gw.ProcedureName.START_LOGMNR.value:
            expected = gw.start_logmnr(int(kw["STARTSCN"]), int(kw["ENDSCN"]))
            if expected.arguments != kw:
                raise FakeOracleError(f"START_LOGMNR with unexpected arguments {kw}")
            if not self._conn.logfiles:
                raise FakeOracleError("ORA-01292: no log file has been specified for the current LogMiner session")
            if int(kw["ENDSCN"]) > self._db.current_scn:
                raise FakeOracleError(f"ORA-01291: missing log file (end SCN {kw['ENDSCN']} is above the current "
                                      f"SCN {self._db.current_scn})")
            self._conn.mining_window = (int(kw["STARTSCN"]), int(kw["ENDSCN"]))
        elif name == gw.ProcedureName.END_LOGMNR.value:
            if kw:
                raise FakeOracleError(f"END_LOGMNR takes no arguments, got {kw}")
            if self._conn.mining_window is None:
                raise FakeOracleError("ORA-01307: no LogMiner session is currently active")
            self._conn.mining_window = None
        else:
            raise FakeOracleError(f"procedure not in the catalogue: {name!r}")
        return []

    def close(self) -> None:
        self._rows = []

    # -- the catalogue -----------------------------------------------------------------------

    def _answer(self, sql: str, params: list[Any]) -> tuple[Sequence[str], list[tuple[Any, ...]]]:
        for statement in gw.CATALOGUE.values():
            if sql == statement.oracle_sql:
                self._arity(statement, params)
                return self._fixed(statement.kind, params)
        if sql == gw.mining(self._db.mining_query).oracle_sql:
            self._arity(gw.mining(self._db.mining_query), params)
            return LOGMNR_COLUMNS, self._mine(int(params[0]), int(params[1]))
        m = _SNAPSHOT.fullmatch(sql)
        if m is not None:
            columns = _NAME.findall(m.group(1))
            owner, table, scn = m.group(2).replace('""', '"'), m.group(3).replace('""', '"'), int(m.group(4))
            columns = [c.replace('""', '"') for c in columns]
            if gw.snapshot_select(owner, table, columns, scn).oracle_sql == sql:
                return columns, self._snapshot(owner, table, columns, scn)
        if self._db.live is not None and any(p.fullmatch(sql) for p in _INCREMENTAL):
            return self._db.live.execute(sql, params)
        m = _MINABLE.search(sql)
        if m is not None and gw.minable_logs(int(m.group(1))).oracle_sql == sql:
            if int(m.group(1)) < self._db.oldest_scn:
                return ("FILE_NAME", "FIRST_CHANGE", "NEXT_CHANGE", "ARCHIVED", "STATUS", "TYPE", "SEQ", "DICT_START",
                        "DICT_END", "THREAD", "BYTES", "DEST_NAME"), []
            return (("FILE_NAME", "FIRST_CHANGE", "NEXT_CHANGE", "ARCHIVED", "STATUS", "TYPE", "SEQ", "DICT_START",
                     "DICT_END", "THREAD", "BYTES", "DEST_NAME"),
                    [(REDO_LOG, 1, 2**64 - 1, "NO", "CURRENT", "ONLINE", 1, "NO", "NO", 1, 1 << 26, None)])
        raise FakeOracleError(f"statement not in the catalogue: {sql!r}")

    @staticmethod
    def _arity(statement: gw.Statement, params: list[Any]) -> None:
        if len(params) != statement.parameters:
            raise FakeOracleError(f"ORA-01008: not all variables bound ({statement.kind.value}: "
                                  f"{len(params)} of {statement.parameters})")

    def _fixed(self, kind: gw.StatementKind, params: list[Any]) -> tuple[Sequence[str], list[tuple[Any, ...]]]:
        if kind in (gw.StatementKind.NLS_SESSION, gw.StatementKind.UTC_SESSION):
            return (), []
        if kind is gw.StatementKind.CURRENT_SCN:
            db = self._db
            if db.live is not None:
                db.live.refresh(db)
            if db.final_scn is not None:
                db.current_scn = min(db.final_scn, db.current_scn + db.scn_step)
            return ("CURRENT_SCN",), [(db.current_scn,)]
        if kind is gw.StatementKind.CAPTURABLE_TABLES:
            return ("OWNER", "TABLE_NAME"), sorted(self._db.tables_at(self._db.current_scn))
        if kind is gw.StatementKind.OPEN_TRANSACTIONS:
            return ("XID", "START_SCN"), self._db.open_transactions(self._db.current_scn)
        if kind is gw.StatementKind.SUPPLEMENTAL_LOGGING_MIN:
            return ("'KEY'", "SUPPLEMENTAL_LOG_DATA_MIN"), [("KEY", "YES")]
        table = self._db.tables_at(self._db.current_scn).get((str(params[0]), str(params[1])))
        if kind is gw.StatementKind.TABLE_COLUMNS:
            cols = table.columns if table is not None else ()
            return (("COLUMN_NAME", "DATA_TYPE", "DATA_LENGTH", "DATA_PRECISION", "DATA_SCALE", "NULLABLE"),
                    [(c.name, c.data_type, c.length, c.precision, c.scale, "Y" if c.nullable else "N") for c in cols])
        if kind is gw.StatementKind.PRIMARY_KEY:
            return ("COLUMN_NAME",), [(k,) for k in (table.key if table is not None else ())]
        raise FakeOracleError(f"no answer for {kind}")

    def _snapshot(self, owner: str, table: str, columns: list[str], scn: int) -> list[tuple[Any, ...]]:
        found = self._db.tables_at(scn).get((owner, table))
        if found is None:
            raise FakeOracleError(f'ORA-00942: table or view "{owner}"."{table}" does not exist')
        if scn > self._db.current_scn and self._db.live is not None:
            self._db.live.refresh(self._db)  # a live database's SCN is always ahead of what anyone read
        if scn > self._db.current_scn:
            raise FakeOracleError(f"ORA-08180: no snapshot found based on specified time (SCN {scn})")
        names = [c.name for c in found.columns]
        picks = [names.index(c) for c in columns]
        return [tuple(row[i] for i in picks) for row in self._db.rows_as_of(owner, table, scn)]

    def _mine(self, low: int, high: int) -> list[tuple[Any, ...]]:
        window = self._conn.mining_window
        if window is None:
            raise FakeOracleError("ORA-01306: dbms_logmnr.start_logmnr() must be invoked before selecting from "
                                  "v$logmnr_contents")
        if low < window[0] - 1 or high > window[1]:
            raise FakeOracleError(f"mining query window ({low}, {high}] outside the started window {window}")
        high = min(high, self._db.current_scn)
        if self._db.window_delay_s:
            time.sleep(self._db.window_delay_s)
        out = []
        for r in self._db.rows_between(low, high):
            code, owner, table = r["OPERATION_CODE"], r["SEG_OWNER"], r["TABLE_NAME"]
            wanted = ((code in self._db._codes and (owner is None or owner not in _EXCLUDED)
                       and (table is None or not str(table).startswith("MLOG$")))
                      or (code == 5 and r["INFO"] is not None and not str(r["INFO"]).startswith("INTERNAL DDL")))
            if wanted:
                out.append(tuple(r[c] for c in LOGMNR_COLUMNS))
        return out
