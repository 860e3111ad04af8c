"""A table's snapshot boundaries from the offsets table and its ``r`` rows per batch (pure functions)."""

from __future__ import annotations

import shutil
from pathlib import Path

import orjson
import pytest

from cdc_sources.spi import commit_mark
from pipelines.engine import EngineSpec
from pipelines.silver_runner import run_silver
from silver.declarations import SilverOptions, SilverTable
from silver.resnapshot import BatchSpan, TableSnapshot, _commit_mark, snapshot_windows, table_snapshot
from tests.silver.bronze_builder import BronzeBuilder, int32, string
from tests.silver.conftest import rows
from tests.silver.test_crash_safety import _arm
from tests.support.engines import SAIL_ONLY


def test_windows_end_at_completed_batches_and_skip_a_running_snapshot():
    # initial snapshot in batches 1-3, streaming 4-5, reset (6), re-snapshot 7-8, a new one running at 9-10
    offsets = [(1, False), (2, False), (3, True), (4, True), (5, True), (6, False), (7, False), (8, True),
               (9, False), (10, False)]
    assert snapshot_windows(list(reversed(offsets))) == [(0, 3), (3, 4), (4, 5), (5, 8)]


def test_the_newest_snapshot_ending_in_the_increment_wins():
    windows = [(0, 3), (3, 4), (4, 5), (5, 8)]
    spans = [BatchSpan(1, 1, 250), BatchSpan(3, 251, 300), BatchSpan(7, 420, 600), BatchSpan(8, 601, 700)]
    assert table_snapshot(spans, windows, 301, 800) == TableSnapshot(420, 700)
    assert table_snapshot(spans, windows, 1, 800) == TableSnapshot(420, 700)
    assert table_snapshot(spans, windows, 1, 650) == TableSnapshot(1, 300)  # the re-snapshot has not ended yet
    assert table_snapshot(spans, windows, 301, 650) is None


def test_two_snapshots_back_to_back_are_told_apart_by_the_completed_batch_between():
    # snapshot.mode always, restarted with no change in between: one-batch snapshots at 2 and 3
    windows = snapshot_windows([(1, True), (2, True), (3, True)])
    spans = [BatchSpan(1, 1, 10), BatchSpan(2, 11, 19), BatchSpan(3, 20, 27)]
    assert table_snapshot(spans, windows, 20, 27) == TableSnapshot(20, 27)


def test_a_table_not_in_the_running_snapshot_has_none():
    windows = snapshot_windows([(1, True), (2, False)])
    assert table_snapshot([BatchSpan(2, 5, 9)], windows, 1, 9) is None


# ---- applied by the runner, killed at every write (bronze written by the test's builder) ----

def _prepare(root: str) -> tuple[BronzeBuilder, list[SilverTable]]:
    """Snapshot of ids 1..5 (batch 1, completed), then an update of 5 streamed (batch 2)."""
    b = BronzeBuilder(root, table="items")
    b.register([int32("id", optional=False), string("note")], ["id"])
    for i in range(1, 6):
        b.read({"id": i, "note": f"n{i}"})
    b.commit_offset(b.commit(), {"lsn": 1}, snapshot_completed=True)
    b.next_tx().update({"id": 5, "note": "n5b"})
    b.commit_offset(b.commit(), {"lsn": 2}, snapshot_completed=True)
    return b, [SilverTable(table="hard", source=b.topic), SilverTable(table="soft", source=b.topic, deletes="soft"),
               SilverTable(table="hist", source=b.topic, history="scd2")]


def _resnapshot(b: BronzeBuilder) -> None:
    """A reset (batch 3), then a snapshot over batches 4-5 without ids 3 and 5; id 3 re-created after it."""
    b.commit_offset(b.commit(), {}, snapshot_completed=False)  # reset: no rows
    b.next_tx().read({"id": 1, "note": "n1"}).read({"id": 2, "note": "n2c"})
    b.commit_offset(b.commit(), {"lsn": 3, "snapshot": True}, snapshot_completed=False)
    b.read({"id": 4, "note": "n4"})
    b.commit_offset(b.commit(), {"lsn": 3}, snapshot_completed=True)
    b.next_tx().insert({"id": 3, "note": "n3 again"})
    b.commit_offset(b.commit(), {"lsn": 4}, snapshot_completed=True)


def _tables(spark, root: str) -> tuple[list[tuple[object, ...]], ...]:
    def load(name: str):
        return spark.read.format("delta").load(f"{root}/silver/{name}")
    return (rows(load("hard"), "id", "note", "_cdc_op"),
            rows(load("soft"), "id", "note", "_cdc_deleted", "_cdc_op"),
            rows(load("hist"), "id", "note", "_cdc_is_current", "_cdc_deleted"))


