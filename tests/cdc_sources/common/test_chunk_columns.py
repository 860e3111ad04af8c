"""A chunk's rows kept as Arrow arrays: the same mapping as a dict under the driver's operations,
and the same events, byte for byte, as the dict path (`emission_order` + `rows_block`)."""

from __future__ import annotations

import random
import time
from typing import Any

import pyarrow as pa
import pytest

from cdc_sources.common import chunk_columns
from cdc_sources.common.blocking_snapshot import rows_block
from cdc_sources.common.chunk_columns import (
    ArrowChunkRows,
    PrefixedOrderKeys,
    PreparedRows,
    arrow_rows_block,
    hash_order,
    prepare,
)
from cdc_sources.common.envelope import dumps
from cdc_sources.common.incremental_snapshot import emission_order
from cdc_sources.spi import ChangeBlock

SOURCE = {"version": "3.0", "connector": "mysql", "name": "my", "ts_ms": 1, "snapshot": "incremental", "db": "d",
          "table": "t", "file": "bin.000003", "pos": 77, "row": 0, "query": None}
POSITION = '{"file":"bin.000003","pos":77}'
ORDER = (3, 77, 0)


def _rows(n: int, seed: int = 1) -> dict[str | None, str]:
    rng = random.Random(seed)
    out: dict[str | None, str] = {}
    for i in range(n):
        name = rng.choice(["plain", "ünïcode ☃", 'quote " \\ back', "", "\u0000nul", "𝄞 astral"])
        out[dumps({"id": i, "k": name})] = dumps({"id": i, "k": name, "v": rng.choice([None, 1.5, "x" * 40])})
    return out


def _arrow(rows: dict[str | None, str]) -> ArrowChunkRows:
    return ArrowChunkRows(pa.array(list(rows), pa.string()), pa.array(list(rows.values()), pa.string()))


def _records(block: ChangeBlock | None) -> list[tuple[Any, ...]]:
    if block is None:
        return []
    keys = block.keys.to_pylist() if block.keys is not None else [None] * len(block)
    return [(k, v, block.op, p, block.order_key(i), block.schema_id, block.headers, str(block.keys.type))
            for i, (k, v, p) in enumerate(zip(keys, block.values.to_pylist(), block.positions.to_pylist(),
                                              strict=True))]


def _dict_block(rows: dict[str | None, str]) -> ChangeBlock | None:
    """The dict path, as `MySqlChunkSource.read_events` renders a dict chunk."""
    if not rows:
        return None
    ranked = emission_order(rows)
    return rows_block("my.d.t", ranked, [dumps(SOURCE)] * len(ranked), ORDER, POSITION, "s1", {"h": '"1"'})


@pytest.fixture
def frozen_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    """Processing time (``ts_*``) fixed, so both paths' texts can be compared byte for byte."""
    monkeypatch.setattr(time, "time_ns", lambda: 1_700_000_000_123_456_789)


def test_the_driver_s_operations_leave_the_same_rows_as_on_a_dict() -> None:
    rows = _rows(300)
    arrow = _arrow(rows)
    assert len(arrow) == 300 and dict(arrow.items()) == rows and list(arrow) == list(rows)
    keys = list(rows)
    for key in [keys[0], keys[17], keys[17], keys[-1], '{"id":-1}', None]:  # twice, absent, null
        assert arrow.pop(key, None) == rows.pop(key, None)
        assert len(arrow) == len(rows) and (key in arrow) == (key in rows)
    assert list(arrow.items()) == list(rows.items())
    got_keys, got_afters = arrow.remaining()
    assert got_keys.to_pylist() == list(rows) and got_afters.to_pylist() == list(rows.values())
    with pytest.raises(KeyError):
        arrow[keys[17]]
    arrow.clear()
    assert len(arrow) == 0 and not arrow and list(arrow.items()) == []


def test_keys_that_repeat_keep_the_last_row_of_each_as_a_dict_does() -> None:
    keys, afters = ["a", "b", "a", "c", "b"], ["1", "2", "3", "4", "5"]
    arrow = ArrowChunkRows(pa.array(keys, pa.string()), pa.array(afters, pa.string()))
    expected = dict(zip(keys, afters, strict=True))
    assert list(arrow.items()) == list(expected.items()) and len(arrow) == 3
    assert arrow.pop("a") == expected.pop("a") and list(arrow.items()) == list(expected.items())
    with pytest.raises(ValueError, match="a chunk row without a key text"):
        ArrowChunkRows(pa.array(["a", None], pa.string()), pa.array(["1", "2"], pa.string()))
    with pytest.raises(ValueError, match="2 keys for 1 rows"):
        ArrowChunkRows(pa.array(["a", "b"]), pa.array(["x"]))


