"""`ProgressTracker` and `progress_of`: an incremental snapshot's progress from the driver's states."""

from __future__ import annotations

from dataclasses import replace

from cdc_sources.common.incremental_progress import Ending, ProgressTracker, key_text, progress_of
from cdc_sources.common.incremental_state import IncrementalState, SnapshotCollection
from cdc_sources.spi.snapshot_progress import IncrementalProgress

A, B = SnapshotCollection("s", "a"), SnapshotCollection("s", "b")


class _Seen:
    def __init__(self) -> None:
        self.got: list[IncrementalProgress] = []

    def incremental_snapshot(self, progress: IncrementalProgress) -> None:
        self.got.append(progress)


def test_key_text_is_a_json_list_of_the_key_values():
    assert key_text(None) == "[]"
    assert key_text(("7", None)) == '["7",null]'


def test_progress_of_a_state_reading_its_second_chunk():
    st = IncrementalState("c1", (A, B), last_key=("20",), max_key=("300",), window="w2")
    p = progress_of(st, chunk_id="w2", chunk_to=("40",), table_from=None, tables=["s.a", "s.b"],
                    scanned={"s.a": 20}, ending=None)
    assert p == IncrementalProgress("c1", running=True, paused=False, completed=False, aborted=False, table="s.a",
                                    chunk_id="w2", chunk_from='["20"]', chunk_to='["40"]', table_from="[]",
                                    table_to='["300"]', total_tables=2, remaining_tables=2,
                                    rows_scanned=(("s.a", 20),))


def test_a_paused_or_ended_snapshot():
    st = IncrementalState("c1", (A,), paused=True)
    paused = progress_of(st, chunk_id="", chunk_to=None, table_from=None, tables=["s.a"], scanned={}, ending=None)
    assert paused.running and paused.paused and paused.chunk_from == "" and paused.table_to == ""
    done = progress_of(st, chunk_id="", chunk_to=None, table_from=None, tables=["s.a"], scanned={},
                       ending=Ending.COMPLETED)
    assert (done.running, done.paused, done.completed, done.aborted, done.remaining_tables) == (
        False, False, True, False, 0)
    stopped = progress_of(st, chunk_id="", chunk_to=None, table_from=None, tables=["s.a"], scanned={},
                          ending=Ending.ABORTED)
    assert (stopped.completed, stopped.aborted) == (False, True)


def test_the_tracker_follows_chunks_tables_and_the_end():
    seen = _Seen()
    t = ProgressTracker(seen)
    st = IncrementalState("c1", (A, B))
    t.changed(st)
    st = replace(st, max_key=("40",), window="w1")
    t.chunk_read(st, "w1", ("20",))
    t.changed(st)
    t.changed(st)  # nothing moved: not sent again
    t.chunk_emitted("s.a", 20)
    st = replace(st, last_key=("20",), window="w2")
    t.chunk_read(st, "w2", ("40",))
    t.changed(st)
    t.chunk_emitted("s.a", 20)
    st = replace(st.next_table(), max_key=("9",), window="w3")  # table b, resumed past key 5
    st = replace(st, last_key=("5",))
    t.chunk_read(st, "w3", ("9",))
    t.changed(st)
    t.chunk_emitted("s.b", 4)
    t.changed(None)
    got = seen.got
    assert [(p.table, p.chunk_id, p.chunk_from, p.chunk_to, p.table_from) for p in got[1:4]] == [
        ("s.a", "w1", "[]", '["20"]', "[]"), ("s.a", "w2", '["20"]', '["40"]', "[]"),
        ("s.b", "w3", '["5"]', '["9"]', '["5"]')]
    assert [p.remaining_tables for p in got] == [2, 2, 2, 1, 0]
    assert [p.rows_scanned for p in got[-2:]] == [(("s.a", 40),), (("s.a", 40), ("s.b", 4))]
    assert got[-1].completed and not got[-1].running and got[-1].total_tables == 2
    t.changed(None)  # no snapshot running: nothing more to say
    assert len(seen.got) == 5


def test_a_stop_aborts_and_a_new_snapshot_counts_anew():
    seen = _Seen()
    t = ProgressTracker(seen)
    st = replace(IncrementalState("c1", (A,)), window="w1", max_key=("9",))
    t.chunk_read(st, "w1", ("9",))
    t.changed(st)
    t.chunk_emitted("s.a", 9)
    t.changed(None, aborted=True)
    assert seen.got[-1].aborted and not seen.got[-1].completed
    t.changed(IncrementalState("c2", (B,)))
    p = seen.got[-1]
    assert (p.correlation_id, p.running, p.chunk_id, p.rows_scanned, p.total_tables, p.table) == (
        "c2", True, "", (), 1, "s.b")



def test_the_tracker_adds_up_the_pauses_of_a_snapshot():
    """``SnapshotPausedDurationInSeconds``: every pause of the snapshot, the one in progress included;
    a new snapshot counts anew. The clock is the test's."""
    seen, now = _Seen(), [100.0]
    t = ProgressTracker(seen, clock=lambda: now[0])
    st = IncrementalState("c1", (A,))
    t.changed(st)
    now[0] = 103.0
    t.changed(replace(st, paused=True))  # paused at 103
    assert seen.got[-1].paused_at == 103.0 and seen.got[-1].paused_duration(110.0) == 7.0
    now[0] = 105.5
    t.changed(st)  # resumed: 2.5 s
    assert (seen.got[-1].paused_seconds, seen.got[-1].paused_at) == (2.5, None)
    assert seen.got[-1].paused_duration(200.0) == 2.5  # not paused: it no longer grows
    now[0] = 120.0
    t.changed(replace(st, paused=True))
    now[0] = 121.0
    t.changed(None, aborted=True)  # a stop ends the pause in progress
    assert (seen.got[-1].aborted, seen.got[-1].paused_seconds, seen.got[-1].paused_at) == (True, 3.5, None)
    t.changed(IncrementalState("c2", (A,)))
    assert (seen.got[-1].paused_seconds, seen.got[-1].paused_at) == (0.0, None)
