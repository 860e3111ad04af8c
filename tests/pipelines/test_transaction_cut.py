"""``silver_options.consistency: {<source>: transaction}`` never lets a join see half a source
transaction, on either connector, while capture runs.

Each source transaction writes the same transaction number into ``t1`` and ``t2``. Capture runs
with bronze batches much smaller than a transaction, so batches end inside transactions; it is
held after each batch commit that leaves bronze torn (``t1`` and ``t2`` holding different
transactions: read from the bronze rows themselves), and ``silver --once`` runs there. After
every silver run both silver tables must hold the same transactions, each complete.
"""

from __future__ import annotations

import json
import threading
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from deltalake import DeltaTable
from deltalake.exceptions import TableNotFoundError

from bronze.schema import topic_path
from bronze.writer import BronzeWriter
from pipelines.capture import run_capture
from pipelines.config import PipelineConfig, parse_pipeline
from pipelines.engine import EngineSpec
from pipelines.silver_runner import run_silver
from tests.support.mariadb_pipeline import mariadb_pipeline_text
from tests.support.pipeline_yaml import pipeline_text

pytestmark = [pytest.mark.integration, pytest.mark.spark]

TRANSACTIONS = 3
ROWS = 600
"""Rows each transaction writes to each table."""
BATCH = 500
"""``commit_max_records``: a transaction spans several bronze batches."""
SILVER_RUNS = {"sail": 5, "spark": 2}
"""At most this many silver runs while capture is held, per engine (a Sail run costs about a
second, a classic Spark run several; two are enough to see a complete transaction applied)."""
WAIT_S = 180.0


def _silver_yaml(source: str, prefix: str) -> str:
    return (f"silver:\n  - {{table: t1, source: {prefix}.t1}}\n  - {{table: t2, source: {prefix}.t2}}\n"
            f"silver_options: {{consistency: {{{source}: transaction}}}}\n")


def _bronze_transactions(root: str, topic: str) -> Counter[int]:
    """Rows per transaction number in a bronze table, read from the rows' Debezium values."""
    try:
        table = DeltaTable(topic_path(root, topic))
    except TableNotFoundError:
        return Counter()
    values = table.to_pyarrow_table(columns=["value", "op"]).to_pylist()
    return Counter(int(json.loads(r["value"])["after"]["tx"]) for r in values if r["op"] == "c")


def _silver_transactions(spark: Any, root: str, table: str) -> Counter[int]:
    path = Path(root) / "silver" / table
    if not any((path / "_delta_log").glob("*.json")):
        return Counter()  # not created yet
    rows = spark.read.format("delta").load(str(path)).groupBy("tx").count().collect()
    return Counter({int(r["tx"]): int(r["count"]) for r in rows})


def _held_capture(monkeypatch: pytest.MonkeyPatch, cfg: PipelineConfig, root: str, topics: tuple[str, str],
                  spark: Any, runs: int) -> list[tuple[Counter[int], Counter[int]]]:
    """Capture with a silver run at each torn bronze batch (up to `SILVER_RUNS`); returns what silver held."""
    committed, resume = threading.Semaphore(0), threading.Semaphore(0)
    original = BronzeWriter.commit

    def held_commit(self: BronzeWriter, *args: Any, **kwargs: Any) -> Any:
        result = original(self, *args, **kwargs)
        committed.release()
        if not resume.acquire(timeout=WAIT_S):
            raise TimeoutError("the test did not resume capture")
        return result

    monkeypatch.setattr(BronzeWriter, "commit", held_commit)
    failure: list[BaseException] = []

    def capture() -> None:
        try:
            run_capture(cfg, until_idle=True)
        except BaseException as exc:
            failure.append(exc)
        finally:
            committed.release()  # wakes the loop below at the end

    thread = threading.Thread(target=capture, name="held-capture")
    thread.start()
    seen: list[tuple[Counter[int], Counter[int]]] = []
    torn_batches = 0
    try:
        while True:
            assert committed.acquire(timeout=WAIT_S), "capture made no progress"
            if not thread.is_alive() or failure:
                break
            b1, b2 = _bronze_transactions(root, topics[0]), _bronze_transactions(root, topics[1])
            if b1 != b2:
                torn_batches += 1
                if len(seen) < runs:
                    seen.append(_silver_pass(spark, cfg, root))
            resume.release()
    finally:
        for _ in range(64):
            resume.release()
        thread.join(WAIT_S)
    assert not failure, failure
    assert not thread.is_alive()
    assert torn_batches >= TRANSACTIONS, "bronze batches did not end inside transactions: the test proves nothing"
    seen.append(_silver_pass(spark, cfg, root))
    return seen


