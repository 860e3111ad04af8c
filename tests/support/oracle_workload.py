"""Real concurrent PostgreSQL transactions turned into interleaved ``V$LOGMNR_CONTENTS`` rows.

`OracleWorkload` creates Oracle-shaped tables on a PostgreSQL database (``"INVENTORY"."CUSTOMERS"``
and ``"INVENTORY"."ORDERS"``, upper-case names, ``REPLICA IDENTITY FULL`` so every change logs
its whole before image, as Oracle's supplemental logging of all columns does) and a
``test_decoding`` slot before any data, then runs concurrent writer threads (long transactions
spanning others, updates, deletes, key changes, NULLs, quotes, long texts). `decode` reads the
slot, after flushing the WAL (`flush_wal`: logical decoding reads only flushed WAL, and the test
servers commit without waiting for the flush), so it has every transaction committed before it;
`logminer_rows` writes what LogMiner would show of them:

- every change, ``START`` and ``COMMIT`` row at the SCN of its own WAL position (the change's LSN,
  a transaction's first LSN, its commit's end LSN), sorted by SCN: the transactions interleave as
  they ran, and commit out of start order;
- ``SQL_REDO`` in LogMiner's forms (values quoted, ``''`` doubled, ``TO_TIMESTAMP('..')`` with nine
  fraction digits, ``IS NULL``, updates setting the changed columns with the whole before image in
  their ``where``), split into ``CSF`` pieces above ``csf_limit`` characters;
- ``XID`` (undo segment, slot and sequence as LogMiner's 16 hex digits), ``ROW_ID`` (stable per
  row, kept across a key change), ``RS_ID``, ``TIMESTAMP`` (commit time, whole seconds, UTC);
- ``ALTER TABLE`` run with `OracleWorkload.alter` (concurrently with the writers if wanted) as a
  ``DDL`` row at the WAL position the statement reached while it held its lock (every change of
  the table before it is below, every change after it above), with the Oracle statement given;
  `dictionary_changes` gives the fake the table's new dictionary entry from that SCN;
- injected what PostgreSQL cannot show: transactions that roll back (``ROLLBACK``, operation 36),
  statements undone inside committed transactions (a change then its ``ROLLBACK = 1`` row), and
  rows of Oracle's own schemas, which the mining query must leave out.

The injected changes never reach the tables, so the source tables stay the oracle: whatever is
mined from the rows must rebuild exactly their content. `rows_as_of` answers a table's rows as of
an SCN from the decoded changes (typed values, no SQL_REDO involved).
"""

from __future__ import annotations

import random
import re
import struct
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import psycopg

from tests.support.oracle_fake import LOGMNR_COLUMNS, FakeColumn, FakeTable

OWNER = "INVENTORY"
TABLES = {
    "CUSTOMERS": FakeTable(OWNER, "CUSTOMERS", (
        FakeColumn("ID", "NUMBER", 22, 10, 0, nullable=False),
        FakeColumn("NAME", "VARCHAR2", 200, nullable=False),
        FakeColumn("BALANCE", "NUMBER", 22, 10, 2),
        FakeColumn("UPDATED", "TIMESTAMP(6)", 11, None, 6),
        FakeColumn("NOTE", "VARCHAR2", 4000),
    ), ("ID",)),
    "ORDERS": FakeTable(OWNER, "ORDERS", (
        FakeColumn("ID", "NUMBER", 22, 10, 0, nullable=False),
        FakeColumn("CUSTOMER_ID", "NUMBER", 22, 10, 0),
        FakeColumn("QTY", "NUMBER", 22, 5, 0),
        FakeColumn("STATUS", "VARCHAR2", 20),
    ), ("ID",)),
}
_DDL = {
    "CUSTOMERS": '"ID" integer PRIMARY KEY, "NAME" varchar(200) NOT NULL, "BALANCE" numeric(10,2), '
                 '"UPDATED" timestamp(6), "NOTE" varchar(4000)',
    "ORDERS": '"ID" integer PRIMARY KEY, "CUSTOMER_ID" integer, "QTY" integer, "STATUS" varchar(20)',
}
_OBJ = {"CUSTOMERS": 74858, "ORDERS": 74859}
_CHANGE = re.compile(r'^table "INVENTORY"\."(\w+)": (INSERT|UPDATE|DELETE): (.*)$', re.S)
_FIELD = re.compile(r'"((?:[^"]|"")+)"\[([^\]]+)\]:(\'(?:[^\']|\'\')*\'|\S+)')
_COMMIT_TIME = re.compile(r"\(at (.+)\)$")
_FLUSH_MARKER = "oracle_workload.flush"