def test_rows_handed_over_while_rendering_are_waited_for_on_first_use_only() -> None:
    rows = _rows(10)
    loads: list[int] = []

    def load() -> PreparedRows:
        loads.append(1)
        return prepare(pa.array(list(rows), pa.string()), pa.array(list(rows.values()), pa.string()))

    arrow = ArrowChunkRows.later(load, 10)
    assert arrow and not loads  # bool: no wait (the driver asks it as soon as the chunk is read)
    assert len(arrow) == 10 and dict(arrow.items()) == rows and loads == [1]
    assert not ArrowChunkRows.later(load, 0) and loads == [1]

    def fails() -> PreparedRows:
        raise ValueError("column x: rejected value")

    failing = ArrowChunkRows.later(fails, 3)
    assert failing
    with pytest.raises(ValueError, match="rejected value"):  # raised where the rows are used
        failing.pop('{"id":1}')
    with pytest.raises(ValueError, match="rejected value"):  # and again
        len(failing)


def test_hash_order_is_emission_order() -> None:
    rows = _rows(2000, seed=7)
    order = hash_order(pa.array(list(rows), pa.string()))
    assert order is not None
    hashes, permutation = order
    keys = list(rows)
    assert [(h, keys[i], rows[keys[i]]) for h, i in zip(hashes.tolist(), permutation.tolist(), strict=True)] == \
        emission_order(rows)
    assert hash_order(pa.array(["same", "same"], pa.string())) is None  # equal hashes: left to emission_order


@pytest.mark.usefixtures("frozen_clock")
@pytest.mark.parametrize("drop", [0, 1, 250])
def test_the_block_equals_the_dict_path_byte_for_byte(drop: int) -> None:
    rows = _rows(1024, seed=drop)
    arrow = _arrow(rows)
    for key in random.Random(drop).sample(list(rows), drop):  # what the window's streamed events dropped
        rows.pop(key)
        arrow.pop(key)
    got = arrow_rows_block("my.d.t", arrow, SOURCE, ORDER, POSITION, "s1", {"h": '"1"'})
    assert got is not None and got.order_keys is not None
    assert _records(got) == _records(_dict_block(rows))
    assert got.positions.type == pa.dictionary(pa.int32(), pa.string())


@pytest.mark.usefixtures("frozen_clock")
def test_a_hash_shared_by_two_keys_takes_the_dict_path(monkeypatch: pytest.MonkeyPatch) -> None:
    rows = _rows(50)
    monkeypatch.setattr(chunk_columns, "hash_order", lambda keys: None)
    assert _records(arrow_rows_block("my.d.t", _arrow(rows), SOURCE, ORDER, POSITION, "s1", {"h": '"1"'})) == \
        _records(_dict_block(rows))


def test_no_rows_left_no_block() -> None:
    arrow = _arrow(_rows(3))
    arrow.clear()
    assert arrow_rows_block("my.d.t", arrow, SOURCE, ORDER, POSITION, None, None) is None


def test_order_keys_made_when_asked_for_cut_a_block_at_a_mark_as_a_list_does() -> None:
    last = [3, 9, 27, 81]
    keys = PrefixedOrderKeys((5, 6), last)
    assert list(keys) == [(5, 6, h) for h in last] and keys[-1] == (5, 6, 81)
    assert list(keys[1:3]) == [(5, 6, 9), (5, 6, 27)] and all(type(v) is int for v in keys[0])
    block = arrow_rows_block("my.d.t", _arrow(_rows(40)), SOURCE, ORDER, POSITION, None, None)
    assert block is not None and isinstance(block.order_keys, PrefixedOrderKeys)
    listed = ChangeBlock(block.topic, block.keys, block.values, "r", block.positions, ORDER, 0,
                         order_keys=list(block.order_keys))
    for mark in [(), (3, 77), (3, 77, 0), block.order_key(0), block.order_key(17), block.last_order_key, (3, 78)]:
        cut, expected = block.after(mark), listed.after(mark)
        assert (cut is None) == (expected is None), mark
        if cut is not None and expected is not None:
            assert _records(cut) == _records(expected) and list(cut.order_keys or []) == expected.order_keys