def _silver_pass(spark: Any, cfg: PipelineConfig, root: str) -> tuple[Counter[int], Counter[int]]:
    result = run_silver(root=root, engine=EngineSpec(), tables=cfg.silver, options=cfg.silver_options,
                        sources={cfg.sources[0].name: cfg.sources[0].name}, once=True, spark=spark)
    assert result.ok, result.errors
    t1, t2 = _silver_transactions(spark, root, "t1"), _silver_transactions(spark, root, "t2")
    whole = Counter({tx: ROWS for tx in t1})
    assert t1 == t2 == whole, f"silver holds part of a source transaction: t1 {dict(t1)}, t2 {dict(t2)}"
    return t1, t2


def _check(seen: list[tuple[Counter[int], Counter[int]]]) -> None:
    every = Counter({tx: ROWS for tx in range(1, TRANSACTIONS + 1)})
    assert seen[-1] == (every, every)
    assert any(0 < len(t1) < TRANSACTIONS for t1, _ in seen[:-1]), \
        f"no silver run while capture was held applied complete transactions: {seen}"


@pytest.mark.parametrize("engine", ["sail", "spark"], indirect=True)
def test_postgres_transaction_cut_never_shows_half_a_transaction(pg_db, tmp_path, spark, engine, monkeypatch):
    import psycopg

    root = str(tmp_path / "lake")
    text = pipeline_text(root, pg_db, capture={"commit_max_records": BATCH}) + _silver_yaml("pg", "pg.public")
    cfg = parse_pipeline(text, env={})
    with psycopg.connect(pg_db, autocommit=True) as conn:
        for t in ("t1", "t2"):
            conn.execute(f"CREATE TABLE {t} (id int PRIMARY KEY, tx int NOT NULL, pad text)")
    run_capture(cfg, until_idle=True)  # the (empty) snapshot: what follows streams
    with psycopg.connect(pg_db) as conn:
        _workload(conn.execute, conn.commit)
    _check(_held_capture(monkeypatch, cfg, root, ("pg.public.t1", "pg.public.t2"), spark, SILVER_RUNS[engine]))


@pytest.mark.mariadb
@pytest.mark.parametrize("engine", ["sail"], indirect=True)
def test_mariadb_transaction_cut_never_shows_half_a_transaction(mariadb_db, tmp_path, spark, monkeypatch):
    import pymysql

    root, name = str(tmp_path / "lake"), str(mariadb_db["database"])
    text = (mariadb_pipeline_text(root, mariadb_db, server_id=6301, capture={"commit_max_records": BATCH})
            + _silver_yaml("my", f"my.{name}"))
    cfg = parse_pipeline(text, env={})
    conn = pymysql.connect(**mariadb_db)
    try:
        with conn.cursor() as cur:
            for t in ("t1", "t2"):
                cur.execute(f"CREATE TABLE {t} (id int PRIMARY KEY, tx int NOT NULL, pad text)")
        conn.commit()
        run_capture(cfg, until_idle=True)
        with conn.cursor() as cur:
            _workload(cur.execute, conn.commit)
    finally:
        conn.close()
    _check(_held_capture(monkeypatch, cfg, root, (f"my.{name}.t1", f"my.{name}.t2"), spark, SILVER_RUNS["sail"]))


def _workload(execute: Callable[[str], object], commit: Callable[[], None]) -> None:
    """`TRANSACTIONS` transactions, each inserting `ROWS` rows into t1 then t2 with its number."""
    for tx in range(1, TRANSACTIONS + 1):
        for t in ("t1", "t2"):
            rows = ", ".join(f"({tx * 10_000 + i}, {tx}, 'row {i} of {tx}')" for i in range(ROWS))
            execute(f"INSERT INTO {t} (id, tx, pad) VALUES {rows}")
        commit()