def lsn_int(text: str) -> int:
    hi, lo = text.split("/")
    return (int(hi, 16) << 32) + int(lo, 16)


@dataclass(frozen=True, slots=True)
class Change:
    """One decoded change with typed values (column -> value), at its LSN."""

    table: str
    op: str
    before: dict[str, Any] | None
    after: dict[str, Any] | None
    lsn: int


@dataclass
class Transaction:
    xid: int
    first_lsn: int
    commit_lsn: int = 0
    commit_time: datetime | None = None
    changes: list[Change] = field(default_factory=list)


def _value(type_name: str, text: str) -> Any:
    if text == "null":
        return None
    if text.startswith("'"):
        text = text[1:-1].replace("''", "'")
    if type_name == "integer":
        return int(text)
    if type_name == "numeric":
        return Decimal(text)
    if type_name.startswith("timestamp"):
        return datetime.fromisoformat(text)
    return text


def _tuple(text: str) -> dict[str, Any]:
    return {m.group(1).replace('""', '"'): _value(m.group(2), m.group(3)) for m in _FIELD.finditer(text)}


class OracleWorkload:
    """The tables, the slot, the writers and the translation (see the module doc)."""

    def __init__(self, dsn: str, *, seed: int = 7, csf_limit: int = 4000, create: bool = True) -> None:
        self.dsn = dsn
        self.seed = seed
        self.csf_limit = csf_limit
        self.slot = "oracle_redo"
        self.transactions: list[Transaction] = []
        self.ddl: list[tuple[int, str, str, FakeTable]] = []
        """(SCN, table, Oracle statement, the table after it) of each `alter`."""
        if not create:  # another process made the tables and the slot
            return
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute(f'CREATE SCHEMA "{OWNER}"')
            for name, ddl in _DDL.items():
                conn.execute(f'CREATE TABLE "{OWNER}"."{name}" ({ddl})')
                conn.execute(f'ALTER TABLE "{OWNER}"."{name}" REPLICA IDENTITY FULL')
            conn.execute("SELECT pg_create_logical_replication_slot(%s, 'test_decoding')", (self.slot,))

    # -- the writers -------------------------------------------------------------------------

    def run(self, *, writers: int = 3, transactions: int = 8, base_id: int = 0) -> None:
        """Concurrent writers, each ``transactions`` transactions of a few statements with short
        pauses (so they interleave), plus one long transaction spanning theirs."""
        errors: list[BaseException] = []

        def guarded(fn: Any, *args: Any) -> None:
            try:
                fn(*args)
            except BaseException as exc:  # reported below
                errors.append(exc)

        threads = [threading.Thread(target=guarded, args=(self._writer, w, transactions, base_id))
                   for w in range(writers)]
        threads.append(threading.Thread(target=guarded, args=(self._long, base_id)))
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
        assert not errors, errors

    def _connect(self) -> psycopg.Connection[Any]:
        """A writer's connection. Its commits wait for the WAL flush (the test servers run with
        ``synchronous_commit=off``): logical decoding reads only flushed WAL, and a commit it could
        not see yet would be missing from the rows built now and appear in a later decode, below
        SCNs already mined."""
        return psycopg.connect(self.dsn, options="-c synchronous_commit=on")

    def _writer(self, w: int, count: int, base_id: int) -> None:
        rnd = random.Random(self.seed * 100 + w + base_id)
        with self._connect() as conn:
            for i in range(count):
                cid = base_id + w * 1000 + i
                with conn.transaction():
                    conn.execute('INSERT INTO "INVENTORY"."CUSTOMERS" VALUES (%s, %s, %s, %s, %s)',
                                 (cid, f"O'Brien {w}-{i}", Decimal(rnd.randint(0, 99999)) / 100,
                                  datetime(2024, 1, 2, 3, 4, 5, rnd.randint(0, 999999)),
                                  None if i % 3 else "x" * (self.csf_limit + 50 + i)))
                    time.sleep(0.01)
                    conn.execute('INSERT INTO "INVENTORY"."ORDERS" VALUES (%s, %s, %s, %s)',
                                 (cid, cid, rnd.randint(1, 9), "NEW"))
                    if i % 2:
                        conn.execute('UPDATE "INVENTORY"."CUSTOMERS" SET "BALANCE" = NULL, "NAME" = %s '
                                     'WHERE "ID" = %s', (f"it's {i}", cid))
                    time.sleep(0.01)
                if i % 4 == 3:
                    with conn.transaction():
                        conn.execute('DELETE FROM "INVENTORY"."ORDERS" WHERE "ID" = %s', (cid,))
                        conn.execute('UPDATE "INVENTORY"."CUSTOMERS" SET "ID" = %s WHERE "ID" = %s',
                                     (cid + 500, cid))

    def _long(self, base_id: int) -> None:
        with self._connect() as conn, conn.transaction():
            for i in range(6):
                conn.execute('INSERT INTO "INVENTORY"."ORDERS" VALUES (%s, NULL, %s, %s)',
                             (base_id + 900 + i, i, "LONG"))
                time.sleep(0.05)
            conn.execute('UPDATE "INVENTORY"."ORDERS" SET "STATUS" = %s WHERE "ID" = %s', ("DONE", base_id + 900))

    def alter(self, table: str, postgres_sql: str, oracle_sql: str, after: FakeTable) -> None:
        """Run ``ALTER TABLE "INVENTORY"."<table>" <postgres_sql>`` and record it as ``oracle_sql``
        at the WAL position reached while its lock is held."""
        with self._connect() as conn, conn.transaction():
            conn.execute(f'ALTER TABLE "{OWNER}"."{table}" {postgres_sql}')
            row = conn.execute("SELECT pg_current_wal_insert_lsn()::text").fetchone()
            assert row is not None
            self.ddl.append((lsn_int(row[0]), table, oracle_sql, after))

    def table_at(self, table: str, scn: int) -> FakeTable:
        """The table's structure as of ``scn`` (after every `alter` at or below it)."""
        found = TABLES[table]
        for at, name, _, after in sorted(self.ddl, key=lambda d: d[0]):
            if name == table and at <= scn:
                found = after
        return found

    def dictionary_changes(self) -> list[tuple[int, tuple[str, str], FakeTable | None]]:
        """The dictionary changes of the `alter` s, for `FakeOracleDatabase.dictionary_changes`."""
        return [(at, (OWNER, name), after) for at, name, _, after in self.ddl]

    # -- the slot ----------------------------------------------------------------------------

    def decode(self, *, peek_upto: int | None = None) -> list[Transaction]:
        """Consume the slot: the committed transactions since the last call, in commit order.
        With ``peek_upto``, the slot is only read (not consumed): every transaction it holds that
        commits before that LSN, not added to `transactions`.

        Every transaction committed before the call is included, also one committed without
        waiting for the WAL flush (``synchronous_commit=off``, the test servers' default, e.g. a
        test's own statement on its own connection): logical decoding reads only flushed WAL,
        so `flush_wal` runs first."""
        self.flush_wal()
        out: list[Transaction] = []
        current: Transaction | None = None
        with psycopg.connect(self.dsn, autocommit=True) as conn:
            read = "get" if peek_upto is None else "peek"
            upto = None if peek_upto is None else f"{peek_upto >> 32:X}/{peek_upto & 0xFFFFFFFF:X}"
            cur = conn.execute(f"SELECT lsn::text, xid::text, data FROM pg_logical_slot_{read}_changes(%s, %s, NULL, "
                               "'include-xids', '1', 'include-timestamp', '1', 'skip-empty-xacts', '1')",
                               (self.slot, upto))
            for lsn_text, xid, data in cur:
                lsn = lsn_int(lsn_text)
                if data.startswith("message:"):  # the marker of `flush_wal`
                    continue
                if data.startswith("BEGIN"):
                    current = Transaction(int(xid), lsn)
                elif data.startswith("COMMIT"):
                    assert current is not None
                    current.commit_lsn = lsn
                    m = _COMMIT_TIME.search(data)
                    assert m is not None, data
                    current.commit_time = datetime.fromisoformat(m.group(1)).astimezone(UTC)
                    if current.changes:
                        out.append(current)
                    current = None
                else:
                    m = _CHANGE.match(data)
                    assert m is not None and current is not None, data
                    table, op, rest = m.groups()
                    if op == "INSERT":
                        current.changes.append(Change(table, "c", None, _tuple(rest), lsn))
                    elif op == "DELETE":
                        current.changes.append(Change(table, "d", _tuple(rest), None, lsn))
                    else:
                        old, _, new = rest.partition(" new-tuple: ")
                        assert old.startswith("old-key: "), data
                        current.changes.append(Change(table, "u", _tuple(old[len("old-key: "):]), _tuple(new), lsn))
        if peek_upto is None:
            self.transactions.extend(out)
        return out

    def flush_wal(self) -> None:
        """Flush the WAL written so far, so that logical decoding sees every commit made before:
        a transaction that writes a marker (a transactional logical message, which `decode`
        skips) and commits with ``synchronous_commit=on``, whose commit flushes the WAL up to it,
        earlier asynchronous commits included."""
        with self._connect() as conn, conn.transaction():
            conn.execute("SELECT pg_logical_emit_message(true, %s, '')", (_FLUSH_MARKER,))

    def source_rows(self, table: str) -> list[tuple[Any, ...]]:
        """The table's rows now, straight from PostgreSQL, ordered by key (in its current columns)."""
        cols = ", ".join(f'"{c.name}"' for c in self.table_at(table, 1 << 62).columns)
        with psycopg.connect(self.dsn) as conn:
            return [tuple(r) for r in conn.execute(f'SELECT {cols} FROM "{OWNER}"."{table}" ORDER BY 1')]

    def rows_as_of(self, owner: str, table: str, scn: int) -> list[tuple[Any, ...]]:
        """The table's rows as of ``scn``: the decoded transactions committed at or below it."""
        assert owner == OWNER
        names = [c.name for c in self.table_at(table, scn).columns]
        state: dict[Any, tuple[Any, ...]] = {}
        for tx in self.transactions:
            if tx.commit_lsn > scn:
                continue
            for c in tx.changes:
                if c.table != table:
                    continue
                if c.before is not None:
                    del state[c.before["ID"]]
                if c.after is not None:
                    state[c.after["ID"]] = tuple(c.after.get(n) for n in names)
        return [state[k] for k in sorted(state)]

    # -- LogMiner rows -----------------------------------------------------------------------

    def logminer_rows(self, transactions: list[Transaction] | None = None) -> list[dict[str, Any]]:
        """The ``V$LOGMNR_CONTENTS`` rows of ``transactions`` (default: all decoded), in SCN order,
        with the injected rollbacks, undone statements and Oracle-schema rows."""
        rnd = random.Random(self.seed)
        txs = self.transactions if transactions is None else transactions
        rowids: dict[tuple[str, Any], str] = {}
        counter = iter(range(1, 1 << 30))
        rows: list[tuple[int, int, dict[str, Any]]] = []  # (scn, tie, row)

        def add(scn: int, row: dict[str, Any]) -> None:
            rows.append((scn, next(counter), row))

        for tx in sorted(txs, key=lambda t: t.commit_lsn):
            xid = _xid(tx.xid)
            ts = (tx.commit_time or datetime.now(UTC)).astimezone(UTC).replace(tzinfo=None, microsecond=0)
            add(tx.first_lsn, _row(tx.first_lsn, 6, "START", xid, ts))
            for n, c in enumerate(tx.changes):
                rowid = self._rowid(rowids, c)
                redo = _redo(c)
                for piece, csf in _pieces(redo, self.csf_limit):
                    add(c.lsn, _row(c.lsn, {"c": 1, "u": 3, "d": 2}[c.op], {"c": "INSERT", "u": "UPDATE",
                                    "d": "DELETE"}[c.op], xid, ts, redo=piece, csf=csf, table=c.table,
                                    rowid=rowid))
                if n % 5 == 1 and c.after is not None:  # a statement undone by the database
                    bogus = Change(c.table, "u", c.after, {**c.after, _text_column(c.table): "UNDONE"}, c.lsn)
                    add(c.lsn, _row(c.lsn, 3, "UPDATE", xid, ts, redo=_redo(bogus), table=c.table, rowid=rowid))
                    add(c.lsn, _row(c.lsn, 3, "UPDATE", xid, ts, redo=_redo(Change(c.table, "u", bogus.after,
                                    c.after, c.lsn)), table=c.table, rowid=rowid, rollback=True))
            add(tx.commit_lsn, _row(tx.commit_lsn, 7, "COMMIT", xid, ts))
            if rnd.random() < 0.4:  # a transaction that rolls back, interleaved with this one
                self._rolled_back(add, rnd, tx, ts)
            if rnd.random() < 0.3:  # Oracle's own schemas: the mining query leaves them out
                sys_xid = _xid((tx.xid + 1) << 20)
                add(tx.first_lsn, _row(tx.first_lsn, 1, "INSERT", sys_xid, ts,
                                       redo='insert into "SYS"."AUD$"("ID") values (\'1\');', table="AUD$",
                                       owner="SYS", rowid="AAAAAAAAAAAAAAAAAA"))
                add(tx.first_lsn, _row(tx.first_lsn, 7, "COMMIT", sys_xid, ts))
        for n, (at, table, statement, _) in enumerate(self.ddl):  # each DDL commits by itself
            add(at, {**_row(at, 5, "DDL", _xid((1 << 30) + n),
                                 datetime.now(UTC).replace(tzinfo=None, microsecond=0), redo=statement, table=table),
                     "INFO": "USER DDL"})
        rows.sort(key=lambda r: (r[0], r[1]))
        return [r[2] for r in rows]

    @staticmethod
    def _rowid(rowids: dict[tuple[str, Any], str], c: Change) -> str:
        if c.before is not None:
            found = rowids.pop((c.table, c.before["ID"]))
        else:
            found = f"AAAS{_OBJ.get(c.table, 0) % 100:02d}AAEAA{len(rowids) + 1:07d}"
        if c.after is not None:
            rowids[(c.table, c.after["ID"])] = found
        return found

    def _rolled_back(self, add: Any, rnd: random.Random, tx: Transaction, ts: datetime) -> None:
        xid = _xid(tx.xid + (1 << 24))
        span = sorted({tx.first_lsn, *(c.lsn for c in tx.changes), tx.commit_lsn})
        add(span[0], _row(span[0], 6, "START", xid, ts))
        for k in range(rnd.randint(1, 3)):
            ghost = Change("ORDERS", "c", None, {"ID": -tx.xid * 10 - k, "CUSTOMER_ID": None, "QTY": 1,
                                                 "STATUS": "GHOST"}, span[min(k, len(span) - 1)])
            add(ghost.lsn, _row(ghost.lsn, 1, "INSERT", xid, ts, redo=_redo(ghost), table="ORDERS",
                                rowid=f"AAAGHOAAEAA{tx.xid % 10**7:07d}"))
        add(span[-1] + 1, _row(span[-1] + 1, 36, "ROLLBACK", xid, ts))


