"""Blocking snapshots on MariaDB: streaming pauses, the table is read whole (or through the signal's
filter), streaming resumes; bronze holds every event once and silver ends equal to the source, rows
deleted while capture could not see them included (Sail)."""

from __future__ import annotations

import time
from collections import Counter
from typing import Any

import orjson
import pymysql
import pytest

from pipelines.capture import run_capture
from pipelines.config import PipelineConfig, parse_pipeline
from pipelines.engine import EngineSpec
from pipelines.silver_runner import run_silver
from tests.support.capture_process import CaptureProcess, wait_until
from tests.support.engines import SAIL_ONLY
from tests.support.incremental_mysql import (
    Writer,
    bronze,
    execute,
    fold,
    last_offset,
    pipeline_text,
    setup_items,
    signal,
    source_rows,
    topic,
)
from tests.support.resnapshot_oracle import check_silver, silver_yaml

pytestmark = [pytest.mark.integration, pytest.mark.mariadb, pytest.mark.spark]

BLOCKING = ("first", "first_in_data_collection", "true", "last_in_data_collection", "last")


def _text(root: str, db: dict[str, Any], skipped: str = "none", **kw: Any) -> str:
    silver = "silver:\n" + silver_yaml(topic(db)) + "silver_options: {interval_seconds: 1}\n"
    return pipeline_text(root, db, silver=silver, **{"skipped.operations": skipped}, **kw)


def _cfg(root: str, db: dict[str, Any], skipped: str = "none") -> PipelineConfig:
    return parse_pipeline(_text(root, db, skipped), env={})


def _silver(spark: Any, cfg: PipelineConfig, root: str) -> None:
    for _ in range(30):
        result = run_silver(root=root, engine=EngineSpec(), tables=cfg.silver, options=cfg.silver_options,
                            sources={"my": "my"}, once=True, spark=spark)
        assert result.ok, [t.error for t in result.errors]
        if all(t.status == "up_to_date" for t in result.tables):
            return
    raise AssertionError("silver did not catch up in 30 passes")


def _source(db: dict[str, Any]) -> set[tuple[Any, ...]]:
    return {(k, *v) for k, v in source_rows(db).items()}


def blocking_rows(root: str, name: str) -> list[dict[str, Any]]:
    """The bronze rows of a table a blocking snapshot wrote (``r`` with a snapshot id), values parsed."""
    out = []
    for r in bronze(root, name):
        v = orjson.loads(r["value"]) if r["value"] else None
        if v and v["op"] == "r" and "incremental_snapshot_correlation_id" in orjson.loads(r["position"]):
            out.append({**r, "v": v, "p": orjson.loads(r["position"])})
    return out


def _blind_deletes(root: str, db: dict[str, Any]) -> set[int]:
    """Initial snapshot, then rows deleted while capture skips deletes: bronze never sees them go."""
    gone = {k for k in source_rows(db) if k % 7 == 0}
    blind = _cfg(root, db, "d,t")
    run_capture(blind, until_idle=True)
    execute(db, "DELETE FROM items WHERE id % 7 = 0")
    run_capture(blind, until_idle=True)
    return gone


