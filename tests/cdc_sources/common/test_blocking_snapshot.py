"""The pure parts of blocking snapshots: markers, the rows' FROM clause, the offset state."""

from __future__ import annotations

from cdc_sources.common.blocking_snapshot import (
    BlockingCollection,
    BlockingState,
    StoredBlocking,
    row_source,
    snapshot_markers,
)


def test_markers_follow_debeziums_initial_snapshot_rule():
    assert snapshot_markers(0, 2, 3) == ["first", "true", "last_in_data_collection"]
    assert snapshot_markers(1, 2, 3) == ["first_in_data_collection", "true", "last"]
    assert snapshot_markers(1, 3, 2) == ["first_in_data_collection", "last_in_data_collection"]
    assert snapshot_markers(0, 1, 1) == ["last"]
    assert snapshot_markers(0, 1, 0) == []


def test_the_signal_filter_is_a_full_select_or_a_condition():
    table = '"public"."items"'
    assert row_source(BlockingCollection("public", "items"), table) == '"public"."items" AS t'
    assert row_source(BlockingCollection("public", "items", "SELECT * FROM public.items WHERE a = 0;"), table) == \
        "(SELECT * FROM public.items WHERE a = 0) AS t"
    assert row_source(BlockingCollection("public", "items", "  with x as (select 1) select * from x"), table) == \
        "(with x as (select 1) select * from x) AS t"
    assert row_source(BlockingCollection("public", "items", "selected = true"), table) == \
        '(SELECT * FROM "public"."items" WHERE (selected = true)) AS t'


def test_state_round_trips_through_the_offset_and_is_absent_otherwise():
    st = BlockingState("s@1.2.0", (BlockingCollection("db", "a"), BlockingCollection("db", "b", "x > 1")),
                       (7, 41, 1 << 62), '{"file": "bin.000007", "pos": 42}')
    offset = {"file": "bin.000007", "pos": 42, **st.to_offset()}
    assert BlockingState.from_offset(offset) == st
    assert BlockingState.from_offset({"file": "bin.000007", "pos": 42}) is None
    assert BlockingState.from_offset(None) is None


def test_the_last_pause_key_is_read_back_from_the_offset():
    assert StoredBlocking.from_offset({"lsn": 5, "blocking_snapshot_last_order_key": "[5, 0, 9, 1]"}) == \
        StoredBlocking(None, (5, 0, 9, 1))
    assert StoredBlocking.from_offset(None) == StoredBlocking()