def _text_column(table: str) -> str:
    return "NAME" if table == "CUSTOMERS" else "STATUS"


def _xid(pg_xid: int) -> str:
    """LogMiner's XID: undo segment, slot (2 bytes each) and sequence (4 bytes), little-endian."""
    return struct.pack("<HHI", 2 + pg_xid % 8, pg_xid % 32, pg_xid & 0xFFFFFFFF).hex()


def _row(scn: int, code: int, operation: str, xid: str, ts: datetime, *, redo: str | None = None,
         csf: bool = False, table: str | None = None, owner: str = OWNER, rowid: str | None = None,
         rollback: bool = False) -> dict[str, Any]:
    row: dict[str, Any] = dict.fromkeys(LOGMNR_COLUMNS)
    row.update({
        "SCN": scn, "SQL_REDO": redo, "OPERATION_CODE": code, "TIMESTAMP": ts, "XID": xid, "CSF": int(csf),
        "TABLE_NAME": table, "SEG_OWNER": owner if table else None, "OPERATION": operation,
        "ROW_ID": rowid or "AAAAAAAAAAAAAAAAAA", "ROLLBACK": int(rollback), "STATUS": 0, "SSN": 0, "THREAD#": 1,
        "DATA_OBJ#": _OBJ.get(table or "", 0), "DATA_OBJV#": 1, "DATA_OBJD#": _OBJ.get(table or "", 0),
        "SEQUENCE#": 1, "RS_ID": f" 0x{(scn >> 32) & 0xFFFFFF:06x}.{(scn >> 8) & 0xFFFFFFFF:08x}.{scn & 0xFF:04x} ",
        "USERNAME": "APP",
    })
    return row