@SAIL_ONLY
def test_blocking_snapshot_with_writes_around_it_leaves_silver_equal_to_source(mariadb_db, tmp_path, spark):
    root, name, db = str(tmp_path / "lake"), topic(mariadb_db), mariadb_db
    setup_items(db, 300)
    gone = _blind_deletes(root, db)
    cfg = _cfg(root, db)
    _silver(spark, cfg, root)  # silver holds the rows deleted unseen
    execute(db, "UPDATE items SET name = CONCAT(name, ' before') WHERE id <= 20",  # streamed before the signal
            "INSERT INTO items SELECT seq, 'before', 3 FROM seq_501_to_520")
    signal(db, "block-1", "execute-snapshot", {"data-collections": [f"{db['database']}.items"], "type": "blocking"})
    writer = Writer(db, 3, top=300, ops=300, pause_s=0.003)  # during and after
    writer.start()
    run_capture(cfg, until_idle=True)
    writer.join()
    assert writer.error is None, writer.error
    run_capture(cfg, until_idle=True)
    snap = blocking_rows(root, name)
    assert snap, "no blocking snapshot rows in bronze"
    markers = Counter(r["v"]["source"]["snapshot"] for r in snap)
    assert set(markers) <= set(BLOCKING) and markers["first"] == 1 and markers["last"] == 1, markers
    ids = [r["v"]["after"]["id"] for r in snap]
    assert len(ids) == len(set(ids)) and not (set(ids) & (gone - writer.touched)), "deleted rows read"
    assert set(range(501, 521)) <= set(ids), "rows inserted before the signal not read"
    seqs = [r["seq"] for r in snap]
    assert seqs == list(range(seqs[0], seqs[0] + len(seqs))), "streamed events inside the blocking snapshot"
    assert [r for r in bronze(root, name) if r["seq"] > seqs[-1] and r["op"] in ("c", "u", "d")], \
        "nothing streamed after the snapshot: the test proves nothing"
    assert "blocking_snapshot_id" not in last_offset(root)
    _silver(spark, cfg, root)
    check_silver(root, _source(db), set(range(1, 301)) | set(range(501, 521)) | writer.touched)


@SAIL_ONLY
def test_blocking_snapshot_with_a_full_select_reads_only_those_rows(mariadb_db, tmp_path, spark):
    root, name, db = str(tmp_path / "lake"), topic(mariadb_db), mariadb_db
    setup_items(db, 120)
    cfg = _cfg(root, db)
    run_capture(cfg, until_idle=True)
    _silver(spark, cfg, root)
    table = f"{db['database']}.items"
    signal(db, "full-b", "execute-snapshot", {
        "data-collections": [table], "type": "blocking",
        "additional-conditions": [{"data-collection": table,
                                   "filter": f"SELECT * FROM {table} WHERE id > 110 ORDER BY id DESC"}]})
    signal(db, "bad-b", "execute-snapshot", {  # a SELECT the server refuses: logged, the table skipped
        "data-collections": [table], "type": "blocking",
        "additional-conditions": [{"data-collection": table, "filter": "SELECT * FROM no_such_table"}]})
    run_capture(cfg, until_idle=True)
    snap = blocking_rows(root, name)
    assert sorted(r["v"]["after"]["id"] for r in snap) == list(range(111, 121))
    assert {r["p"]["incremental_snapshot_correlation_id"].split("@")[0] for r in snap} == {"full-b"}
    assert not any(r["p"]["incremental_snapshot_last_chunk"] for r in snap)
    execute(db, "UPDATE items SET qty = 99 WHERE id = 3")
    run_capture(cfg, until_idle=True)  # streaming went on after the refused SELECT
    _silver(spark, cfg, root)  # a filtered snapshot is part of the table: silver removes nothing
    check_silver(root, _source(db), set(range(1, 121)))


def _count(root: str, name: str) -> int:
    try:
        return len(blocking_rows(root, name))
    except Exception:  # delta-rs: no table yet
        return 0