@SAIL_ONLY
def test_a_resnapshot_killed_at_every_write_then_rerun_equals_the_source(spark, engine, tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch):
    base = tmp_path / "base"
    b, decls = _prepare(str(base))

    def go(root: str):
        return run_silver(root=root, engine=EngineSpec(), tables=decls, options=SilverOptions(),
                          sources={"shop": "shop"}, once=True, spark=spark)

    assert go(str(base)).ok
    _resnapshot(b)
    reference_dir = tmp_path / "reference"
    shutil.copytree(base, reference_dir)
    result = go(str(reference_dir))
    assert result.ok and all(t.resnapshot_seq == 7 for t in result.tables)  # seq 7: the re-snapshot's first row
    reference = _tables(spark, str(reference_dir))
    assert reference[0] == [(1, "n1", "r"), (2, "n2c", "r"), (3, "n3 again", "c"), (4, "n4", "r")]
    assert reference[1] == [(1, "n1", False, "r"), (2, "n2c", False, "r"), (3, "n3 again", False, "c"),
                            (4, "n4", False, "r"), (5, "n5b", True, "d")]
    current = [r[:2] for r in reference[2] if r[2]]
    assert current == [(1, "n1"), (2, "n2c"), (3, "n3 again"), (4, "n4")]
    # 5 is closed as deleted; 3's old version is closed by its re-creation (a change after the snapshot start)
    closed = [r for r in reference[2] if r[0] in (3, 5) and not r[2]]
    assert closed == [(3, "n3", False, False), (5, "n5", False, False), (5, "n5b", False, True)]
    kill_at, completed = 1, False
    while not completed:
        trial = tmp_path / f"kill{kill_at}"
        shutil.copytree(base, trial)
        with monkeypatch.context() as m:
            calls = _arm(m, kill_at, engine)
            result = go(str(trial))
        crashed = any("killed after write" in (t.error or "") for t in result.tables)
        completed = not crashed
        assert crashed or calls[0] < kill_at
        assert go(str(trial)).ok, f"re-run after kill at write {kill_at} failed"
        assert _tables(spark, str(trial)) == reference, f"kill at write {kill_at}"
        shutil.rmtree(trial)
        kill_at += 1


# ---- an incremental snapshot: boundaries from its rows' positions ----

def _incremental_rows(b: BronzeBuilder, rows: list[dict[str, object]], *, start: int, last: bool) -> None:
    """Rows of incremental snapshot ``inc-1`` as capture writes them (``start``: the commit LSN of the
    watermark that opened the table's first chunk)."""
    for row in rows:
        value = b.envelope("r", None, row, snapshot="incremental")
        b.raw(key=b.key_of(row), value=value, op="r", position={
            "lsn_proc": b.lsn, "lsn_commit": start + 10, "lsn": b.lsn, "incremental_snapshot_correlation_id": "inc-1",
            "incremental_snapshot_last_chunk": last, "incremental_snapshot_table_start_commit": start})


@SAIL_ONLY
def test_an_incremental_snapshot_removes_unread_rows_once_its_last_chunk_is_in(spark, tmp_path: Path):
    root = str(tmp_path / "lake")
    b, decls = _prepare(root)  # ids 1..5 in silver
    go = lambda: run_silver(root=root, engine=EngineSpec(), tables=decls[:1], options=SilverOptions(),  # noqa: E731
                            sources={"shop": "shop"}, once=True, spark=spark)
    assert go().ok
    # id 4 was deleted unseen; the snapshot's max key is read after its first open watermark (commit
    # `start`): id 9, inserted after it, is streamed and never read by a chunk
    start = b.lsn + 1000
    b.next_tx().update({"id": 2, "note": "before the snapshot"}, commit_lsn=start - 500)
    b.next_tx().insert({"id": 9, "note": "streamed in the first window"}, commit_lsn=start)
    _incremental_rows(b, [{"id": 1, "note": "n1"}, {"id": 2, "note": "before the snapshot"}], start=start, last=False)
    b.commit_offset(b.commit(), {"lsn": 120}, snapshot_completed=True)
    assert go().ok
    assert [r[0] for r in rows(spark.read.format("delta").load(f"{root}/silver/hard"), "id")] == [1, 2, 3, 4, 5, 9]
    _incremental_rows(b, [{"id": 3, "note": "n3"}, {"id": 5, "note": "n5b"}], start=start, last=True)
    b.commit_offset(b.commit(), {"lsn": 140}, snapshot_completed=True)
    result = go()
    assert result.ok and result.tables[0].resnapshot_seq == 8  # id 9's insert: the first change after the start
    hard = rows(spark.read.format("delta").load(f"{root}/silver/hard"), "id", "note")
    assert hard == [(1, "n1"), (2, "before the snapshot"), (3, "n3"), (5, "n5b"), (9, "streamed in the first window")]


@SAIL_ONLY
def test_the_commit_mark_column_agrees_with_the_connectors_commit_marks(spark) -> None:
    # silver reads a re-snapshot's start from bronze positions with the same encoding as capture
    positions = [{"lsn_commit": 880, "lsn": 900}, {"file": "mysql-bin.000003", "pos": 4096},
                 {"commit_lsn": "0000002a:00000118:0003", "change_lsn": "NULL", "event_serial_no": 0},
                 {"commit_lsn": "ffffffff:7fffffff:ffff"}, {"commit_lsn": "NULL"}, {}]
    texts = [orjson.dumps(p).decode() for p in positions]
    df = spark.createDataFrame([(n, t) for n, t in enumerate(texts)], "n int, position string")
    got = {r["n"]: r["m"] for r in df.select("n", _commit_mark().alias("m")).collect()}
    assert got == {n: commit_mark(p) for n, p in enumerate(positions)}


@SAIL_ONLY
@pytest.mark.spark
def test_commit_marks_of_bronze_positions_match_the_capture_side(spark):
    positions = ['{"lsn_commit": 5}', '{"file": "mysql-bin.000002", "pos": 7}', '{"scn": "1", "commit_scn": null}',
                 '{"scn": "3", "commit_scn": "123:1:0a00-0b00,456:2:0c00"}', '{"scn": "90", "commit_scn": "99"}',
                 '{"scn": "8"}']
    got = spark.createDataFrame([(p,) for p in positions], ["position"]).select(_commit_mark().alias("m")).collect()
    assert [r["m"] for r in got] == [5, (2 << 32) + 7, None, 456, 99, None]
    assert [commit_mark(orjson.loads(p)) for p in positions] == [r["m"] for r in got]
