"""The order keys of a chunk's rows: each key keeps its own, whatever else the chunk holds when it is
read again after a restart (rows inserted or deleted in its range meanwhile)."""

from __future__ import annotations

from cdc_sources.common.incremental_snapshot import emission_order


def _chunk(ids: range | list[int]) -> dict[str | None, str]:
    return {f'{{"id":{i}}}': f'{{"id":{i},"v":"x"}}' for i in ids}


def test_a_key_keeps_its_order_key_when_the_chunk_is_read_again_with_other_rows():
    first = {key: h for h, key, _ in emission_order(_chunk(range(1, 21)))}
    again = {key: h for h, key, _ in emission_order(_chunk([0, *range(1, 7), *range(8, 21), 99]))}  # +0, -7, +99
    assert {k: again[k] for k in first if k in again} == {k: first[k] for k in first if k in again}
    assert len(set(first.values())) == 20


def test_order_keys_ascend_and_every_row_is_emitted_once():
    rows = _chunk(range(1, 500))
    out = emission_order(rows)
    hs = [h for h, _, _ in out]
    assert hs == sorted(hs) and len(set(hs)) == len(hs) and all(0 <= h < 1 << 63 for h in hs)
    assert {key: after for _, key, after in out} == rows
