"""Record runs: records converted to Arrow columns before they reach the writer thread."""

from __future__ import annotations

import pyarrow as pa
import pytest

from bronze.record_runs import RECORD_COLUMNS, RecordRun, prepare, record_columns
from cdc_sources.spi import ChangeBlock, ChangeRecord


def rec(topic: str, n: int, *, op: str | None = "c", schema_id: str | None = "s1",
        headers: dict[str, str] | None = None) -> ChangeRecord:
    return ChangeRecord(topic, f'{{"id":{n}}}', None if op is None else f'{{"id":{n}}}', op, f'{{"lsn":{n}}}',
                        (100, n, 0), schema_id, headers)


def block(topic: str, first: int, n: int) -> ChangeBlock:
    texts = pa.array([f'{{"id":{first + i}}}' for i in range(n)])
    return ChangeBlock(topic, texts, texts, "r", pa.array(['{"lsn":1}'] * n), (100, 0), first, "s1")


def test_records_become_runs_per_topic_in_order_and_blocks_pass_through():
    first_block = block("t", 1, 2)
    items = [rec("t", 3), rec("t", 4), rec("u", 5), rec("t", 6), first_block, rec("t", 7)]
    out = prepare(items)
    assert [(type(o).__name__, o.topic, len(o)) for o in out] == [
        ("RecordRun", "t", 2), ("RecordRun", "u", 1), ("RecordRun", "t", 1), ("ChangeBlock", "t", 2),
        ("RecordRun", "t", 1)]
    assert out[3] is first_block
    assert prepare(out) == out  # already prepared: nothing to do
    first = out[0]
    assert isinstance(first, RecordRun)
    assert first.order_keys == [(100, 3, 0), (100, 4, 0)]
    assert first.columns.column("key").to_pylist() == ['{"id":3}', '{"id":4}']


def test_records_of_one_topic_in_other_lanes_become_runs_of_their_own():
    a1, b1, b2, a2 = (ChangeRecord("tx", None, "{}", None, "{}", (n, 0), None, lane=lane)
                      for lane, n in (("a", 100), ("b", 5), ("b", 6), ("a", 101)))
    out = prepare([a1, b1, b2, a2, rec("tx", 1)])
    assert [(o.topic, o.lane, o.order_keys) for o in out if isinstance(o, RecordRun)] == [
        ("tx", "a", [(100, 0)]), ("tx", "b", [(5, 0), (6, 0)]), ("tx", "a", [(101, 0)]), ("tx", None, [(100, 1, 0)])]


def test_columns_hold_what_the_records_hold():
    records = [rec("t", 1, headers={"__debezium.newkey": '{"id":2}'}), rec("t", 2, op=None, schema_id=None),
               rec("t", 3, schema_id="s2")]
    table = record_columns(records)
    assert table.schema == RECORD_COLUMNS
    assert table.to_pylist() == [
        {"key": '{"id":1}', "value": '{"id":1}', "op": "c", "position": '{"lsn":1}', "schema_id": "s1",
         "headers": [("__debezium.newkey", '{"id":2}')]},
        {"key": '{"id":2}', "value": None, "op": None, "position": '{"lsn":2}', "schema_id": None, "headers": None},
        {"key": '{"id":3}', "value": '{"id":3}', "op": "c", "position": '{"lsn":3}', "schema_id": "s2",
         "headers": None},
    ]
    same = record_columns([rec("t", 1), rec("t", 2)])
    assert same.column("schema_id").to_pylist() == ["s1", "s1"]
    assert same.column("headers").null_count == 2


@pytest.mark.parametrize(("mark", "kept"), [
    ((), [1, 2, 3]),
    ((100, 0, 0), [1, 2, 3]),
    ((100, 1, 0), [2, 3]),
    ((100, 2, 5), [3]),
    ((100, 3, 0), None),
    ((200, 0, 0), None),
])
def test_a_run_is_cut_at_the_high_water_mark(mark, kept):
    (run,) = prepare([rec("t", 1), rec("t", 2), rec("t", 3)])
    assert isinstance(run, RecordRun)
    after = run.after(mark)
    if kept is None:
        assert after is None
    else:
        assert after is not None
        assert after.column("key").to_pylist() == [f'{{"id":{n}}}' for n in kept]
