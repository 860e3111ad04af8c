"""The capture-agent emulator: SQL Server's capture job, fed from PostgreSQL logical decoding.

SQL Server's capture job reads the transaction log and writes each committed change of a
captured table into its capture instance's change table (``cdc.<instance>_CT``), and one row
per transaction into ``cdc.lsn_time_mapping``. Here the log is PostgreSQL's WAL, read through
the logical replication slot that ``sys.sp_cdc_enable_db`` created (``test_decoding`` output):

- ``__$start_lsn`` is the end of the transaction's commit record, ``__$seqval`` the WAL position
  of the change (both as 8 bytes of WAL position, counted from the database's own origin, and 2
  of slot number: each database its own LSN sequence): commit order first,
  then change order inside the transaction, as SQL Server orders them;
- an insert is one row with operation 2, a delete one with operation 1, an update two rows at
  one ``__$seqval``: 3 (before image) and 4 (after image); ``__$update_mask`` has a bit per
  captured column (set for every column of an insert or delete, for the changed ones of an
  update); ``__$command_id`` counts the transaction's changes;
- a capture instance holds the transactions committed after its ``start_lsn``, and only its
  captured columns (a column added to the source later is not in it; one dropped is NULL);
- a scan applies whole transactions in one PostgreSQL transaction and is idempotent: a
  transaction at or below ``sys.fn_cdc_get_max_lsn()`` was applied before and is skipped, then
  the slot is advanced past what was applied.

TRUNCATE of a captured table fails the scan: SQL Server refuses it on such tables (error 4711).
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field

import psycopg
from psycopg import sql

__all__ = ["AgentError", "CaptureAgent", "DecodedChange", "parse_change"]

_IDENT = r'(?:"(?:[^"]|"")*"|[^".:\s]+)'
_HEADER = re.compile(rf"table ({_IDENT})\.({_IDENT}): (INSERT|UPDATE|DELETE|TRUNCATE): ?")
_COLUMN = re.compile(rf"({_IDENT})\[([^\]]*(?:\[\])?)\]:(null|unchanged-toast-datum|'(?:[^']|'')*'|\S+)")
_COMMIT = re.compile(r"COMMIT (\d+) \(at (.+)\)")


class AgentError(RuntimeError):
    """The capture agent met a change SQL Server would not have let happen (the message says which)."""


def _ident(text: str) -> str:
    return text[1:-1].replace('""', '"') if text.startswith('"') else text


@dataclass(frozen=True)
class DecodedChange:
    """One change of a ``test_decoding`` line: its table, kind and images (column -> text value,
    None for NULL; the text is the type's output form, which PostgreSQL casts back)."""

    schema: str
    table: str
    kind: str
    old: dict[str, str | None] | None
    new: dict[str, str | None] | None


_UNCHANGED = object()


def _values(text: str) -> dict[str, str | None]:
    out: dict[str, str | None] = {}
    position = 0
    text = text.strip()
    while position < len(text):
        match = _COLUMN.match(text, position)
        if match is None:
            raise AgentError(f"cannot read the decoded columns at {text[position:position + 60]!r}")
        name, value = _ident(match.group(1)), match.group(3)
        if value == "unchanged-toast-datum":
            pass  # taken from the old image (REPLICA IDENTITY FULL logs it)
        elif value == "null":
            out[name] = None
        elif value.startswith("'"):
            out[name] = value[1:-1].replace("''", "'")
        else:
            out[name] = value
        position = match.end()
        while position < len(text) and text[position] == " ":
            position += 1
    return out


def parse_change(line: str) -> DecodedChange:
    """A ``test_decoding`` change line (``table s.t: INSERT: a[integer]:1 ...``).

    Raises:
        AgentError: a line of another form.
    """
    header = _HEADER.match(line)
    if header is None:
        raise AgentError(f"not a decoded change: {line[:120]!r}")
    schema, table, kind = _ident(header.group(1)), _ident(header.group(2)), header.group(3)
    rest = line[header.end():]
    if kind == "TRUNCATE":
        return DecodedChange(schema, table, kind, None, None)
    if kind == "INSERT":
        return DecodedChange(schema, table, kind, None, _values(rest))
    if kind == "DELETE":
        return DecodedChange(schema, table, kind, _values(rest), None)
    if rest.startswith("old-key: "):
        old_text, _, new_text = rest[len("old-key: "):].partition(" new-tuple: ")
        old = _values(old_text)
        new = _values(new_text)
        return DecodedChange(schema, table, kind, old, {**{k: v for k, v in old.items() if k not in new}, **new})
    raise AgentError(f"an update of {schema}.{table} without its before image (the table needs "
                     "REPLICA IDENTITY FULL, which sys.sp_cdc_enable_table sets)")


LSN_BASE = 0x20 << 32
"""What a database's first LSN counts from (``00000020:00000000``), as ``sys.lsn_of``."""


def _wal(text: str) -> int:
    high, low = text.split("/")
    return (int(high, 16) << 32) | int(low, 16)


def _lsn_bytes(wal: str, origin: int, slot: int = 0) -> bytes:
    """The emulated LSN of a WAL position: counted from the database's ``sys.lsn_origin``."""
    return (_wal(wal) - origin + LSN_BASE).to_bytes(8, "big") + slot.to_bytes(2, "big")


@dataclass
class _Instance:
    name: str
    schema: str
    table: str
    start_lsn: bytes
    columns: list[str]
    types: dict[str, str] = field(default_factory=dict)


def _mask(columns: Sequence[str], changed: set[str]) -> bytes:
    bits = 0
    for ordinal, column in enumerate(columns, start=1):
        if column in changed:
            bits |= 1 << (ordinal - 1)
    return bits.to_bytes(max(1, (len(columns) + 7) // 8), "big")


class CaptureAgent:
    """SQL Server's capture job for one emulated database (see the module doc).

    Args:
        dsn: libpq DSN of the database (``sys.sp_cdc_enable_db`` already run there).
    """

    def __init__(self, dsn: str) -> None:
        self.dsn = dsn
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.error: BaseException | None = None
        self._origin = 0
        self._scanning = threading.Lock()  # `sync` inside `running` scans beside the thread: one slot reader

    def scan(self) -> int:
        """Applies every transaction decoded so far; returns how many reached a change table."""
        with self._scanning:
            return self._scan()

    def _scan(self) -> int:
        with psycopg.connect(self.dsn) as conn:
            slot = conn.execute("SELECT sys.slot_name()").fetchone()[0]  # type: ignore[index]
            rows = conn.execute(
                "SELECT lsn::text, xid::text, data FROM pg_logical_slot_peek_changes(%s, NULL, NULL, "
                "'include-xids', '1', 'include-timestamp', '1', 'skip-empty-xacts', '1')", (slot,)).fetchall()
            if not rows:
                return 0
            instances = self._instances(conn)
            origin = conn.execute("SELECT origin::text FROM sys.lsn_origin").fetchone()[0]  # type: ignore[index]
            self._origin = _wal(origin)
            applied_max = conn.execute("SELECT sys.fn_cdc_get_max_lsn()").fetchone()[0]  # type: ignore[index]
            applied = 0
            last_commit: str | None = None
            pending: list[tuple[str, DecodedChange]] = []
            begin_lsn = None
            for wal, xid, data in rows:
                if data.startswith("BEGIN"):
                    pending, begin_lsn = [], wal
                elif data.startswith("COMMIT"):
                    match = _COMMIT.match(data)
                    if match is None:
                        raise AgentError(f"cannot read the commit line {data!r}")
                    commit = _lsn_bytes(wal, self._origin)
                    if (applied_max is None or commit > bytes(applied_max)) and self._apply(
                            conn, instances, commit, int(xid), match.group(2), begin_lsn or wal, pending):
                        applied += 1
                    last_commit = wal
                else:
                    change = parse_change(data)
                    pending.append((wal, change))
            conn.commit()
            if last_commit is not None:
                conn.execute("SELECT pg_replication_slot_advance(%s, %s::pg_lsn)", (slot, last_commit))
                conn.commit()
            return applied

    def sync(self, timeout: float = 30.0) -> int:
        """Scans until every transaction committed before the call is applied (logical decoding
        reads flushed WAL only, and the test servers commit without waiting for the flush);
        returns how many transactions reached a change table.

        Raises:
            AgentError: the WAL was not flushed within ``timeout`` seconds.
        """
        with psycopg.connect(self.dsn, autocommit=True) as conn:
            target = conn.execute("SELECT pg_current_wal_insert_lsn()").fetchone()[0]  # type: ignore[index]
            deadline = time.monotonic() + timeout
            while not conn.execute("SELECT pg_current_wal_flush_lsn() >= %s::pg_lsn",
                                   (target,)).fetchone()[0]:  # type: ignore[index]
                if time.monotonic() > deadline:
                    raise AgentError(f"the WAL was not flushed to {target} within {timeout}s")
                time.sleep(0.01)
        return self.scan()

    @staticmethod
    def _instances(conn: psycopg.Connection[tuple[object, ...]]) -> list[_Instance]:
        out: list[_Instance] = []
        for name, schema, table, start in conn.execute(
                "SELECT capture_instance, source_schema, source_table, start_lsn "
                "FROM sys.sp_cdc_help_change_data_capture()").fetchall():
            columns = conn.execute(
                "SELECT cc.column_name, format_type(a.atttypid, a.atttypmod) FROM cdc.captured_columns AS cc "
                "JOIN cdc.change_tables AS ct ON ct.object_id = cc.object_id "
                "JOIN pg_attribute AS a ON a.attrelid = ct.object_id::bigint::oid AND a.attname = cc.column_name "
                "WHERE ct.capture_instance = %s ORDER BY cc.column_ordinal", (name,)).fetchall()
            out.append(_Instance(str(name), str(schema), str(table), bytes(start), [str(c) for c, _ in columns],
                                 {str(c): str(t) for c, t in columns}))
        return out

    def _apply(self, conn: psycopg.Connection[tuple[object, ...]], instances: list[_Instance], commit: bytes, xid: int,
               at: str, begin_wal: str, changes: list[tuple[str, DecodedChange]]) -> bool:
        wrote = False
        for command_id, (wal, change) in enumerate(changes, start=1):
            for instance in instances:
                if (instance.schema, instance.table) != (change.schema, change.table) or commit <= instance.start_lsn:
                    continue
                if change.kind == "TRUNCATE":
                    raise AgentError(f"Cannot truncate table '{change.schema}.{change.table}' because it is "
                                     "published for replication or enabled for Change Data Capture.")
                seqval = _lsn_bytes(wal, self._origin)
                rows: list[tuple[int, dict[str, str | None], set[str]]] = []
                if change.kind == "INSERT":
                    assert change.new is not None
                    rows.append((2, change.new, set(instance.columns)))
                elif change.kind == "DELETE":
                    assert change.old is not None
                    rows.append((1, change.old, set(instance.columns)))
                else:
                    assert change.old is not None and change.new is not None
                    changed = {c for c in instance.columns if change.old.get(c) != change.new.get(c)}
                    rows.append((3, change.old, changed))
                    rows.append((4, change.new, changed))
                for operation, image, changed in rows:
                    names = ["__$start_lsn", "__$seqval", "__$operation", "__$update_mask", "__$command_id",
                             *instance.columns]
                    values: list[object] = [commit, seqval, operation, _mask(instance.columns, changed), command_id,
                                            *(image.get(c) for c in instance.columns)]
                    casts = ["", "", "", "", "", *(f"::{instance.types[c]}" for c in instance.columns)]
                    conn.execute(sql.SQL("INSERT INTO cdc.{} ({}) VALUES ({})").format(
                        sql.Identifier(instance.name + "_CT"), sql.SQL(", ").join(map(sql.Identifier, names)),
                        sql.SQL(", ").join(sql.SQL("%s::text" + cast if cast else "%s") for cast in casts)),
                        values)
                wrote = True
        if wrote:
            conn.execute("INSERT INTO cdc.lsn_time_mapping (start_lsn, tran_begin_time, tran_end_time, tran_id, "
                         "tran_begin_lsn) VALUES (%s, (%s::timestamptz AT TIME ZONE 'UTC'), "
                         "(%s::timestamptz AT TIME ZONE 'UTC'), %s, %s)",
                         (commit, at, at, xid.to_bytes(10, "big"), _lsn_bytes(begin_wal, self._origin)))
        return wrote

    @contextmanager
    def running(self, interval: float = 0.05) -> Iterator[CaptureAgent]:
        """Scans every ``interval`` seconds in a thread (SQL Server's capture job polls too);
        a scan's error stops the thread and is raised when the block ends."""
        def loop() -> None:
            try:
                while not self._stop.wait(interval):
                    self.scan()
            except BaseException as error:  # kept for the caller
                self.error = error

        self._stop.clear()
        self._thread = threading.Thread(target=loop, name="sqlserver-capture-agent", daemon=True)
        self._thread.start()
        try:
            yield self
        finally:
            self._stop.set()
            self._thread.join()
            if self.error is not None:
                raise self.error
