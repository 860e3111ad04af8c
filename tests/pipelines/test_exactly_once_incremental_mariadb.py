"""Exactly-once when capture is SIGKILLed during a MariaDB incremental snapshot's chunks (between a
chunk's watermarks, while its rows are emitted, between commits), with a writer changing the rows
being snapshotted: bronze folds to the source, rows the writer never touched are read exactly once,
and silver built from it equals the source (Sail)."""

from __future__ import annotations

import random
import time
from collections import Counter
from typing import Any

import pymysql
import pytest

from pipelines.capture import run_capture
from pipelines.config import parse_pipeline
from pipelines.engine import EngineSpec
from pipelines.silver_runner import run_silver
from tests.support.capture_process import CaptureProcess, wait_until
from tests.support.engines import SAIL_ONLY
from tests.support.incremental_mysql import (
    Writer,
    execute,
    fold,
    incremental_count,
    incremental_rows,
    last_offset,
    pipeline_text,
    setup_items,
    signal,
    source_rows,
    topic,
)
from tests.support.resnapshot_oracle import check_silver, silver_yaml

pytestmark = [pytest.mark.integration, pytest.mark.mariadb, pytest.mark.spark]


def _source(db: dict[str, Any]) -> set[tuple[Any, ...]]:
    conn = pymysql.connect(**db)
    try:
        with conn.cursor() as cur:
            cur.execute("SELECT id, name, qty FROM items")
            return {tuple(r) for r in cur.fetchall()}
    finally:
        conn.close()


@SAIL_ONLY
def test_sigkills_during_incremental_snapshot_chunks_lose_and_duplicate_nothing(mariadb_db, tmp_path, spark):
    root, name = str(tmp_path / "lake"), topic(mariadb_db)
    setup_items(mariadb_db, 600)
    silver = "silver:\n" + silver_yaml(name) + "silver_options: {interval_seconds: 1}\n"
    text = pipeline_text(root, mariadb_db, silver=silver, commit_max_records=25, server_id=5472,
                         **{"incremental.snapshot.chunk.size": "10"})
    config = tmp_path / "pipeline.yaml"
    config.write_text(text)
    cfg = parse_pipeline(text, env={})
    run_capture(cfg, until_idle=True)
    # each chunk takes 30 ms at least, so the kills land mid-snapshot
    execute(mariadb_db, "CREATE TRIGGER slow BEFORE INSERT ON dbz_signal FOR EACH ROW "
                        "IF NEW.type = 'snapshot-window-open' THEN DO SLEEP(0.03); END IF")
    signal(mariadb_db, "k-1", "execute-snapshot", {"data-collections": [f"{mariadb_db['database']}.items"]})
    writer = Writer(mariadb_db, 11, top=600, ops=100_000, pause_s=0.02)
    writer.start()
    capture = CaptureProcess(config, tmp_path)
    rng = random.Random(7)
    killed_mid = 0
    for _ in range(4):
        seen = incremental_count(root, name)
        capture.start_planned()
        target = seen + rng.randint(1, 30)
        assert wait_until(lambda: incremental_count(root, name) >= target, 120, 0.02), capture.tail()  # noqa: B023
        time.sleep(rng.uniform(0.0, 0.1))  # somewhere in the next chunk: between watermarks, rows, commits
        capture.kill_running(" during the incremental snapshot")
        if "incremental_snapshot_collections" not in last_offset(root):
            break  # the snapshot ended before the kill
        killed_mid += 1
    writer.stop.set()
    writer.join()
    assert writer.error is None, writer.error
    capture.run_until_idle()
    assert killed_mid >= 2, "the kills missed the snapshot: the test proves nothing"
    assert "incremental_snapshot_collections" not in last_offset(root)
    got, want = fold(root, name), source_rows(mariadb_db)
    assert {k: got.get(k) for k in got.keys() | want.keys() if got.get(k) != want.get(k)} == {}, "bronze != source"
    reads = Counter(r["v"]["after"]["id"] for r in incremental_rows(root, name))
    untouched = set(range(1, 601)) - writer.touched
    assert {k for k in untouched if reads[k] != 1} == set(), "rows read twice or never"
    for _ in range(30):
        result = run_silver(root=root, engine=EngineSpec(), tables=cfg.silver, options=cfg.silver_options,
                            sources={"my": "my"}, once=True, spark=spark)
        assert result.ok, [t.error for t in result.errors]
        if all(t.status == "up_to_date" for t in result.tables):
            break
    else:
        raise AssertionError(f"silver did not catch up in 30 passes: {result.tables}")
    check_silver(root, _source(mariadb_db), set(range(1, 601)) | writer.new)
