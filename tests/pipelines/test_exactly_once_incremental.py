"""Exactly-once into bronze when capture is SIGKILLed during an incremental snapshot's chunks
(between a chunk's watermarks, while its rows are emitted, between commits), with a writer
changing the rows being snapshotted. The oracle folds bronze's events per key (in ``seq`` order)
and compares with the source; rows the writer never touched are read exactly once."""

from __future__ import annotations

import random
import time
from collections import Counter

import pytest

from pipelines.capture import run_capture
from pipelines.config import parse_pipeline
from tests.support.capture_process import CaptureProcess, wait_until
from tests.support.incremental_pg import (
    Writer,
    fold,
    incremental_count,
    incremental_rows,
    last_offset,
    pipeline_text,
    setup_items,
    signal,
    source_rows,
)

pytestmark = [pytest.mark.integration, pytest.mark.postgres]


def test_sigkills_during_incremental_snapshot_chunks_leave_bronze_exactly_once(pg_db, tmp_path):
    root = str(tmp_path / "lake")
    setup_items(pg_db, 1000)
    text = pipeline_text(root, pg_db, commit_max_records=25, **{"snapshot.mode": "no_data",
                                                                 "incremental.snapshot.chunk.size": "20"})
    config = tmp_path / "pipeline.yaml"
    config.write_text(text)
    run_capture(parse_pipeline(text, env={}), until_idle=True)
    signal(pg_db, "k-1", "execute-snapshot", {"data-collections": ["public.items"]})
    # 20 changes a second: with 25-record batches a loaded CI machine commits about 60 records a
    # second, and a writer at 50 a second kept capture from ever reaching a chunk's close watermark
    writer = Writer(pg_db, 11, top=1000, ops=100_000, pause_s=0.05)
    writer.start()
    capture = CaptureProcess(config, tmp_path)
    rng = random.Random(7)
    killed_mid = 0
    for _ in range(5):
        seen = incremental_count(root)
        capture.start_planned()
        target = seen + rng.randint(1, 60)
        assert wait_until(lambda: incremental_count(root) >= target, 120, 0.02), capture.tail()  # noqa: B023
        time.sleep(rng.uniform(0.0, 0.2))  # somewhere in the next chunk: between watermarks, rows, commits
        capture.kill_running(" during the incremental snapshot")
        killed_mid += "incremental_snapshot_collections" in last_offset(root)
    writer.stop.set()
    writer.join()
    assert writer.error is None, writer.error
    capture.run_until_idle()
    assert killed_mid >= 2, "the kills missed the snapshot: the test proves nothing"
    assert "incremental_snapshot_collections" not in last_offset(root)
    got, want = fold(root), source_rows(pg_db)
    assert {k: got.get(k) for k in got.keys() | want.keys() if got.get(k) != want.get(k)} == {}, "bronze != source"
    reads = Counter(r["v"]["after"]["id"] for r in incremental_rows(root))
    untouched = set(range(1, 1001)) - writer.touched
    assert {k for k in untouched if reads[k] != 1} == set(), "rows read twice or never"
