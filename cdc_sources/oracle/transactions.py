"""The LogMiner transaction buffer: ``V$LOGMNR_CONTENTS`` rows in, committed transactions out.

LogMiner returns the changes of all transactions interleaved, in SCN order, including those
that later roll back. `TransactionBuffer` keeps each transaction's rows by ``XID`` and hands a
transaction out only at its ``COMMIT`` row, so transactions come out in commit-SCN order, each
event carrying its transaction's ``commit_scn``:

- ``START`` (6) opens a transaction (a first DML row opens one too);
- ``INSERT``/``UPDATE``/``DELETE`` (1, 2, 3) are buffered; a row with ``CSF = 1`` continues in
  the next row of the same transaction (``SQL_REDO`` longer than 4000 bytes), and the pieces are
  joined; a row with ``ROLLBACK = 1`` undoes the latest buffered change of the same ``ROW_ID``
  (a statement rolled back inside the transaction, e.g. by a constraint violation);
- ``COMMIT`` (7) emits the transaction (nothing when it changed no captured row);
- ``ROLLBACK`` (36) discards it;
- ``DDL`` (5) is emitted at once, outside any transaction (LogMiner commits DDL itself);
  a ``TRUNCATE TABLE`` becomes a `ChangeKind.TRUNCATE` event; other DDL a `ChangeKind.DDL`;
  DDL run by ``SYS`` or ``SYSTEM`` (``internal.log.mining.schema_changes.username.exclude.list``)
  is skipped;
- ``MISSING_SCN`` (34) and ``UNSUPPORTED`` (255) rows are counted and skipped, as Debezium does
  (it logs them);
- ``REPLICATION_MARKER`` (27, written by GoldenGate) discards its transaction, which would
  otherwise never end (as Debezium does);
- LOB, XML and extended-string operations (9, 10, 11, 29, 68, 70, 71, 91-93) are only mined with
  ``lob.enabled``. With ``lob_enabled``, ``SELECT_LOB_LOCATOR``, ``LOB_WRITE`` and ``LOB_ERASE``
  are buffered like row changes (joined over CSF pieces, undone by ``ROLLBACK = 1`` rows) and
  assembled at commit (`cdc_sources.oracle.lob_merge`); ``LOB_TRIM`` is skipped, as Debezium does.
  Without it, or for XML and extended-string operations (not supported), such a row is an error
  (`LogMinerRowError`), never silently dropped.

Rows of excluded users (``log.mining.username.exclude.list``, or not in the include list) and
of the schemas Oracle maintains itself (`EXCLUDED_SCHEMAS`: ``SYS``, ``SYSTEM``, ...) are
skipped. Rows at or below the snapshot SCN are skipped unless their transaction was in flight
when the snapshot was taken (``snapshot_pending_tx`` of the offset).

Pure: no I/O; the stream feeds it rows and takes `CommittedTransaction`s.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, replace
from datetime import datetime

__all__ = [
    "EXCLUDED_SCHEMAS",
    "BufferStats",
    "BufferedChange",
    "ChangeKind",
    "CommittedTransaction",
    "LogMinerRow",
    "LogMinerRowError",
    "Operation",
    "TransactionBuffer",
]


class LogMinerRowError(ValueError):
    """A ``V$LOGMNR_CONTENTS`` row the buffer cannot take (names the row's SCN and XID)."""


class Operation(enum.IntEnum):
    """``V$LOGMNR_CONTENTS.OPERATION_CODE``."""

    INSERT = 1
    DELETE = 2
    UPDATE = 3
    DDL = 5
    START = 6
    COMMIT = 7
    SELECT_LOB_LOCATOR = 9
    LOB_WRITE = 10
    LOB_TRIM = 11
    REPLICATION_MARKER = 27
    LOB_ERASE = 29
    MISSING_SCN = 34
    ROLLBACK = 36
    XML_BEGIN = 68
    XML_WRITE = 70
    XML_END = 71
    EXTENDED_STRING_BEGIN = 91
    EXTENDED_STRING_WRITE = 92
    EXTENDED_STRING_END = 93
    UNSUPPORTED = 255


EXCLUDED_SCHEMAS = frozenset({
    "APPQOSSYS", "AUDSYS", "CTXSYS", "DVSYS", "DBSFWUSER", "DBSNMP", "GGSHAREDCAP", "GSMADMIN_INTERNAL", "LBACSYS",
    "MDSYS", "OJVMSYS", "OLAPSYS", "ORDDATA", "ORDSYS", "OUTLN", "SYS", "SYSTEM", "VECSYS", "WMSYS", "XDB",
})
"""Schemas Oracle maintains itself; their rows are never captured (Debezium 3.6.3's LogMiner
query filters them by ``SEG_OWNER``; so are materialized view logs, tables ``MLOG$...``)."""

_DDL_USERS = frozenset({"SYS", "SYSTEM"})
_NO_SEQUENCE = "ffffffff"
_LOB_OPERATIONS = frozenset({
    Operation.SELECT_LOB_LOCATOR, Operation.LOB_WRITE, Operation.LOB_TRIM, Operation.LOB_ERASE, Operation.XML_BEGIN,
    Operation.XML_WRITE, Operation.XML_END, Operation.EXTENDED_STRING_BEGIN, Operation.EXTENDED_STRING_WRITE,
    Operation.EXTENDED_STRING_END})
_TRUNCATE = re.compile(r'\s*truncate\s+table\s+(?:"([^"]+)"|(\w+))\s*\.\s*(?:"([^"]+)"|(\w+))', re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class LogMinerRow:
    """One ``V$LOGMNR_CONTENTS`` row, with the columns the connector selects."""

    scn: int
    operation_code: int
    xid: str
    sql_redo: str | None = None
    timestamp: datetime | None = None
    csf: bool = False
    table_name: str | None = None
    seg_owner: str | None = None
    operation: str = ""
    username: str | None = None
    row_id: str | None = None
    rollback: bool = False
    rs_id: str | None = None
    status: int = 0
    info: str | None = None
    ssn: int = 0
    thread: int = 1


class ChangeKind(enum.Enum):
    INSERT = "insert"
    UPDATE = "update"
    DELETE = "delete"
    TRUNCATE = "truncate"
    DDL = "ddl"
    SELECT_LOB_LOCATOR = "select_lob_locator"
    LOB_WRITE = "lob_write"
    LOB_ERASE = "lob_erase"


_DML_KINDS = {Operation.INSERT: ChangeKind.INSERT, Operation.UPDATE: ChangeKind.UPDATE,
              Operation.DELETE: ChangeKind.DELETE}
_LOB_KINDS = {Operation.SELECT_LOB_LOCATOR: ChangeKind.SELECT_LOB_LOCATOR, Operation.LOB_WRITE: ChangeKind.LOB_WRITE,
              Operation.LOB_ERASE: ChangeKind.LOB_ERASE}


@dataclass(frozen=True, slots=True)
class BufferedChange:
    """One change of a transaction: its kind and its row, ``sql_redo`` joined over CSF pieces."""

    kind: ChangeKind
    row: LogMinerRow


@dataclass(frozen=True, slots=True)
class CommittedTransaction:
    """A transaction handed out at its commit (or one DDL statement, committed by itself)."""

    xid: str
    commit_scn: int
    commit_time: datetime | None
    thread: int
    changes: tuple[BufferedChange, ...]
    user_name: str | None = None
    """The user of the transaction's first row (its ``START``, else its first change)."""
    start_time: datetime | None = None
    """The time of the transaction's first row (its ``START``, else its first change)."""


@dataclass(slots=True)
class BufferStats:
    """What the buffer skipped, for the capture's log and metrics."""

    missing_scn: int = 0
    unsupported: int = 0
    excluded: int = 0
    below_snapshot: int = 0
    rolled_back_transactions: int = 0
    replication_markers: int = 0
    undone_changes: int = 0
    unmatched_undo: int = 0
    lob_trims: int = 0


@dataclass(slots=True)
class _Open:
    start_scn: int
    user_name: str | None = None
    start_time: datetime | None = None
    changes: list[BufferedChange] = field(default_factory=list)
    fragment: list[LogMinerRow] = field(default_factory=list)


class TransactionBuffer:
    """Buffers LogMiner rows by XID; `feed` returns the transactions committed by each row.

    Args:
        username_include: only rows of these users (upper-case names); empty: all users.
        username_exclude: rows of these users are skipped.
        snapshot_scn: rows at or below it are skipped, unless their XID is in ``snapshot_pending``.
        snapshot_pending: transactions in flight when the snapshot was taken.
        ddl_user_exclude: DDL by these users is skipped (Debezium: ``SYS``, ``SYSTEM``).
        lob_enabled: ``lob.enabled``: LOB operations are buffered with the row changes.
    """

    def __init__(self, *, username_include: Iterable[str] = (), username_exclude: Iterable[str] = (),
                 snapshot_scn: int | None = None, snapshot_pending: Iterable[str] = (),
                 ddl_user_exclude: Iterable[str] = _DDL_USERS, lob_enabled: bool = False) -> None:
        self._lob_enabled = lob_enabled
        self._include = frozenset(u.upper() for u in username_include)
        self._exclude = frozenset(u.upper() for u in username_exclude)
        self._snapshot_scn = snapshot_scn
        self._pending = frozenset(snapshot_pending)
        self._ddl_exclude = frozenset(u.upper() for u in ddl_user_exclude)
        self._open: dict[str, _Open] = {}
        self.stats = BufferStats()

    @property
    def open_transactions(self) -> dict[str, int]:
        """Each open transaction's XID and its first SCN (the oldest is where mining must restart)."""
        return {xid: t.start_scn for xid, t in self._open.items()}

    def feed_all(self, rows: Iterable[LogMinerRow]) -> Iterator[CommittedTransaction]:
        for row in rows:
            yield from self.feed(row)

    def feed(self, row: LogMinerRow) -> list[CommittedTransaction]:
        """Take one row; returns the transactions it commits (zero or one)."""
        try:
            op = Operation(row.operation_code)
        except ValueError:
            raise LogMinerRowError(f"unknown OPERATION_CODE {row.operation_code} at SCN {row.scn} "
                                   f"(XID {row.xid})") from None
        if op is Operation.COMMIT:
            return self._commit(row)
        if op is Operation.ROLLBACK:
            if self._open.pop(row.xid, None) is not None:
                self.stats.rolled_back_transactions += 1
            return []
        if op is Operation.REPLICATION_MARKER:  # GoldenGate's: its transaction never commits
            if self._open.pop(row.xid, None) is not None:
                self.stats.replication_markers += 1
            return []
        if op is Operation.START:
            self._open.setdefault(row.xid, _Open(row.scn, row.username, row.timestamp))
            return []
        if op is Operation.MISSING_SCN:
            self.stats.missing_scn += 1
            return []
        if op is Operation.UNSUPPORTED:
            self.stats.unsupported += 1
            return []
        if self._lob_enabled and op in _LOB_KINDS:
            return self._dml(row, _LOB_KINDS[op])
        if self._lob_enabled and op is Operation.LOB_TRIM:
            self.stats.lob_trims += 1
            return []
        if self._lob_enabled and op in _LOB_OPERATIONS:
            raise LogMinerRowError(f"{op.name} at SCN {row.scn} (XID {row.xid}): XML and extended-string operations "
                                   "are not supported by this connector")
        if op in _LOB_OPERATIONS:
            raise LogMinerRowError(f"LOB operation {op.name} at SCN {row.scn} (XID {row.xid}) mined without "
                                   "lob.enabled: the mining query selects LOB operations only with lob.enabled")
        if op is Operation.DDL:
            return self._ddl(row)
        return self._dml(row, _DML_KINDS[op])

    def _skipped(self, row: LogMinerRow) -> bool:
        user = (row.username or "").upper()
        if (row.seg_owner or "").upper() in EXCLUDED_SCHEMAS or (row.table_name or "").startswith("MLOG$") \
                or user in self._exclude \
                or (self._include and user not in self._include):
            self.stats.excluded += 1
            return True
        if self._snapshot_scn is not None and row.scn <= self._snapshot_scn and row.xid not in self._pending:
            self.stats.below_snapshot += 1
            return True
        return False

    def _dml(self, row: LogMinerRow, kind: ChangeKind) -> list[CommittedTransaction]:
        tx = self._open.get(row.xid)
        if row.rollback and not row.csf and (tx is None or not tx.fragment):
            self._undo(row)  # an undo row opens no transaction
            return []
        if tx is None:
            tx = self._open[row.xid] = _Open(row.scn, row.username, row.timestamp)
        if row.csf:  # the statement continues in the next row of this transaction
            tx.fragment.append(row)
            return []
        if tx.fragment:
            pieces = [*tx.fragment, row]
            tx.fragment.clear()
            row = replace(pieces[0], sql_redo="".join(p.sql_redo or "" for p in pieces), csf=False,
                          rollback=row.rollback)
        if self._skipped(row):
            return []
        if row.rollback:
            self._undo(row)
            return []
        tx.changes.append(BufferedChange(kind, row))
        return []

    def _undo(self, row: LogMinerRow) -> None:
        """Remove the latest change of ``row.row_id`` in its transaction. An XID whose sequence
        LogMiner could not resolve (``...ffffffff``) matches the open transactions sharing its
        first 8 hex digits (undo and change read in different mining sessions)."""
        tx = self._open.get(row.xid)
        if tx is not None:
            candidates = [tx]
        elif row.xid.lower().endswith(_NO_SEQUENCE):
            candidates = [t for x, t in self._open.items() if x.startswith(row.xid[:8])]
        else:
            candidates = []
        for candidate in candidates:
            for i in range(len(candidate.changes) - 1, -1, -1):
                if candidate.changes[i].row.row_id == row.row_id:
                    del candidate.changes[i]
                    self.stats.undone_changes += 1
                    return
        self.stats.unmatched_undo += 1

    def _commit(self, row: LogMinerRow) -> list[CommittedTransaction]:
        tx = self._open.pop(row.xid, None)
        if tx is None:
            return []
        if tx.fragment:
            raise LogMinerRowError(f"transaction {row.xid} commits at SCN {row.scn} inside a continued (CSF) "
                                   f"statement that started at SCN {tx.fragment[0].scn}")
        if not tx.changes:
            return []
        return [CommittedTransaction(row.xid, row.scn, row.timestamp, row.thread, tuple(tx.changes), tx.user_name,
                                     tx.start_time)]

    def _ddl(self, row: LogMinerRow) -> list[CommittedTransaction]:
        if (row.username or "").upper() in self._ddl_exclude or self._skipped(row):
            return []
        kind = ChangeKind.TRUNCATE if _TRUNCATE.match(row.sql_redo or "") else ChangeKind.DDL
        return [CommittedTransaction(row.xid, row.scn, row.timestamp, row.thread, (BufferedChange(kind, row),),
                                     row.username)]