@SAIL_ONLY
def test_sigkills_during_a_blocking_snapshot_leave_bronze_exactly_once_and_silver_equal(mariadb_db, tmp_path,
                                                                                         spark):
    """Capture is killed twice while the snapshot waits for the lock on its second table: after it
    committed the first table's rows (the restart reads it again while a writer changes it), and
    after the restart read it again."""
    root, name, db = str(tmp_path / "lake"), topic(mariadb_db), mariadb_db
    setup_items(db, 1000)
    execute(db, "CREATE TABLE other (id INT PRIMARY KEY, v VARCHAR(20))",
            "INSERT INTO other SELECT seq, CONCAT('o', seq) FROM seq_1_to_50")
    gone = _blind_deletes(root, db)
    text = _text(root, db, commit_max_records=25, server_id=5473)
    config = tmp_path / "pipeline.yaml"
    config.write_text(text)
    signal(db, "k-1", "execute-snapshot", {"data-collections": [f"{db['database']}.items", f"{db['database']}.other"],
                                           "type": "blocking"})
    writer = Writer(db, 11, top=1000, ops=100_000, pause_s=0.01)
    writer.start()
    capture = CaptureProcess(config, tmp_path)
    lock = pymysql.connect(**db, autocommit=True)
    try:
        with lock.cursor() as cur:
            cur.execute("LOCK TABLES other WRITE")  # the snapshot waits for it after items
        for _ in range(2):
            capture.start_planned()
            assert wait_until(lambda: "blocking_snapshot_id" in last_offset(root) and _count(root, name) > 0, 60), \
                capture.tail()
            assert wait_until(lambda: ".items: " in capture.stderr.read_text(), 60), capture.tail()
            time.sleep(1.0)  # the rows' commit
            assert "blocking_snapshot_id" in last_offset(root), "the snapshot ended while its table was locked"
            capture.kill_running(" during the blocking snapshot")
    finally:
        lock.close()
    writer.stop.set()
    writer.join()
    assert writer.error is None, writer.error
    capture.run_until_idle()
    assert "blocking_snapshot_id" not in last_offset(root)
    want = source_rows(db)
    got = {k: v for k, v in fold(root, name).items() if k in want or k not in gone}  # bronze never saw those go
    assert {k: got.get(k) for k in got.keys() | want.keys() if got.get(k) != want.get(k)} == {}, "bronze != source"
    reads = Counter(r["v"]["after"]["id"] for r in blocking_rows(root, name))
    untouched = set(range(1, 1001)) - writer.touched - gone
    assert {k for k in untouched if reads[k] != 1} == set(), "rows read twice or never"
    other = [orjson.loads(r["value"]) for r in bronze(root, topic(db, "other")) if r["value"]]
    other = [v for v in other if v["op"] == "r"]
    assert Counter(v["after"]["id"] for v in other) == Counter({k: 2 for k in range(1, 51)}), \
        "other: the initial and the blocking snapshot, once each"
    assert other[-1]["source"]["snapshot"] == "last"
    _silver(spark, parse_pipeline(text, env={}), root)
    check_silver(root, _source(db), set(range(1, 1001)) | writer.touched)


def test_blocking_snapshots_from_the_file_channel_at_an_idle_and_at_a_commit_checkpoint(mariadb_db, tmp_path):
    """A file signal is acted on at the next checkpoint: an idle heartbeat (nothing pending) or a
    transaction's end; either way the changes streamed after the snapshot land after it in bronze, and
    a snapshot paused where the last one paused is written all the same."""
    root, name, db = str(tmp_path / "lake"), topic(mariadb_db), mariadb_db
    setup_items(db, 50)
    file = tmp_path / "signals.jsonl"
    cfg = parse_pipeline(pipeline_text(root, db, **{"signal.enabled.channels": "file", "signal.file": str(file)}),
                         env={})
    run_capture(cfg, until_idle=True)

    def send(sig_id: str) -> None:
        with file.open("a") as f:
            f.write(orjson.dumps({"id": sig_id, "type": "execute-snapshot", "data": {
                "data-collections": [f"{db['database']}.items"], "type": "blocking"}}).decode() + "\n")

    send("idle-1")
    run_capture(cfg, until_idle=True)  # nothing pending: the first checkpoint is an idle one
    send("again-1")
    run_capture(cfg, until_idle=True)  # the same position again: a snapshot of its own all the same
    execute(db, "UPDATE items SET qty = 100 WHERE id <= 10")
    send("commit-1")
    run_capture(cfg, until_idle=True)  # the update's commit comes first
    execute(db, "UPDATE items SET qty = 200 WHERE id <= 5", "INSERT INTO items VALUES (51, 'after', 1)")
    run_capture(cfg, until_idle=True)
    by_id = Counter(r["p"]["incremental_snapshot_correlation_id"].split("@")[0] for r in blocking_rows(root, name))
    assert by_id == {"idle-1": 50, "again-1": 50, "commit-1": 50}, by_id
    assert fold(root, name) == source_rows(db)
    assert sum(1 for r in bronze(root, name) if r["op"] == "u") == 15, "streamed updates dropped as replays"
