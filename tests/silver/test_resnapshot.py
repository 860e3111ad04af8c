"""A table's snapshot boundaries from the offsets table and its ``r`` rows per batch (pure functions)."""

from __future__ import annotations

from silver.resnapshot import BatchSpan, TableSnapshot, snapshot_windows, table_snapshot


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
