"""Helpers for the exactly-once tests: schema, writer workload, oracle, capture processes, checks.

The oracle is an independent second logical replication slot using PostgreSQL's own
``test_decoding`` plugin, created before capture starts: it yields every committed change in
commit order, so the bronze event sequence of each table can be compared with the true one,
event by event, without trusting any code under test.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any

import orjson
import psycopg
import pytest
from psycopg.rows import dict_row

from tests.support.bronze_rows import (
    SEQ_GAPS,
    SEQ_NOT_INCREASING,
    SNAPSHOT_DUPLICATES,
    SNAPSHOT_LEFTOVERS,
    duplicates,
    event_diff,
    read_offsets,
    read_topic,
    seq_problems,
    state_problems,
)
from tests.support.capture_process import (
    CaptureProcess,
    log_commits,
    read_trace,
    wait_until,
)
from tests.support.workload_thread import TABLES, WorkloadThread

PREFIX = "pg"
DDL = (
    "CREATE TABLE accounts (id int PRIMARY KEY, balance bigint NOT NULL, note text)",
    "ALTER TABLE accounts REPLICA IDENTITY FULL",
    "CREATE TABLE big (id int PRIMARY KEY, grp int NOT NULL, name text)",
    "CREATE TABLE orders (id int PRIMARY KEY, account_id int NOT NULL, qty int NOT NULL, status text)",
)
__all__ = ["SEQ_GAPS", "SEQ_NOT_INCREASING", "SNAPSHOT_DUPLICATES", "SNAPSHOT_LEFTOVERS", "CaptureProcess",
           "log_commits", "read_trace", "wait_until"]
SYNC_COMMIT = "-c synchronous_commit=on"
"""Session option for writers: a commit returns once its WAL is written, so ``--until-idle``
(which stops at the server's WAL write position) always sees it; the test servers default to
``synchronous_commit=off``."""
Event = tuple[int, str | None, int]
"""One change event as ``(change lsn, op, id)``; op None is a tombstone."""


def topic(table: str) -> str:
    return f"{PREFIX}.public.{table}"


def lsn_int(text: str) -> int:
    hi, lo = text.split("/")
    return (int(hi, 16) << 32) | int(lo, 16)


def create_schema(dsn: str, *, big: int, accounts: int, orders: int, pad: int = 0) -> None:
    """The three test tables; ``accounts`` has REPLICA IDENTITY FULL. Ids start at 1.

    ``pad`` widens ``big.name`` (300 makes 50k rows about 18 MB: a table the snapshot copies
    in a worker process).
    """
    with psycopg.connect(dsn, autocommit=True) as conn:
        for statement in DDL:
            conn.execute(statement)
        conn.execute("INSERT INTO big SELECT g, g %% 10, repeat('x', %s) || ' row ' || g "
                     "FROM generate_series(1, %s) g", (pad, big))
        conn.execute("INSERT INTO accounts SELECT g, 1000, 'acct ' || g FROM generate_series(1, %s) g",
                     (accounts,))
        conn.execute("INSERT INTO orders SELECT g, 1, 1, 'new' FROM generate_series(1, %s) g", (orders,))


def pipeline_yaml(root: str, dsn: str, *, slot: str, interval_ms: int, max_records: int,
                  max_bytes: int = 8 << 20, **options: str) -> str:
    """A one-source pipeline file for ``dsn`` (a libpq ``key=value`` string)."""
    parts = dict(p.split("=", 1) for p in dsn.split())
    opts = {"slot.name": slot, "errors.retry.delay.initial.ms": "100",
            "errors.retry.delay.max.ms": "400", "poll.interval.ms": "100",
            **options}
    lines = "".join(f'      {k}: "{v}"\n' for k, v in opts.items())
    return (f'pipeline: eo\nlakehouse: {{root: "{root}"}}\nsources:\n  - name: {PREFIX}\n    connector: postgres\n'
            f"    connection: {{host: 127.0.0.1, port: {parts['port']}, database: {parts['dbname']}, user: postgres}}\n"
            f"    capture: {{commit_interval_ms: {interval_ms}, commit_max_records: {max_records}, "
            f"commit_max_bytes: {max_bytes}}}\n"
            f"    options:\n{lines}")


GATE_OPTIONS = {
    "snapshot.select.statement.overrides": "public.orders",
    "snapshot.select.statement.overrides.public.orders": "SELECT * FROM public.orders WHERE (SELECT public.eo_gate())",
}
"""Pipeline options that make the snapshot of ``orders`` (the last table) wait for the gate."""


class SnapshotGate:
    """While held, a snapshot blocks before reading ``orders``, so it cannot complete.

    The snapshot's SELECT of ``orders`` (see `GATE_OPTIONS`) takes a shared advisory lock that
    this object holds exclusively. ``client_connection_check_interval`` makes the server end a
    blocked snapshot session soon after its client is killed (else its open transaction would
    stall the next attempt's slot creation).
    """

    KEY = 4242

    def __init__(self, dsn: str) -> None:
        self.conn = psycopg.connect(dsn, autocommit=True)
        db = self.conn.info.dbname
        self.conn.execute("CREATE OR REPLACE FUNCTION public.eo_gate() RETURNS boolean LANGUAGE plpgsql AS "
                          f"$$ BEGIN PERFORM pg_advisory_lock_shared({self.KEY}); RETURN true; END $$")
        self.conn.execute(f'ALTER DATABASE "{db}" SET client_connection_check_interval = 200')
        self.conn.execute("SELECT pg_advisory_lock(%s)", (self.KEY,))

    def release(self) -> None:
        self.conn.close()


# -- workload -----------------------------------------------------------------------------------


class Workload(WorkloadThread[str, psycopg.Connection[Any]]):
    """A seeded writer thread on a libpq DSN (see `tests.support.workload_thread`).

    Statements are parameterized one-row statements; the large transaction inserts
    ``large_rows`` rows into ``orders`` and updates as many rows of ``big``.
    """

    LOST = (psycopg.OperationalError,)
    TEXTS = ("a", "é ü", "it's", "tab\there", "x" * 40)
    CHURN_SQL = ("INSERT INTO orders VALUES (%s, 1, 1, 'churn')",
                 "UPDATE orders SET qty = qty + 5, status = 'churned' WHERE id = %s",
                 "DELETE FROM orders WHERE id = %s")

    def _connect(self) -> psycopg.Connection[Any]:
        return psycopg.connect(self.where, autocommit=True, connect_timeout=5, options=SYNC_COMMIT)

    def _transaction(self, conn: psycopg.Connection[Any]) -> None:
        with conn.transaction():
            done = self._step(conn)
        done()

    def _exec(self, conn: psycopg.Connection[Any], sql: str, args: Any = None) -> None:
        conn.execute(sql, args)

    def _close(self, conn: psycopg.Connection[Any]) -> None:
        conn.close()

    def _insert(self, conn: psycopg.Connection[Any], t: str, n: int) -> Callable[[], None]:
        ids = [self._new_id(t) for _ in range(n)]
        for i in ids:
            self._exec(conn, _INSERT[t], (i, self.rng.randint(1, 500), self._text()))
        return lambda: self.live[t].extend(ids)

    def _update(self, conn: psycopg.Connection[Any], t: str, n: int) -> Callable[[], None]:
        for _ in range(n):
            i = self._pick(t)
            if i is not None:
                self._exec(conn, _UPDATE[t], (self.rng.randint(-50, 50), self._text(), i))
        return lambda: None

    def _large_tx(self, conn: psycopg.Connection[Any]) -> Callable[[], None]:
        first = self.next_id["orders"] + 1
        self.next_id["orders"] += self.large_rows
        self._exec(conn, "INSERT INTO orders SELECT g, 1, g %% 7, 'bulk' FROM generate_series(%s, %s) g",
                   (first, first + self.large_rows - 1))
        start = self.rng.randint(1, max(1, self.sizes.get("big", 1) - self.large_rows))
        self._exec(conn, "UPDATE big SET grp = grp + 1 WHERE id >= %s AND id < %s", (start, start + self.large_rows))
        return lambda: self.live["orders"].extend(range(first, first + self.large_rows))


_INSERT = {"accounts": "INSERT INTO accounts VALUES (%s, %s, %s)",
           "big": "INSERT INTO big VALUES (%s, %s, %s)",
           "orders": "INSERT INTO orders VALUES (%s, 1, %s, %s)"}
_UPDATE = {"accounts": "UPDATE accounts SET balance = balance + %s, note = %s WHERE id = %s",
           "big": "UPDATE big SET grp = grp + %s, name = %s WHERE id = %s",
           "orders": "UPDATE orders SET qty = qty + %s, status = %s WHERE id = %s"}


# -- oracle --------------------------------------------------------------------------------------

_CHANGE = re.compile(r"^table public\.(\w+): (INSERT|UPDATE|DELETE): (.*)$", re.S)
_ID = re.compile(r"id\[integer\]:(-?\d+)")


def create_oracle_slot(dsn: str, slot: str, plugin: str = "test_decoding") -> str:
    """A ``test_decoding`` slot that records every change from now on; returns its name.

    Without the plugin (``test_decoding`` is in PostgreSQL's contrib package) the calling test
    fails: the exactly-once claim is never checked without its oracle.
    """
    with psycopg.connect(dsn, autocommit=True) as conn:
        try:
            conn.execute("SELECT pg_create_logical_replication_slot(%s, %s)", (slot, plugin))
        except psycopg.errors.UndefinedFile as exc:
            pytest.fail(f"the exactly-once oracle needs PostgreSQL's {plugin} plugin (contrib): {exc}",
                        pytrace=False)
    return slot


def oracle_events(dsn: str, slot: str, *, after_lsn: int) -> dict[str, list[Event]]:
    """The expected bronze events per table of every transaction committed after ``after_lsn``."""
    out: dict[str, list[Event]] = {t: [] for t in TABLES}
    pending: list[tuple[str, Event]] = []
    with psycopg.connect(dsn, autocommit=True) as conn:
        cur = conn.execute("SELECT lsn::text, data FROM pg_logical_slot_peek_changes("
                           "%s, NULL, NULL, 'include-xids', '0', 'skip-empty-xacts', '1')", (slot,))
        for lsn_text, data in cur:
            if data.startswith("BEGIN"):
                pending = []
            elif data.startswith("COMMIT"):
                if lsn_int(lsn_text) > after_lsn:
                    for table, event in pending:
                        out.setdefault(table, []).append(event)
            else:
                pending.extend(_expand(lsn_int(lsn_text), data))
    return out


def oracle_commit_lsns(dsn: str, slot: str) -> list[int]:
    """The commit (end) LSN of every transaction in the oracle slot that changed a captured table.

    A slot confirmed past such a commit makes the server skip that transaction on restart, so
    these, not the LSNs of the changes inside, say whether a slot ahead of bronze lost anything:
    the walsender's keepalive WAL end passes the changes of a transaction still in progress.
    """
    commits: list[int] = []
    touched = False
    with psycopg.connect(dsn, autocommit=True) as conn:
        cur = conn.execute("SELECT lsn::text, data FROM pg_logical_slot_peek_changes("
                           "%s, NULL, NULL, 'include-xids', '0', 'skip-empty-xacts', '1')", (slot,))
        for lsn_text, data in cur:
            if data.startswith("BEGIN"):
                touched = False
            elif data.startswith("COMMIT"):
                if touched:
                    commits.append(lsn_int(lsn_text))
            elif (m := _CHANGE.match(data)) is not None and m.group(1) in TABLES:
                touched = True
    return commits


def oracle_transaction_sizes(dsn: str, slot: str, *, after_lsn: int) -> Counter[int]:
    """Per transaction (xid) committed after ``after_lsn``: how many row changes of the captured
    tables it made, as bronze change events with a value (a delete's tombstone not counted)."""
    sizes: Counter[int] = Counter()
    xid, pending = 0, 0
    with psycopg.connect(dsn, autocommit=True) as conn:
        cur = conn.execute("SELECT lsn::text, data FROM pg_logical_slot_peek_changes("
                           "%s, NULL, NULL, 'include-xids', '1', 'skip-empty-xacts', '1')", (slot,))
        for lsn_text, data in cur:
            if data.startswith("BEGIN"):
                xid, pending = int(data.split()[1]), 0
            elif data.startswith("COMMIT"):
                if lsn_int(lsn_text) > after_lsn and pending:
                    sizes[xid] += pending
            elif (m := _CHANGE.match(data)) is not None and m.group(1) in TABLES:
                pending += sum(1 for _, (_, op, _) in _expand(lsn_int(lsn_text), data) if op is not None)
    return sizes


def torn_transactions(root: str, dsn: str, *, oracle_slot: str) -> list[str]:
    """Transactions whose changes bronze holds only in part (or more than once): per source
    transaction id, bronze's streamed change events with a value against the oracle's count."""
    done = [r for r in offsets(root) if r["snapshot_completed"]]
    if not done:
        return ["no offsets row with snapshot_completed: the snapshot never finished"]
    expected = oracle_transaction_sizes(dsn, oracle_slot, after_lsn=int(orjson.loads(done[0]["offset"])["lsn"]))
    found: Counter[int] = Counter()
    for t in TABLES:
        for r in read_bronze(root, t):
            if r["op"] not in ("r", None) and r["value"] is not None:
                found[int(orjson.loads(r["value"])["source"]["txId"])] += 1
    torn = {x: (found.get(x, 0), n) for x, n in expected.items() if found.get(x, 0) != n}
    torn.update({x: (n, 0) for x, n in found.items() if x not in expected})
    if not expected:
        return ["the oracle saw no transaction after the snapshot"]
    return [f"{len(torn)} of {len(expected)} transactions torn or repeated (xid: bronze events, committed "
            f"events): {dict(list(torn.items())[:5])}"] if torn else []


def _expand(lsn: int, data: str) -> Iterator[tuple[str, Event]]:
    """The Debezium events (tombstones on) that one ``test_decoding`` change line produces."""
    m = _CHANGE.match(data)
    if m is None:
        raise AssertionError(f"unexpected test_decoding line: {data[:200]}")
    table, kind, rest = m.groups()
    ids = [int(x) for x in _ID.findall(rest.split(" new-tuple: ")[0])[:1]]
    if kind == "INSERT":
        yield table, (lsn, "c", ids[0])
    elif kind == "DELETE":
        yield table, (lsn, "d", ids[0])
        yield table, (lsn, None, ids[0])
    else:
        new = int(_ID.findall(rest.split(" new-tuple: ")[-1])[0])
        old = ids[0] if "old-key:" in rest else new
        if old == new:
            yield table, (lsn, "u", new)
        else:
            yield from ((table, (lsn, "d", old)), (table, (lsn, None, old)), (table, (lsn, "c", new)))


# -- bronze checks -------------------------------------------------------------------------------


def read_bronze(root: str, table: str) -> list[dict[str, Any]]:
    """A bronze table's rows in ``seq`` order; empty if it does not exist."""
    return read_topic(root, topic(table))


def offsets(root: str) -> list[dict[str, Any]]:
    """The committed offsets rows of source ``pg`` by batch."""
    return read_offsets(root, PREFIX)


def bronze_event(row: dict[str, Any]) -> Event:
    return int(orjson.loads(row["position"])["lsn"]), row["op"], int(orjson.loads(row["key"])["id"])


def check_exactly_once(root: str, dsn: str, *, slot: str, oracle_slot: str) -> list[str]:
    """Every problem found in bronze against the source database, the oracle and the slot."""
    rows_by_offset = offsets(root)
    done = [r for r in rows_by_offset if r["snapshot_completed"]]
    if not done:
        return ["no offsets row with snapshot_completed: the snapshot never finished"]
    snapshot_lsn = int(orjson.loads(done[0]["offset"])["lsn"])
    expected = oracle_events(dsn, oracle_slot, after_lsn=snapshot_lsn)
    problems: list[str] = []
    with psycopg.connect(dsn, row_factory=dict_row) as conn:
        for t in TABLES:
            rows = read_bronze(root, t)
            source = {r["id"]: r for r in conn.execute(f"SELECT * FROM {t}").fetchall()}
            problems += [f"{t}: {p}" for p in _check_table(rows, source, snapshot_lsn)]
            problems += [f"{t}: {p}" for p in compare_events(rows, expected.get(t, []))]
        commits = oracle_commit_lsns(dsn, oracle_slot)
        problems += check_slot(conn, slot, rows_by_offset, commits)
    return problems


def _check_table(rows: list[dict[str, Any]], source: dict[int, dict[str, Any]], snapshot_lsn: int) -> list[str]:
    problems = seq_problems(rows)
    problems += duplicates("streamed (position, op, key)", [(r["position"], r["op"], r["key"]) for r in rows
                                                            if r["op"] != "r"])
    snap = [r for r in rows if r["op"] == "r"]
    snap_keys = Counter(r["key"] for r in snap)
    if any(n > 1 for n in snap_keys.values()):
        extra = sum(n - 1 for n in snap_keys.values())
        problems.append(f"{extra} {SNAPSHOT_DUPLICATES}: keys read more than once, e.g. "
                        f"{[k for k, n in snap_keys.items() if n > 1][:3]}")
    stale = Counter(int(orjson.loads(r["position"])["lsn"]) for r in snap if
                    int(orjson.loads(r["position"])["lsn"]) != snapshot_lsn)
    if stale:
        problems.append(f"{SNAPSHOT_LEFTOVERS} (lsn: rows): {dict(stale)}; "
                        f"the completed snapshot is at lsn {snapshot_lsn}")
    problems += state_problems(rows, source)
    return problems


def compare_events(rows: list[dict[str, Any]], expected: list[Event]) -> list[str]:
    """Bronze's streamed events must be the oracle's, in the same order, each once."""
    return event_diff([bronze_event(r) for r in rows if r["op"] != "r"], expected)


def slot_confirmed(conn: psycopg.Connection[Any], slot: str) -> int | None:
    """The slot's confirmed_flush_lsn now, or None."""
    row = conn.execute("SELECT confirmed_flush_lsn::text AS lsn FROM pg_replication_slots WHERE slot_name = %s",
                       (slot,)).fetchone()
    return None if row is None or row["lsn"] is None else lsn_int(row["lsn"])


def slot_ahead(confirmed: int | None, rows_by_offset: list[dict[str, Any]], slot: str,
               commit_lsns: list[int] | None) -> list[str]:
    """A recorded slot position ahead of bronze's offset across a captured change (see `check_slot`)."""
    if confirmed is None or not rows_by_offset or not rows_by_offset[-1]["snapshot_completed"]:
        return []
    bronze_lsn = int(orjson.loads(rows_by_offset[-1]["offset"])["lsn"])
    if confirmed <= bronze_lsn:
        return []
    if commit_lsns is not None and not any(bronze_lsn < lsn <= confirmed for lsn in commit_lsns):
        return []
    return [f"slot {slot} confirmed_flush_lsn {confirmed} was ahead of bronze's offset lsn {bronze_lsn}"]


def check_slot(conn: psycopg.Connection[Any], slot: str, rows_by_offset: list[dict[str, Any]],
               commit_lsns: list[int] | None = None) -> list[str]:
    """The slot's confirmed_flush_lsn must not be ahead of bronze's last committed offset.

    With ``commit_lsns`` (from `oracle_commit_lsns`), the slot may be ahead across WAL that
    holds no commit of a captured transaction: psycopg2 advances the flush position to a
    keepalive's WAL end once everything received has been confirmed, which loses nothing.
    """
    row = conn.execute("SELECT confirmed_flush_lsn::text AS lsn FROM pg_replication_slots WHERE slot_name = %s",
                       (slot,)).fetchone()
    if row is None or row["lsn"] is None or not rows_by_offset:
        return [] if row is not None else [f"replication slot {slot} is missing"]
    last = rows_by_offset[-1]
    bronze_lsn = int(orjson.loads(last["offset"])["lsn"])
    confirmed = lsn_int(row["lsn"])
    if commit_lsns is not None and not any(bronze_lsn < lsn <= confirmed for lsn in commit_lsns):
        return []
    if last["snapshot_completed"] and confirmed > bronze_lsn:
        return [f"slot {slot} confirmed_flush_lsn {row['lsn']} ({confirmed}) is ahead of bronze's last "
                f"offset lsn {bronze_lsn} (batch {last['batch']})"]
    return []


# -- deterministic kills inside a child process (`tests.support.capture_process.traced_capture`) ----

ACK = "cdc_sources.postgres.stream:PostgresStreamReader.acknowledge"
"""The method whose return is a slot acknowledgement (an ``ack`` kill point)."""
STREAM = "cdc_sources.postgres.session:PostgresCaptureSession.stream"
"""The session's streaming generator (the targeted workload is applied just before it starts)."""


def apply_workload(dsn: str, transactions: tuple[str, ...]) -> None:
    """Run each item's statements as one transaction (in a child capture: just before streaming)."""
    with psycopg.connect(dsn, autocommit=True, options=SYNC_COMMIT) as conn:
        for statements in transactions:
            with conn.transaction():
                conn.execute(statements.encode())
