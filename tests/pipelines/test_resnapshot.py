"""Re-snapshots are authoritative in silver (PostgreSQL): rows deleted while capture could not see
them leave silver once the table is snapshotted again (``snapshot.mode: always``, a lost slot
with ``when_needed``, ``reset``), with writes during the re-snapshot, for SCD1, soft deletes and
SCD2. The oracle reads silver with delta-rs and the source with psycopg."""

from __future__ import annotations

import random
import threading
import time
from typing import Any

import psycopg
import pytest
from deltalake import DeltaTable

from pipelines.capture import run_capture
from pipelines.config import PipelineConfig, parse_pipeline
from pipelines.engine import EngineSpec
from pipelines.operations import reset
from pipelines.rebuild import rebuild
from pipelines.silver_runner import TableRunResult, run_silver
from tests.support.engines import SAIL_ONLY
from tests.support.resnapshot_oracle import check_silver, never_closed_as_deleted, silver_yaml

pytestmark = [pytest.mark.integration, pytest.mark.postgres, pytest.mark.spark]

ROWS = 1000


SLOW_SNAPSHOT_SELECT = "SELECT i.* FROM public.items i CROSS JOIN (SELECT pg_sleep(2)) AS pause"
"""The snapshot's SELECT of ``items`` when it must last: it waits 2 s inside the snapshot's
transaction (after its consistent point) before the first row."""


def _config(root: str, dsn: str, mode: str, *, max_rows: int | None = None, slow: bool = False) -> PipelineConfig:
    parts = dict(p.split("=", 1) for p in dsn.split())
    cap = f", max_bronze_rows_per_run: {max_rows}" if max_rows else ""
    pause = (f", snapshot.select.statement.overrides: public.items, "
             f"snapshot.select.statement.overrides.public.items: \"{SLOW_SNAPSHOT_SELECT}\"") if slow else ""
    text = (f"pipeline: resnap\nlakehouse: {{root: \"{root}\"}}\nsources:\n  - name: pg\n    connector: postgres\n"
            f"    connection: {{host: 127.0.0.1, port: {parts['port']}, database: {parts['dbname']}, user: postgres}}\n"
            f"    options: {{slot.name: {_slot(dsn)}, snapshot.mode: {mode}{pause}}}\n"
            "    capture: {commit_max_records: 250}\n"
            "silver:\n" + silver_yaml("pg.public.items") +
            f"silver_options: {{interval_seconds: 1{cap}}}\n")
    return parse_pipeline(text, env={})


def _slot(dsn: str) -> str:
    return "rs_" + dict(p.split("=", 1) for p in dsn.split())["dbname"][-40:]


def _setup(dsn: str, rows: int = ROWS) -> None:
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("CREATE TABLE items (id int PRIMARY KEY, name text NOT NULL, qty int)")
        conn.execute("INSERT INTO items SELECT g, 'item ' || g, mod(g, 17) FROM generate_series(1, %s) g", (rows,))


def _silver(spark: Any, cfg: PipelineConfig, root: str) -> list[TableRunResult]:
    """Silver passes until every table is up to date; returns the tables' applied increments."""
    applied: list[TableRunResult] = []
    for _ in range(30):
        result = run_silver(root=root, engine=EngineSpec(), tables=cfg.silver, options=cfg.silver_options,
                            sources={"pg": "pg"}, once=True, spark=spark)
        assert result.ok, [t.error for t in result.errors]
        applied += [t for t in result.tables if t.status == "applied"]
        if all(t.status == "up_to_date" for t in result.tables):
            return applied
    raise AssertionError("silver did not catch up in 30 passes")


def _source(dsn: str) -> set[tuple[Any, ...]]:
    with psycopg.connect(dsn) as conn:
        return {tuple(r) for r in conn.execute("SELECT id, name, qty FROM items").fetchall()}


def _check(root: str, dsn: str, ever: set[int]) -> None:
    check_silver(root, _source(dsn), ever)


