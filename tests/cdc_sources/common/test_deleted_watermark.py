"""A signal-table delete read as a close watermark (``insert_delete``), and the pending chunk's range
in the offset."""

from __future__ import annotations

import orjson

from cdc_sources.common.incremental_snapshot import deleted_watermark
from cdc_sources.common.incremental_state import IncrementalState, SnapshotCollection, WindowRange
from cdc_sources.common.signals import Signal, Watermark


def _delete(before: dict[str, object] | None) -> str:
    return orjson.dumps({"before": before, "after": None, "op": "d"}).decode()


def test_the_delete_of_an_open_row_is_its_chunks_close_whatever_the_before_image_holds():
    want = Signal("5f0c-close", Watermark(False, "5f0c"))
    assert deleted_watermark(_delete({"id": "5f0c-open", "type": "snapshot-window-open", "data": None})) == want
    # PostgreSQL without REPLICA IDENTITY FULL: the key alone, the other columns null
    assert deleted_watermark(_delete({"id": "5f0c-open", "type": None, "data": None})) == want
    # read by position, as Debezium reads the signal table: the first column is the id
    assert deleted_watermark(_delete({"ID": "5f0c-open", "TYPE": None, "DATA": None})) == want


def test_other_deletes_are_no_watermark():
    assert deleted_watermark(_delete({"id": "ad-hoc-1", "type": "execute-snapshot", "data": "{}"})) is None
    assert deleted_watermark(_delete({"id": "5f0c-close", "type": "snapshot-window-close", "data": None})) is None
    assert deleted_watermark(_delete(None)) is None
    assert deleted_watermark(_delete({"id": None})) is None


def test_the_pending_chunks_range_round_trips_through_the_offset():
    st = IncrementalState("c1", (SnapshotCollection("public", "items"),), last_key=("20",), max_key=("400",),
                          window="w1", window_range=WindowRange(("40",), True))
    offset = st.to_offset()
    assert orjson.loads(offset["incremental_snapshot_window_range"]) == {"upto": ["40"], "more": True}
    assert IncrementalState.from_offset(offset) == st
    assert "incremental_snapshot_window_range" not in IncrementalState("c1", st.collections).to_offset()
    assert st.next_table().window_range is None
