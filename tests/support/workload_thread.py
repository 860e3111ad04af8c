"""The skeleton of the exactly-once tests' seeded background writers, for any database.

A `WorkloadThread` runs one transaction per step in a daemon thread until stopped: mostly
multi-row inserts, updates, deletes, primary key changes of a random table of ``TABLES``,
multi-table transactions, a transaction that inserts, updates and deletes one row, and on
request (or at given steps) a large transaction. It survives server restarts: a lost
connection counts the transaction as failed, and the next step reconnects.

It keeps an optimistic model of live ids only to pick targets; new ids are never reused, so a
transaction whose outcome is unknown (server restarted) cannot make a later one fail.

A database's writer (`tests.pipelines.exactly_once_support.Workload` for PostgreSQL,
`tests.support.mariadb_workload.Workload` for MariaDB) gives how to connect, run one
transaction and one statement, and its own inserts, updates and large transaction.
"""

from __future__ import annotations

import random
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Generic, Self, TypeVar

TABLES = ("accounts", "big", "orders")
"""The tables every writer changes; each has an ``id`` integer primary key."""

Where = TypeVar("Where")
Conn = TypeVar("Conn")

Done = Callable[[], None]
"""What to apply to the model of live ids once a transaction has committed."""


@dataclass
class WorkloadThread(ABC, Generic[Where, Conn]):
    """A seeded writer thread (see the module doc).

    Attributes:
        where: where to write (a libpq DSN, pymysql connect arguments).
        seed: the random seed.
        sizes: rows per table when the workload starts (ids 1..n are live).
        pause_s: sleep between transactions.
        large_rows: rows the large transaction inserts.
        large_at_steps: steps that run the large transaction (besides `request_large`).
        steps / committed / failed: transactions run / committed / lost to a connection error.
    """

    where: Where
    seed: int
    sizes: dict[str, int]
    pause_s: float = 0.01
    large_rows: int = 10_000
    large_at_steps: tuple[int, ...] = ()
    steps: int = 0
    committed: int = 0
    failed: int = 0
    _stop: threading.Event = field(default_factory=threading.Event)
    _large: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    THREAD_NAME: ClassVar[str] = "workload"
    JOIN_TIMEOUT_S: ClassVar[float] = 60.0
    MAX_INSERT_ROWS: ClassVar[int] = 3
    """The most rows one insert step inserts."""
    TEXTS: ClassVar[Sequence[str]]
    """Text values (a random number is appended; 5% are NULL)."""
    CHURN_SQL: ClassVar[Sequence[str]]
    """The insert, update and delete of one new ``orders`` row, each taking its id."""
    LOST: ClassVar[tuple[type[BaseException], ...]]
    """What a server restart looks like to the client: the transaction is counted as failed."""

    def __post_init__(self) -> None:
        self.rng = random.Random(self.seed)
        self.live = {t: list(range(1, n + 1)) for t, n in self.sizes.items()}
        self.next_id = {t: 1_000_000 for t in self.sizes}

    def start(self) -> Self:
        self._thread = threading.Thread(target=self._run, name=self.THREAD_NAME, daemon=True)
        self._thread.start()
        return self

    def request_large(self) -> None:
        """Run one large transaction at the next step."""
        self._large.set()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(self.JOIN_TIMEOUT_S)

    # -- what a database's writer gives ------------------------------------------------------------

    @abstractmethod
    def _connect(self) -> Conn:
        """A new connection to `where`."""

    @abstractmethod
    def _transaction(self, conn: Conn) -> None:
        """Run and commit one transaction (usually `_step`'s), then apply its model update."""

    @abstractmethod
    def _exec(self, conn: Conn, sql: str, args: Any = None) -> None:
        """Run one statement."""

    @abstractmethod
    def _close(self, conn: Conn) -> None:
        """Close ``conn`` (also after it was lost)."""

    @abstractmethod
    def _insert(self, conn: Conn, t: str, n: int) -> Done:
        """Insert ``n`` rows with new ids into table ``t``."""

    @abstractmethod
    def _update(self, conn: Conn, t: str, n: int) -> Done:
        """Update ``n`` random live rows of table ``t``."""

    @abstractmethod
    def _large_tx(self, conn: Conn) -> Done:
        """Insert `large_rows` rows into ``orders`` and update a range of ``big``, in one transaction."""

    # -- the loop and the transactions -------------------------------------------------------------

    def _run(self) -> None:
        conn: Conn | None = None
        while not self._stop.is_set():
            try:
                conn = conn or self._connect()
                self._transaction(conn)
                self.committed += 1
            except self.LOST:
                self.failed += 1
                if conn is not None:
                    self._close(conn)
                conn = None
                time.sleep(0.2)
            self.steps += 1
            time.sleep(self.pause_s)
        if conn is not None:
            self._close(conn)

    def _step(self, conn: Conn) -> Done:
        """Run one transaction's statements; returns what to apply to the model once committed."""
        if self.steps in self.large_at_steps or self._large.is_set():
            self._large.clear()
            return self._large_tx(conn)
        r = self.rng.random()
        t = self.rng.choice(TABLES)
        if r < 0.25:
            return self._insert(conn, t, self.rng.randint(1, self.MAX_INSERT_ROWS))
        if r < 0.50:
            return self._update(conn, t, self.rng.randint(1, 3))
        if r < 0.62:
            return self._delete(conn, t)
        if r < 0.72:
            return self._rekey(conn, t)
        if r < 0.92:
            return _all(
                self._insert(conn, "orders", 1),
                self._update(conn, "accounts", 1),
                self._update(conn, "big", 1),
                self._delete(conn, "orders"),
            )
        return self._churn(conn)

    def _new_id(self, t: str) -> int:
        self.next_id[t] += 1
        return self.next_id[t]

    def _pick(self, t: str) -> int | None:
        ids = self.live[t]
        return ids[self.rng.randrange(len(ids))] if ids else None

    def _text(self) -> str | None:
        """A random text value: NULL, accents, a quote, a tab, a long one."""
        return None if self.rng.random() < 0.05 else self.rng.choice(self.TEXTS) + str(self.rng.randrange(10**6))

    def _delete(self, conn: Conn, t: str) -> Done:
        i = self._pick(t)
        if i is None:
            return lambda: None
        self._exec(conn, f"DELETE FROM {t} WHERE id = %s", (i,))
        return lambda: _discard(self.live[t], i)

    def _rekey(self, conn: Conn, t: str) -> Done:
        old, new = self._pick(t), self._new_id(t)
        if old is None:
            return lambda: None
        self._exec(conn, f"UPDATE {t} SET id = %s WHERE id = %s", (new, old))
        return _all(lambda: _discard(self.live[t], old), lambda: self.live[t].append(new))

    def _churn(self, conn: Conn) -> Done:
        """Insert, update and delete one row in one transaction (c, u, d, tombstone)."""
        i = self._new_id("orders")
        for sql in self.CHURN_SQL:
            self._exec(conn, sql, (i,))
        return lambda: None


def _all(*fns: Done) -> Done:
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