def _offline_changes(dsn: str, seed: int) -> set[int]:
    """While capture is stopped: delete 200 rows, update 100 others, insert 50; returns the new ids."""
    rng = random.Random(seed)
    with psycopg.connect(dsn, autocommit=True) as conn:
        ids = [r[0] for r in conn.execute("SELECT id FROM items").fetchall()]
        gone = rng.sample(ids, 200)
        conn.execute("DELETE FROM items WHERE id = ANY(%s)", (gone,))
        kept = rng.sample(sorted(set(ids) - set(gone)), 100)
        conn.execute("UPDATE items SET qty = qty + 1000, name = name || ' upd' WHERE id = ANY(%s)", (kept,))
        top = max(ids)
        new = list(range(top + 1, top + 51))
        conn.execute("INSERT INTO items SELECT g, 'new ' || g, 7 FROM unnest(%s::int[]) g", (new,))
    return set(new)


def _drop_slot(dsn: str) -> None:
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("SELECT pg_drop_replication_slot(%s)", (_slot(dsn),))


def _ever(dsn: str) -> set[int]:
    return {r[0] for r in _source(dsn)}


@SAIL_ONLY
def test_snapshot_mode_always_resnapshot_removes_rows_deleted_while_stopped(pg_db, tmp_path, spark):
    root = str(tmp_path / "lake")
    _setup(pg_db)
    cfg = _config(root, pg_db, "always")
    ever = _ever(pg_db)
    run_capture(cfg, until_idle=True)
    _silver(spark, cfg, root)
    _check(root, pg_db, ever)
    ever |= _offline_changes(pg_db, 1)
    run_capture(cfg, until_idle=True)  # always: a new snapshot
    applied = _silver(spark, cfg, root)
    _check(root, pg_db, ever)
    assert sorted(t.table for t in applied if t.resnapshot_seq is not None) == ["items", "items_hist", "items_soft"]
    for table in ("items", "items_soft", "items_hist"):  # one increment holding both snapshots
        assert rebuild(cfg, table, yes=True, say=lambda _line: None, spark=spark)
    _check(root, pg_db, ever)
    _silver(spark, cfg, root)  # a pass with nothing new changes nothing
    _check(root, pg_db, ever)


@SAIL_ONLY
def test_lost_slot_when_needed_resnapshot_removes_rows_deleted_meanwhile(pg_db, tmp_path, spark):
    root = str(tmp_path / "lake")
    _setup(pg_db)
    cfg = _config(root, pg_db, "when_needed")
    ever = _ever(pg_db)
    run_capture(cfg, until_idle=True)
    with psycopg.connect(pg_db, autocommit=True) as conn:  # streamed changes before the slot is lost
        conn.execute("DELETE FROM items WHERE id <= 10")
        conn.execute("UPDATE items SET qty = -1 WHERE id BETWEEN 11 AND 20")
    run_capture(cfg, until_idle=True)
    _silver(spark, cfg, root)
    _drop_slot(pg_db)
    ever |= _offline_changes(pg_db, 2)
    run_capture(cfg, until_idle=True)
    _silver(spark, cfg, root)
    _check(root, pg_db, ever)


@SAIL_ONLY
def test_reset_then_capture_split_over_increments_removes_deleted_rows(pg_db, tmp_path, spark):
    """The re-snapshot spans several silver increments (max_bronze_rows_per_run): rows go only at its end."""
    root = str(tmp_path / "lake")
    _setup(pg_db, 3000)
    cfg = _config(root, pg_db, "initial", max_rows=1000)
    ever = _ever(pg_db)
    run_capture(cfg, until_idle=True)
    _silver(spark, cfg, root)
    ever |= _offline_changes(pg_db, 3)
    reset(cfg, "pg", to=None, yes=True, say=lambda _line: None)
    untouched = {r[0] for r in _source(pg_db)}  # never deleted: no version of them may close as deleted
    run_capture(cfg, until_idle=True)
    applied = _silver(spark, cfg, root)
    # the re-snapshot is split: its first and last rows are in different increments
    assert len([t for t in applied if t.table == "items"]) >= 2
    _check(root, pg_db, ever)
    assert not never_closed_as_deleted(root, untouched)


