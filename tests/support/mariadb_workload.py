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
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pymysql

from tests.support.workload_thread import TABLES, WorkloadThread

__all__ = ["DDL", "TABLES", "ConnectArgs", "Workload", "apply_transactions", "connect", "create_schema"]

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


@dataclass
class Workload(WorkloadThread[ConnectArgs, "pymysql.connections.Connection[Any]"]):
    """A seeded writer thread on pymysql connect arguments (see module doc and
    `tests.support.workload_thread`).

    Attributes:
        ddl_done: ``ADD COLUMN`` statements committed.
    """

    large_rows: int = 20_000
    ddl_done: int = 0
    _ddl: threading.Event = field(default_factory=threading.Event)
    _extra: list[str] = field(default_factory=list)

    THREAD_NAME = "mariadb-workload"
    JOIN_TIMEOUT_S = 120.0
    MAX_INSERT_ROWS = 4
    LOST = (pymysql.err.OperationalError, pymysql.err.InterfaceError)
    TEXTS = ("a", "é ü", "it's", "tab\there", "emoji 🚀", "x" * 40)
    CHURN_SQL = ("INSERT INTO orders (id, account_id, qty, status) VALUES (%s, 1, 1, 'churn')",
                 "UPDATE orders SET qty = 5, status = 'churned' WHERE id = %s",
                 "DELETE FROM orders WHERE id = %s")

    def request_ddl(self) -> None:
        """Add a column to ``orders`` at the next step; later steps write it."""
        self._ddl.set()

    def _connect(self) -> pymysql.connections.Connection[Any]:
        return connect(self.where, autocommit=False)

    def _transaction(self, conn: pymysql.connections.Connection[Any]) -> None:
        if self._ddl.is_set():
            self._add_column(conn)
            return
        conn.begin()
        done = self._step(conn)
        conn.commit()
        done()

    def _exec(self, conn: pymysql.connections.Connection[Any], sql: str, args: Any = None) -> None:
        with conn.cursor() as cur:
            cur.execute(sql, args)

    def _close(self, conn: pymysql.connections.Connection[Any]) -> None:
        with contextlib.suppress(pymysql.err.Error):
            conn.close()

    def _add_column(self, conn: pymysql.connections.Connection[Any]) -> None:
        name = f"extra_{len(self._extra) + 1}"
        self._exec(conn, f"ALTER TABLE orders ADD COLUMN {name} INT")
        self._ddl.clear()
        self._extra.append(name)
        self.ddl_done += 1

    def _insert(self, conn: pymysql.connections.Connection[Any], t: str, n: int) -> Callable[[], None]:
        """One multi-row INSERT; ``orders`` rows also fill the newest added column."""
        ids = [self._new_id(t) for _ in range(n)]
        cols, marks = _INSERT[t]
        rows: list[tuple[Any, ...]] = [(i, self.rng.randint(1, 500), self._text()) for i in ids]
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
            sql, args = _UPDATE[t], [self.rng.randint(-50, 50), self._text(), i]
            if t == "orders" and self._extra:
                sql = sql.replace(" WHERE", f", {self._extra[-1]} = %s WHERE")
                args.insert(2, self.rng.randint(-9, 9))
            self._exec(conn, sql, args)
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
