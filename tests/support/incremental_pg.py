"""Helpers of the incremental-snapshot tests: a pipeline over ``items`` with a signal table, signals
inserted with psycopg, bronze read with delta-rs (the oracle never uses the code under test)."""

from __future__ import annotations

import random
import threading
import time
from typing import Any

import orjson
import psycopg
from deltalake import DeltaTable

from bronze.schema import offsets_path, topic_path
from pipelines.config import PipelineConfig, parse_pipeline

TOPIC = "pg.public.items"
SIGNAL_DDL = "CREATE TABLE dbz_signal (id varchar(42) PRIMARY KEY, type varchar(32) NOT NULL, data varchar(2048))"


def pipeline(root: str, dsn: str, *, silver: str = "", **options: Any) -> PipelineConfig:
    return parse_pipeline(pipeline_text(root, dsn, silver=silver, **options), env={})


def pipeline_text(root: str, dsn: str, *, silver: str = "", commit_max_records: int = 200, **options: Any) -> str:
    parts = dict(p.split("=", 1) for p in dsn.split())
    opts = {"slot.name": f"inc_{parts['dbname'][-30:]}", "signal.data.collection": "public.dbz_signal",
            "incremental.snapshot.chunk.size": "50", **options}
    text = (f"pipeline: inc\nlakehouse: {{root: \"{root}\"}}\nsources:\n  - name: pg\n    connector: postgres\n"
            f"    connection: {{host: 127.0.0.1, port: {parts['port']}, database: {parts['dbname']}, user: postgres}}\n"
            "    options:\n" + "".join(f"      {k}: \"{v}\"\n" for k, v in opts.items())
            + f"    capture: {{commit_max_records: {commit_max_records}}}\n" + silver)
    return text


def setup_items(dsn: str, rows: int) -> None:
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(SIGNAL_DDL)
        conn.execute("CREATE TABLE items (id int PRIMARY KEY, name text NOT NULL, qty int)")
        conn.execute("INSERT INTO items SELECT g, 'item ' || g, mod(g, 17) FROM generate_series(1, %s) g", (rows,))


def signal(dsn: str, sig_id: str, kind: str, data: dict[str, Any] | None) -> None:
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("INSERT INTO dbz_signal VALUES (%s, %s, %s)",
                      (sig_id, kind, None if data is None else orjson.dumps(data).decode()))


def bronze(root: str, topic: str = TOPIC) -> list[dict[str, Any]]:
    return sorted(DeltaTable(topic_path(root, topic)).to_pyarrow_table().to_pylist(), key=lambda r: r["seq"])


def incremental_rows(root: str) -> list[dict[str, Any]]:
    """The bronze rows of ``items`` an incremental snapshot wrote, values parsed."""
    out = []
    for r in bronze(root):
        v = orjson.loads(r["value"]) if r["value"] else None
        if v and v["op"] == "r" and v["source"]["snapshot"] == "incremental":
            out.append({**r, "v": v})
    return out


def last_offset(root: str) -> dict[str, Any]:
    rows = DeltaTable(offsets_path(root, "pg")).to_pyarrow_table().to_pylist()
    return dict(orjson.loads(max(rows, key=lambda r: r["batch"])["offset"]))


def source_rows(dsn: str) -> dict[int, tuple[str, int | None]]:
    with psycopg.connect(dsn) as conn:
        return {r[0]: (r[1], r[2]) for r in conn.execute("SELECT id, name, qty FROM items").fetchall()}


def fold(root: str) -> dict[int, tuple[str, int | None]]:
    """The table as bronze says it is: each key's last event (by ``seq``) applied."""
    state: dict[int, tuple[str, int | None]] = {}
    for r in bronze(root):
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
    or ``ops`` are done; ``touched`` holds every id it wrote."""

    def __init__(self, dsn: str, seed: int, *, top: int, ops: int, pause_s: float = 0.004) -> None:
        super().__init__(daemon=True)
        self.dsn, self.rng, self.top, self.ops, self.pause_s = dsn, random.Random(seed), top, ops, pause_s
        self.touched: set[int] = set()
        self.stop = threading.Event()
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            with psycopg.connect(self.dsn, autocommit=True) as conn:
                for i in range(self.ops):
                    if self.stop.is_set():
                        return
                    k = self.rng.randint(1, self.top)
                    action = i % 4
                    if action == 3:
                        k = 100_000 + i
                    self.touched.add(k)
                    if action == 0:
                        conn.execute("DELETE FROM items WHERE id = %s", (k,))
                    elif action == 1:
                        with conn.transaction():
                            conn.execute("DELETE FROM items WHERE id = %s", (k,))
                            conn.execute("INSERT INTO items VALUES (%s, 'again', 1)", (k,))
                    elif action == 2:
                        conn.execute("UPDATE items SET qty = qty + 5, name = name || '+' WHERE id = %s", (k,))
                    else:
                        conn.execute("INSERT INTO items VALUES (%s, 'during', 2)", (k,))
                    time.sleep(self.pause_s)
        except BaseException as exc:  # reported by the test
            self.error = exc


def incremental_count(root: str) -> int:
    """How many incremental snapshot rows bronze holds (0 before the table exists)."""
    try:
        return len(incremental_rows(root))
    except Exception:  # delta-rs: no table yet
        return 0
