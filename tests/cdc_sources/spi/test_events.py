"""ChangeBlock order keys: consecutive (snapshot) and explicit (streamed runs), and `after`."""

from __future__ import annotations

import pyarrow as pa
import pytest

from cdc_sources.postgres.stream_blocks import LsnOrderKeys
from cdc_sources.spi import ChangeBlock


def block(n: int, *, order_keys=None) -> ChangeBlock:
    texts = pa.array([f"v{i}" for i in range(n)])
    return ChangeBlock("t", pa.array([f"k{i}" for i in range(n)]), texts, "c", pa.array([f"p{i}" for i in range(n)]),
                       (9, 0), 1, "s", None, order_keys)


def test_consecutive_keys_and_the_rows_after_a_mark():
    b = block(5)
    assert [b.order_key(i) for i in range(5)] == [(9, 0, i) for i in range(1, 6)]
    assert b.last_order_key == (9, 0, 5)
    assert b.after(()) is b and b.after((8, 99, 99)) is b
    assert b.after((9, 0, 5)) is None
    rest = b.after((9, 0, 3))
    assert rest is not None and rest.values.to_pylist() == ["v3", "v4"] and rest.order_key(0) == (9, 0, 4)


def test_explicit_keys_with_their_lsns():
    keys = LsnOrderKeys(100, (10, 20, 30, 40), 7)
    b = block(4, order_keys=keys)
    assert [b.order_key(i) for i in range(4)] == [(100, 10, 7), (100, 20, 8), (100, 30, 9), (100, 40, 10)]
    assert b.last_order_key == (100, 40, 10)
    rest = b.after((100, 20, 8))
    assert rest is not None
    assert rest.values.to_pylist() == ["v2", "v3"] and rest.keys.to_pylist() == ["k2", "k3"]
    assert rest.positions.to_pylist() == ["p2", "p3"]
    assert list(rest.order_keys) == [(100, 30, 9), (100, 40, 10)]
    assert b.after((100, 40, 10)) is None and b.after((99, 0, 0)) is b
    # a mark written by the row-at-a-time path for the same transaction
    rest = b.after((100, 25, 8))
    assert rest is not None and rest.order_key(0) == (100, 30, 9)


def test_lsn_order_keys_behave_as_a_sequence():
    keys = LsnOrderKeys(5, (1, 2, 3), 0)
    assert len(keys) == 3 and keys[-1] == (5, 3, 2) and list(keys[1:]) == [(5, 2, 1), (5, 3, 2)]
    with pytest.raises(ValueError, match="step"):
        keys[::2]
    with pytest.raises(IndexError):
        keys[3]