def _literal(v: Any) -> str:
    if isinstance(v, datetime):
        return f"TO_TIMESTAMP('{v:%Y-%m-%d %H:%M:%S}.{v.microsecond * 1000:09d}')"
    if isinstance(v, Decimal):
        text = format(v.normalize(), "f")
        return f"'{text}'"
    return "'" + str(v).replace("'", "''") + "'"


def _where(image: dict[str, Any]) -> str:
    return " and ".join(f'"{k}" IS NULL' if v is None else f'"{k}" = {_literal(v)}' for k, v in image.items())


def _redo(c: Change) -> str:
    name = f'"{OWNER}"."{c.table}"'
    if c.op == "c":
        assert c.after is not None
        cols = ",".join(f'"{k}"' for k in c.after)
        vals = ",".join("NULL" if v is None else _literal(v) for v in c.after.values())
        return f"insert into {name}({cols}) values ({vals});"
    assert c.before is not None
    if c.op == "d":
        return f"delete from {name} where {_where(c.before)};"
    assert c.after is not None
    changed = [k for k in c.after if c.after[k] != c.before.get(k)] or list(c.after)
    sets = ", ".join(f'"{k}" = ' + ("NULL" if c.after[k] is None else _literal(c.after[k])) for k in changed)
    return f"update {name} set {sets} where {_where(c.before)};"


def _pieces(redo: str, limit: int) -> Iterator[tuple[str, bool]]:
    """LogMiner's CSF split: pieces of at most ``limit`` characters, all but the last continued."""
    parts = [redo[i:i + limit] for i in range(0, len(redo), limit)] or [redo]
    for i, p in enumerate(parts):
        yield p, i < len(parts) - 1
