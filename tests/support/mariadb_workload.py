"""A seeded MariaDB writer for the exactly-once tests: schema, background workload, targeted transactions.

The three tables have an ``id`` INT primary key. The background `Workload` thread runs
multi-row inserts, updates, deletes, primary key changes, multi-table transactions, a
transaction that inserts, updates and deletes one row, on request a large transaction (one
``INSERT ... SELECT`` of ``large_rows`` rows plus an ``UPDATE`` of a range of ``big``) and on
request DDL (``ALTER TABLE orders ADD COLUMN extra_<n> INT``) followed by rows using the new
column. It survives server restarts (reconnects, counts failed transactions).
"""

from __future__ import annotations

import contextlib
import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pymysql

TABLES = ("accounts", "big", "orders")
DDL = (
    "CREATE TABLE accounts (id INT PRIMARY KEY, balance BIGINT NOT NULL, note VARCHAR(100))",
    "CREATE TABLE big (id INT PRIMARY KEY, grp INT NOT NULL, name VARCHAR(400))",
    "CREATE TABLE orders (id INT PRIMARY KEY, account_id INT NOT NULL, qty INT NOT NULL, status VARCHAR(60))",
)
ConnectArgs = dict[str, Any]
"""``pymysql.connect`` keyword arguments of the test database (with ``database``)."""


def connect(args: ConnectArgs, *, autocommit: bool = True) -> pymysql.connections.Connection[Any]:
    return pymysql.connect(**args, autocommit=autocommit, connect_timeout=5, charset="utf8mb4")


def create_schema(args: ConnectArgs, *, big: int, accounts: int, orders: int, pad: int = 0) -> None:
    """The three test tables, ids 1..n; ``pad`` widens ``big.name`` (300: 60k rows are ~20 MB)."""
    conn = connect(args)
    try:
        with conn.cursor() as cur:
            for statement in DDL:
                cur.execute(statement)
            for table, n, select in (
                    ("big", big, f"seq, seq % 10, CONCAT(REPEAT('x', {pad}), ' row ', seq)"),
                    ("accounts", accounts, "seq, 1000, CONCAT('acct ', seq)"),
                    ("orders", orders, "seq, 1, 1, 'new'")):
                if n:
                    cur.execute(f"INSERT INTO {table} SELECT {select} FROM seq_1_to_{n}")
    finally:
        conn.close()


def apply_transactions(args: ConnectArgs, transactions: tuple[tuple[str, ...], ...]) -> None:
    """Run each item's statements as one transaction (DDL commits implicitly, as in MariaDB)."""
    conn = connect(args, autocommit=False)
    try:
        with conn.cursor() as cur:
            for statements in transactions:
                conn.begin()
                for sql in statements:
                    cur.execute(sql)
                conn.commit()
    finally:
        conn.close()


_LOST = (pymysql.err.OperationalError, pymysql.err.InterfaceError)
"""What a server restart looks like to a client."""