class _Writer(threading.Thread):
    """Deletes, re-inserts and updates rows while the re-snapshot runs: it starts once the
    snapshot's SELECT of ``items`` is waiting in `SLOW_SNAPSHOT_SELECT`'s pause, so its writes
    come after the snapshot's consistent point and before the snapshot can complete."""

    def __init__(self, dsn: str, root: str, seed: int) -> None:
        super().__init__(daemon=True)
        self.dsn = dsn
        self.rng = random.Random(seed)
        self.done = threading.Event()
        self.first_write: float | None = None
        self.new: set[int] = set()
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            with psycopg.connect(self.dsn, autocommit=True) as conn:
                deadline = time.monotonic() + 60
                while not conn.execute("SELECT 1 FROM pg_stat_activity WHERE state = 'active' AND query LIKE "
                                       "'%pg_sleep(2)) AS pause%' AND pid <> pg_backend_pid()").fetchall():
                    if time.monotonic() > deadline:
                        raise AssertionError("the re-snapshot's SELECT of items did not start in 60 s")
                    time.sleep(0.01)
                for i in range(120):
                    if self.first_write is None:
                        self.first_write = time.time()
                    ids = [r[0] for r in conn.execute("SELECT id FROM items ORDER BY id DESC LIMIT 300")]
                    k = self.rng.choice(ids)  # high ids: the snapshot reads them last
                    action = i % 4
                    if action == 0:
                        conn.execute("DELETE FROM items WHERE id = %s", (k,))
                    elif action == 1:  # delete and re-insert the same key
                        with conn.transaction():
                            conn.execute("DELETE FROM items WHERE id = %s", (k,))
                            conn.execute("INSERT INTO items VALUES (%s, 'again', 1)", (k,))
                    elif action == 2:
                        conn.execute("UPDATE items SET qty = qty + 5 WHERE id = %s", (k,))
                    else:
                        n = 100_000 + i
                        conn.execute("INSERT INTO items VALUES (%s, 'during', 2)", (n,))
                        self.new.add(n)
        except BaseException as exc:  # reported by the test
            self.error = exc
        finally:
            self.done.set()


def test_writes_during_resnapshot(pg_db, tmp_path, spark):
    root = str(tmp_path / "lake")
    _setup(pg_db, 20000)
    cfg = _config(root, pg_db, "initial", slow=True)
    ever = _ever(pg_db)
    run_capture(cfg, until_idle=True)
    _silver(spark, cfg, root)
    ever |= _offline_changes(pg_db, 4)
    reset(cfg, "pg", to=None, yes=True, say=lambda _line: None)
    reset_batch = max(r["batch"] for r in DeltaTable(f"{root}/bronze/_cdc/pg/offsets").to_pyarrow_table().to_pylist())
    writer = _Writer(pg_db, root, 5)
    writer.start()
    run_capture(cfg, until_idle=True)  # the re-snapshot, then what the writer streamed
    writer.done.wait(120)
    assert writer.error is None and writer.first_write is not None
    # the writer began before the re-snapshot completed (its last batch is the newest completed one)
    offsets = DeltaTable(f"{root}/bronze/_cdc/pg/offsets").to_pyarrow_table().to_pylist()
    completed = min(r["committed_at"] for r in offsets if r["snapshot_completed"] and r["batch"] > reset_batch)
    assert writer.first_write < completed.timestamp(), "the writes did not overlap the re-snapshot"
    run_capture(cfg, until_idle=True)  # the rest of the writer's changes
    ever |= writer.new
    _silver(spark, cfg, root)
    _check(root, pg_db, ever)
