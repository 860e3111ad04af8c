"""Helpers of the MySQL/MariaDB incremental-snapshot tests: a pipeline over ``items`` with a signal
table, signals inserted with pymysql, bronze read with delta-rs (the oracle never uses the code
under test)."""

from __future__ import annotations

import random
import threading
import time
from typing import Any

import orjson
import pymysql
from deltalake import DeltaTable

from bronze.schema import offsets_path, topic_path
from pipelines.config import PipelineConfig, parse_pipeline

SIGNAL_DDL = "CREATE TABLE dbz_signal (id VARCHAR(64) PRIMARY KEY, type VARCHAR(32) NOT NULL, data VARCHAR(2048))"


def topic(db: dict[str, Any], table: str = "items") -> str:
    return f"my.{db['database']}.{table}"


def pipeline(root: str, db: dict[str, Any], *, silver: str = "", **options: Any) -> PipelineConfig:
    return parse_pipeline(pipeline_text(root, db, silver=silver, **options), env={})


def pipeline_text(root: str, db: dict[str, Any], *, silver: str = "", commit_max_records: int = 200,
                  server_id: int = 5471, **options: Any) -> str:
    opts = {"database.include.list": db["database"], "database.server.id": str(server_id),
            "signal.data.collection": f"{db['database']}.dbz_signal", "incremental.snapshot.chunk.size": "50",
            **options}
    return (f"pipeline: inc\nlakehouse: {{root: \"{root}\"}}\nsources:\n  - name: my\n    connector: mariadb\n"
            f"    connection: {{host: 127.0.0.1, port: {db['port']}, user: {db['user']}}}\n"
            "    options:\n" + "".join(f"      {k}: \"{v}\"\n" for k, v in opts.items())
            + f"    capture: {{commit_max_records: {commit_max_records}}}\n" + silver)


def execute(db: dict[str, Any], *statements: str, args: tuple[Any, ...] | None = None) -> None:
    conn = pymysql.connect(**db, autocommit=True)
    try:
        with conn.cursor() as cur:
            for sql in statements:
                cur.execute(sql, args)
    finally:
        conn.close()


def setup_items(db: dict[str, Any], rows: int) -> None:
    execute(db, SIGNAL_DDL, "CREATE TABLE items (id INT PRIMARY KEY, name VARCHAR(200) NOT NULL, qty INT)",
            f"INSERT INTO items SELECT seq, CONCAT('item ', seq), seq MOD 17 FROM seq_1_to_{int(rows)}")


def signal(db: dict[str, Any], sig_id: str, kind: str, data: dict[str, Any] | None) -> None:
    execute(db, "INSERT INTO dbz_signal VALUES (%s, %s, %s)",
            args=(sig_id, kind, None if data is None else orjson.dumps(data).decode()))


def bronze(root: str, name: str) -> list[dict[str, Any]]:
    return sorted(DeltaTable(topic_path(root, name)).to_pyarrow_table().to_pylist(), key=lambda r: r["seq"])


def incremental_rows(root: str, name: str) -> list[dict[str, Any]]:
    """The bronze rows of a topic an incremental snapshot wrote, values parsed."""
    out = []
    for r in bronze(root, name):
        v = orjson.loads(r["value"]) if r["value"] else None
        if v and v["op"] == "r" and v["source"]["snapshot"] == "incremental":
            out.append({**r, "v": v})
    return out


def incremental_count(root: str, name: str) -> int:
    """How many incremental snapshot rows bronze holds (0 before the table exists)."""
    try:
        return len(incremental_rows(root, name))
    except Exception:  # delta-rs: no table yet
        return 0


def last_offset(root: str) -> dict[str, Any]:
    rows = DeltaTable(offsets_path(root, "my")).to_pyarrow_table().to_pylist()
    return dict(orjson.loads(max(rows, key=lambda r: r["batch"])["offset"]))


def source_rows(db: dict[str, Any]) -> dict[int, tuple[str, int | None]]:
    conn = pymysql.connect(**db)
    try:
        with conn.cursor() as cur:
            cur.execute("SELECT id, name, qty FROM items")
            return {r[0]: (r[1], r[2]) for r in cur.fetchall()}
    finally:
        conn.close()


def fold(root: str, name: str) -> dict[int, tuple[str, int | None]]:
    """The table as bronze says it is: each key's last event (by ``seq``) applied."""
    state: dict[int, tuple[str, int | None]] = {}
    for r in bronze(root, name):
        if r["value"] is None:
            continue
        v = orjson.loads(r["value"])
        if v["op"] in ("c", "u", "r"):
            state[v["after"]["id"]] = (v["after"]["name"], v["after"]["qty"])
        elif v["op"] == "d":
            state.pop(v["before"]["id"], None)
    return state


class Writer(threading.Thread):
    """Deletes, re-inserts, updates and inserts random rows of ``items`` (ids 1..top) until stopped
    or ``ops`` are done; ``touched`` holds every id it wrote, ``new`` the ids it inserted."""

    def __init__(self, db: dict[str, Any], seed: int, *, top: int, ops: int, pause_s: float = 0.004) -> None:
        super().__init__(daemon=True)
        self.db, self.rng, self.top, self.ops, self.pause_s = db, random.Random(seed), top, ops, pause_s
        self.touched: set[int] = set()
        self.new: set[int] = set()
        self.stop = threading.Event()
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            conn = pymysql.connect(**self.db, autocommit=True)
            try:
                with conn.cursor() as cur:
                    for i in range(self.ops):
                        if self.stop.is_set():
                            return
                        self._one(cur, conn, i)
                        time.sleep(self.pause_s)
            finally:
                conn.close()
        except BaseException as exc:  # reported by the test
            self.error = exc

    def _one(self, cur: Any, conn: Any, i: int) -> None:
        k = self.rng.randint(1, self.top)
        action = i % 4
        if action == 3:
            k = 100_000 + i
            self.new.add(k)
        self.touched.add(k)
        if action == 0:
            cur.execute("DELETE FROM items WHERE id = %s", (k,))
        elif action == 1:
            conn.begin()
            cur.execute("DELETE FROM items WHERE id = %s", (k,))
            cur.execute("INSERT INTO items VALUES (%s, 'again', 1)", (k,))
            conn.commit()
        elif action == 2:
            cur.execute("UPDATE items SET qty = qty + 5, name = CONCAT(name, '+') WHERE id = %s", (k,))
        else:
            cur.execute("INSERT INTO items VALUES (%s, 'during', 2)", (k,))