@dataclass
class Workload:
    """A seeded writer thread (see module doc).

    It keeps an optimistic model of live ids only to pick targets; new ids are never reused, so
    a transaction whose outcome is unknown (server restarted) cannot make a later one fail.

    Attributes:
        args: where to write.
        seed: the random seed.
        sizes: rows per table created by `create_schema` (ids 1..n are live).
        pause_s: sleep between transactions.
        large_rows: rows of the large transaction's ``INSERT ... SELECT``.
        committed / failed: transactions committed / lost to a connection error.
        ddl_done: ``ADD COLUMN`` statements committed.
    """

    args: ConnectArgs
    seed: int
    sizes: dict[str, int]
    pause_s: float = 0.01
    large_rows: int = 20_000
    steps: int = 0
    committed: int = 0
    failed: int = 0
    ddl_done: int = 0
    _stop: threading.Event = field(default_factory=threading.Event)
    _large: threading.Event = field(default_factory=threading.Event)
    _ddl: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None
    _extra: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.rng = random.Random(self.seed)
        self.live = {t: list(range(1, n + 1)) for t, n in self.sizes.items()}
        self.next_id = {t: 1_000_000 for t in self.sizes}

    def start(self) -> Workload:
        self._thread = threading.Thread(target=self._run, name="mariadb-workload", daemon=True)
        self._thread.start()
        return self

    def request_large(self) -> None:
        """Run one large transaction at the next step."""
        self._large.set()

    def request_ddl(self) -> None:
        """Add a column to ``orders`` at the next step; later steps write it."""
        self._ddl.set()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(120)

    def _run(self) -> None:
        conn: pymysql.connections.Connection[Any] | None = None
        while not self._stop.is_set():
            try:
                conn = conn or connect(self.args, autocommit=False)
                if self._ddl.is_set():
                    self._add_column(conn)
                else:
                    conn.begin()
                    done = self._step(conn)
                    conn.commit()
                    done()
                self.committed += 1
            except _LOST:
                self.failed += 1
                _close(conn)
                conn = None
                time.sleep(0.2)
            self.steps += 1
            time.sleep(self.pause_s)
        _close(conn)

    def _add_column(self, conn: pymysql.connections.Connection[Any]) -> None:
        name = f"extra_{len(self._extra) + 1}"
        with conn.cursor() as cur:
            cur.execute(f"ALTER TABLE orders ADD COLUMN {name} INT")
        self._ddl.clear()
        self._extra.append(name)
        self.ddl_done += 1

    def _exec(self, conn: pymysql.connections.Connection[Any], sql: str, args: Any = None) -> None:
        with conn.cursor() as cur:
            cur.execute(sql, args)

    def _step(self, conn: pymysql.connections.Connection[Any]) -> Callable[[], None]:
        """Run one transaction's statements; returns what to apply to the model once committed."""
        if self._large.is_set():
            self._large.clear()
            return self._large_tx(conn)
        r = self.rng.random()
        t = self.rng.choice(TABLES)
        if r < 0.25:
            return self._insert(conn, t, self.rng.randint(1, 4))
        if r < 0.50:
            return self._update(conn, t, self.rng.randint(1, 3))
        if r < 0.62:
            return self._delete(conn, t)
        if r < 0.72:
            return self._rekey(conn, t)
        if r < 0.92:
            return _all(self._insert(conn, "orders", 1), self._update(conn, "accounts", 1),
                        self._update(conn, "big", 1), self._delete(conn, "orders"))
        return self._churn(conn)

    def _new_id(self, t: str) -> int:
        self.next_id[t] += 1
        return self.next_id[t]

    def _pick(self, t: str) -> int | None:
        ids = self.live[t]
        return ids[self.rng.randrange(len(ids))] if ids else None

    def _insert(self, conn: pymysql.connections.Connection[Any], t: str, n: int) -> Callable[[], None]:
        """One multi-row INSERT; ``orders`` rows also fill the newest added column."""
        ids = [self._new_id(t) for _ in range(n)]
        cols, marks = _INSERT[t]
        rows: list[tuple[Any, ...]] = [(i, self.rng.randint(1, 500), _text(self.rng)) for i in ids]
        if t == "orders" and self._extra:
            cols, marks = f"{cols}, {self._extra[-1]}", marks[:-1] + ", %s)"
            rows = [(*row, self.rng.randint(-9, 9)) for row in rows]
        self._exec(conn, f"INSERT INTO {t} ({cols}) VALUES " + ", ".join([marks] * n),
                   [v for row in rows for v in row])
        return lambda: self.live[t].extend(ids)

    def _update(self, conn: pymysql.connections.Connection[Any], t: str, n: int) -> Callable[[], None]:
        for _ in range(n):
            i = self._pick(t)
            if i is None:
                continue
            sql, args = _UPDATE[t], [self.rng.randint(-50, 50), _text(self.rng), i]
            if t == "orders" and self._extra:
                sql = sql.replace(" WHERE", f", {self._extra[-1]} = %s WHERE")
                args.insert(2, self.rng.randint(-9, 9))
            self._exec(conn, sql, args)
        return lambda: None

    def _delete(self, conn: pymysql.connections.Connection[Any], t: str) -> Callable[[], None]:
        i = self._pick(t)
        if i is None:
            return lambda: None
        self._exec(conn, f"DELETE FROM {t} WHERE id = %s", (i,))
        return lambda: _discard(self.live[t], i)

    def _rekey(self, conn: pymysql.connections.Connection[Any], t: str) -> Callable[[], None]:
        old, new = self._pick(t), self._new_id(t)
        if old is None:
            return lambda: None
        self._exec(conn, f"UPDATE {t} SET id = %s WHERE id = %s", (new, old))
        return _all(lambda: _discard(self.live[t], old), lambda: self.live[t].append(new))

    def _churn(self, conn: pymysql.connections.Connection[Any]) -> Callable[[], None]:
        """Insert, update and delete one row in one transaction (c, u, d, tombstone)."""
        i = self._new_id("orders")
        self._exec(conn, "INSERT INTO orders (id, account_id, qty, status) VALUES (%s, 1, 1, 'churn')", (i,))
        self._exec(conn, "UPDATE orders SET qty = 5, status = 'churned' WHERE id = %s", (i,))
        self._exec(conn, "DELETE FROM orders WHERE id = %s", (i,))
        return lambda: None

    def _large_tx(self, conn: pymysql.connections.Connection[Any]) -> Callable[[], None]:
        first = self.next_id["orders"] + 1
        self.next_id["orders"] += self.large_rows
        self._exec(conn, f"INSERT INTO orders (id, account_id, qty, status) SELECT seq, 1, seq % 7, 'bulk' "
                         f"FROM seq_{first}_to_{first + self.large_rows - 1}")
        start = self.rng.randint(1, max(1, self.sizes.get("big", 1) - 2_000))
        self._exec(conn, "UPDATE big SET grp = grp + 1 WHERE id >= %s AND id < %s", (start, start + 2_000))
        return lambda: self.live["orders"].extend(range(first, first + self.large_rows))


_INSERT = {"accounts": ("id, balance, note", "(%s, %s, %s)"),
           "big": ("id, grp, name", "(%s, %s, %s)"),
           "orders": ("id, account_id, qty, status", "(%s, 1, %s, %s)")}
_UPDATE = {"accounts": "UPDATE accounts SET balance = balance + %s, note = %s WHERE id = %s",
           "big": "UPDATE big SET grp = grp + %s, name = %s WHERE id = %s",
           "orders": "UPDATE orders SET qty = qty + %s, status = %s WHERE id = %s"}


def _text(rng: random.Random) -> str | None:
    return None if rng.random() < 0.05 else rng.choice(["a", "é ü", "it's", "tab\there", "emoji 🚀", "x" * 40]) + str(
        rng.randrange(10**6))


def _all(*fns: Callable[[], None]) -> Callable[[], None]:
    def run() -> None:
        for fn in fns:
            fn()
    return run


def _discard(ids: list[int], i: int) -> None:
    try:
        k = ids.index(i)
    except ValueError:
        return
    ids[k] = ids[-1]
    ids.pop()


def _close(conn: pymysql.connections.Connection[Any] | None) -> None:
    if conn is not None:
        with contextlib.suppress(pymysql.err.Error):
            conn.close()
