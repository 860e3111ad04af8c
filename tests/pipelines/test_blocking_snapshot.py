"""Blocking snapshots on PostgreSQL: streaming pauses, the table is read whole (or through the
signal's filter), streaming resumes; bronze holds every event once and silver ends equal to the
source, rows deleted while capture could not see them included (Sail)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections import Counter
from typing import Any

import orjson
import psycopg
import pytest

from pipelines.capture import run_capture
from pipelines.config import PipelineConfig, parse_pipeline
from pipelines.engine import EngineSpec
from pipelines.silver_runner import run_silver
from tests.support.capture_process import CaptureProcess, wait_until
from tests.support.engines import SAIL_ONLY
from tests.support.incremental_pg import (
    Writer,
    bronze,
    fold,
    last_offset,
    pipeline_text,
    setup_items,
    signal,
    source_rows,
)
from tests.support.resnapshot_oracle import check_silver, silver_yaml

pytestmark = [pytest.mark.integration, pytest.mark.postgres, pytest.mark.spark]

SILVER = "silver:\n" + silver_yaml("pg.public.items") + "silver_options: {interval_seconds: 1}\n"
BLOCKING = ("first", "first_in_data_collection", "true", "last_in_data_collection", "last")


def _text(root: str, dsn: str, skipped: str = "none", **options: Any) -> str:
    return pipeline_text(root, dsn, silver=SILVER, **{"skipped.operations": skipped, **options})


def _cfg(root: str, dsn: str, skipped: str = "none") -> PipelineConfig:
    return parse_pipeline(_text(root, dsn, skipped), env={})


def _silver(spark: Any, cfg: PipelineConfig, root: str) -> None:
    for _ in range(30):
        result = run_silver(root=root, engine=EngineSpec(), tables=cfg.silver, options=cfg.silver_options,
                            sources={"pg": "pg"}, once=True, spark=spark)
        assert result.ok, [t.error for t in result.errors]
        if all(t.status == "up_to_date" for t in result.tables):
            return
    raise AssertionError("silver did not catch up in 30 passes")


def _source(dsn: str) -> set[tuple[Any, ...]]:
    return {(k, *v) for k, v in source_rows(dsn).items()}


def blocking_rows(root: str) -> list[dict[str, Any]]:
    """The bronze rows of ``items`` a blocking snapshot wrote (``r`` with a snapshot id), values parsed."""
    out = []
    for r in bronze(root):
        v = orjson.loads(r["value"]) if r["value"] else None
        if v and v["op"] == "r" and "incremental_snapshot_correlation_id" in orjson.loads(r["position"]):
            out.append({**r, "v": v, "p": orjson.loads(r["position"])})
    return out


def _blind_deletes(root: str, dsn: str) -> set[int]:
    """Initial snapshot, then rows deleted while capture skips deletes: bronze never sees them go."""
    blind = _cfg(root, dsn, "d,t")
    run_capture(blind, until_idle=True)
    with psycopg.connect(dsn, autocommit=True) as conn:
        gone = {r[0] for r in conn.execute("DELETE FROM items WHERE id % 7 = 0 RETURNING id").fetchall()}
    run_capture(blind, until_idle=True)
    return gone


@SAIL_ONLY
def test_blocking_snapshot_with_writes_around_it_leaves_silver_equal_to_source(pg_db, tmp_path, spark):
    root = str(tmp_path / "lake")
    setup_items(pg_db, 300)
    gone = _blind_deletes(root, pg_db)
    cfg = _cfg(root, pg_db)
    _silver(spark, cfg, root)  # silver holds the rows deleted unseen
    with psycopg.connect(pg_db, autocommit=True) as conn:  # streamed before the signal
        conn.execute("UPDATE items SET name = name || ' before' WHERE id <= 20")
        conn.execute("INSERT INTO items SELECT g, 'before', 3 FROM generate_series(501, 520) g")
    signal(pg_db, "block-1", "execute-snapshot", {"data-collections": ["public.items"], "type": "blocking"})
    writer = Writer(pg_db, 3, top=300, ops=300, pause_s=0.003)  # during and after
    writer.start()
    run_capture(cfg, until_idle=True)
    writer.join()
    assert writer.error is None, writer.error
    run_capture(cfg, until_idle=True)
    snap = blocking_rows(root)
    assert snap, "no blocking snapshot rows in bronze"
    markers = Counter(r["v"]["source"]["snapshot"] for r in snap)
    assert set(markers) <= set(BLOCKING) and markers["first"] == 1 and markers["last"] == 1, markers
    assert all(r["p"]["incremental_snapshot_last_chunk"] is True for r in snap)
    ids = [r["v"]["after"]["id"] for r in snap]
    assert len(ids) == len(set(ids)) and not (set(ids) & (gone - writer.touched)), "deleted rows read"
    assert set(range(501, 521)) <= set(ids), "rows inserted before the signal not read"
    seqs = [r["seq"] for r in snap]
    assert seqs == list(range(seqs[0], seqs[0] + len(seqs))), "streamed events inside the blocking snapshot"
    assert [r for r in bronze(root) if r["seq"] > seqs[-1] and r["op"] in ("c", "u", "d")], \
        "nothing streamed after the snapshot: the test proves nothing"
    assert "blocking_snapshot_id" not in last_offset(root)
    _silver(spark, cfg, root)
    check_silver(root, _source(pg_db), set(range(1, 301)) | set(range(501, 521)) | writer.touched)


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pipelines.cli", *args], capture_output=True, text=True,
                          env=dict(os.environ), timeout=120)


@SAIL_ONLY
def test_blocking_snapshot_with_a_filter_reads_only_those_rows_and_removes_nothing_else(pg_db, tmp_path, spark):
    root = str(tmp_path / "lake")
    setup_items(pg_db, 120)
    text = _text(root, pg_db)
    path = tmp_path / "p.yaml"
    path.write_text(text)
    cfg = parse_pipeline(text, env={})
    run_capture(cfg, until_idle=True)
    _silver(spark, cfg, root)
    done = _cli("signal", "-c", str(path), "--source", "pg", "execute-snapshot", "--tables", "public.items",
                "--type", "blocking", "--filter", "id > 100", "--id", "cli-b")
    assert done.returncode == 0, done.stderr
    # Debezium's form: a full SELECT
    signal(pg_db, "full-b", "execute-snapshot", {
        "data-collections": ["public.items"], "type": "blocking",
        "additional-conditions": [{"data-collection": "public.items",
                                   "filter": "SELECT * FROM public.items WHERE id <= 5 ORDER BY id DESC"}]})
    run_capture(cfg, until_idle=True)
    by_id = Counter(r["p"]["incremental_snapshot_correlation_id"].split("@")[0] for r in blocking_rows(root))
    assert by_id == {"cli-b": 20, "full-b": 5}, by_id
    assert sorted(r["v"]["after"]["id"] for r in blocking_rows(root)) == [*range(1, 6), *range(101, 121)]
    assert not any(r["p"]["incremental_snapshot_last_chunk"] for r in blocking_rows(root))
    _silver(spark, cfg, root)  # a filtered snapshot is part of the table: silver removes nothing
    check_silver(root, _source(pg_db), set(range(1, 121)))


def _count(root: str) -> int:
    """How many blocking snapshot rows of ``items`` bronze holds (0 before the table exists)."""
    try:
        return len(blocking_rows(root))
    except Exception:  # delta-rs: no table yet
        return 0


def _other(dsn: str) -> dict[int, str]:
    with psycopg.connect(dsn) as conn:
        return dict(conn.execute("SELECT id, v FROM other").fetchall())


def _other_bronze(root: str) -> list[dict[str, Any]]:
    return [orjson.loads(r["value"]) for r in bronze(root, "pg.public.other") if r["value"]]


@SAIL_ONLY
def test_sigkills_during_a_blocking_snapshot_leave_bronze_exactly_once_and_silver_equal(pg_db, tmp_path, spark):
    """Capture is killed twice while the snapshot waits for the lock on its second table: after it
    committed the first table's rows (the restart reads it again while a writer changes it), and
    after the restart read it again."""
    root = str(tmp_path / "lake")
    setup_items(pg_db, 1000)
    with psycopg.connect(pg_db, autocommit=True) as conn:
        conn.execute("CREATE TABLE other (id int PRIMARY KEY, v text)")
        conn.execute("INSERT INTO other SELECT g, 'o' || g FROM generate_series(1, 50) g")
    gone = _blind_deletes(root, pg_db)
    text = pipeline_text(root, pg_db, silver=SILVER, commit_max_records=25)
    config = tmp_path / "pipeline.yaml"
    config.write_text(text)
    signal(pg_db, "k-1", "execute-snapshot", {"data-collections": ["public.items", "public.other"],
                                              "type": "blocking"})
    writer = Writer(pg_db, 11, top=1000, ops=100_000, pause_s=0.01)
    writer.start()
    capture = CaptureProcess(config, tmp_path)
    before = len(bronze(root))
    with psycopg.connect(pg_db) as lock:
        lock.execute("LOCK TABLE other IN ACCESS EXCLUSIVE MODE")  # the snapshot waits for it after items
        for _ in range(2):
            capture.start_planned()
            assert wait_until(lambda: "blocking_snapshot_id" in last_offset(root) and _count(root) > 0, 60), \
                capture.tail()
            assert wait_until(lambda: "public.items: " in capture.stderr.read_text(), 60), capture.tail()
            time.sleep(1.0)  # the rows' commit
            assert "blocking_snapshot_id" in last_offset(root), "the snapshot ended while its table was locked"
            capture.kill_running(" during the blocking snapshot")
    writer.stop.set()
    writer.join()
    assert writer.error is None, writer.error
    capture.run_until_idle()
    assert len(bronze(root)) > before
    assert "blocking_snapshot_id" not in last_offset(root)
    want = source_rows(pg_db)
    got = {k: v for k, v in fold(root).items() if k in want or k not in gone}  # bronze never saw those go
    assert {k: got.get(k) for k in got.keys() | want.keys() if got.get(k) != want.get(k)} == {}, "bronze != source"
    reads = Counter(r["v"]["after"]["id"] for r in blocking_rows(root))
    untouched = set(range(1, 1001)) - writer.touched - gone
    assert {k for k in untouched if reads[k] != 1} == set(), "rows read twice or never"
    other = [v for v in _other_bronze(root) if v["op"] == "r" and v["source"]["snapshot"] != "false"]
    assert Counter(v["after"]["id"] for v in other) == Counter({k: 2 for k in _other(pg_db)}), \
        "other: the initial and the blocking snapshot, once each"
    assert other[-1]["source"]["snapshot"] == "last"
    cfg = parse_pipeline(text, env={})
    _silver(spark, cfg, root)
    check_silver(root, _source(pg_db), set(range(1, 1001)) | writer.touched)


def test_blocking_snapshots_from_the_file_channel_at_an_idle_and_at_a_commit_checkpoint(pg_db, tmp_path):
    """A file signal is acted on at the next checkpoint: an idle keepalive (nothing pending) or a
    transaction's end; either way the changes streamed after the snapshot land after it in bronze, and
    a snapshot paused where the last one paused is written all the same."""
    root = str(tmp_path / "lake")
    setup_items(pg_db, 50)
    file = tmp_path / "signals.jsonl"
    cfg = parse_pipeline(pipeline_text(root, pg_db, **{"signal.enabled.channels": "file",
                                                       "signal.file": str(file)}), env={})
    run_capture(cfg, until_idle=True)

    def send(sig_id: str) -> None:
        with file.open("a") as f:
            f.write(orjson.dumps({"id": sig_id, "type": "execute-snapshot",
                                  "data": {"data-collections": ["public.items"], "type": "blocking"}}).decode() + "\n")

    send("idle-1")
    run_capture(cfg, until_idle=True)  # nothing pending: the first checkpoint is a keepalive
    send("again-1")
    run_capture(cfg, until_idle=True)  # the same position again: a snapshot of its own all the same
    with psycopg.connect(pg_db, autocommit=True) as conn:
        conn.execute("UPDATE items SET qty = 100 WHERE id <= 10")
    send("commit-1")
    run_capture(cfg, until_idle=True)  # the update's commit comes first
    with psycopg.connect(pg_db, autocommit=True) as conn:
        conn.execute("UPDATE items SET qty = 200 WHERE id <= 5")
        conn.execute("INSERT INTO items VALUES (51, 'after', 1)")
    run_capture(cfg, until_idle=True)
    by_id = Counter(r["p"]["incremental_snapshot_correlation_id"].split("@")[0] for r in blocking_rows(root))
    assert by_id == {"idle-1": 50, "again-1": 50, "commit-1": 50}, by_id
    assert fold(root) == source_rows(pg_db)
    assert sum(1 for r in bronze(root) if r["op"] == "u") == 15, "streamed updates dropped as replays"
