"""`EmissionOrder`: when the batches of tables read at once may leave, and with which markers.

The property checked over many arrival orders: every batch leaves exactly once, each table's
batches in order, only the last batch of a table is its end, and the very last batch to leave is
the only one marked ``last``, whichever table it belongs to (also when the tables that end after
it are empty).
"""

from __future__ import annotations

import random

import pytest

from cdc_sources.postgres.snapshot_order import EmissionOrder, Release


def _run(arrivals: list[tuple[int, str | None]]) -> list[Release]:
    """Feed ``(table, batch)`` arrivals (None: the table ended); everything released, in order."""
    order = EmissionOrder()
    out: list[Release] = []
    for table, batch in arrivals:
        out += order.end(table) if batch is None else order.batch(table, batch)
    return out + order.finish()


def _interleavings(batches: dict[int, int], seed: int) -> list[tuple[int, str | None]]:
    """A random arrival order of each table's batches, then its end."""
    rng = random.Random(seed)
    queues = {t: [f"{t}.{i}" for i in range(n)] + [None] for t, n in batches.items()}
    out: list[tuple[int, str | None]] = []
    while queues:
        t = rng.choice(sorted(queues))
        out.append((t, queues[t].pop(0)))
        if not queues[t]:
            del queues[t]
    return out


@pytest.mark.parametrize("seed", range(50))
def test_every_batch_leaves_once_in_table_order_and_only_the_very_last_is_last(seed):
    batches = {0: 3, 1: 0, 2: 1, 3: 2, 4: 0}
    out = _run(_interleavings(batches, seed))
    rows = [r for r in out if r.batch is not None]
    for t, n in batches.items():
        assert [r.batch for r in rows if r.table == t] == [f"{t}.{i}" for i in range(n)]
        ends = [r for r in out if r.table == t and r.table_end]
        assert len(ends) == 1  # every table, empty ones too, ends once
        if n:
            assert ends[0].batch == f"{t}.{n - 1}"
    assert [r.last for r in rows] == [False] * (len(rows) - 1) + [True]
    assert rows[-1].table_end


def test_a_table_ending_while_another_has_rows_waiting_leaves_at_once():
    order = EmissionOrder()
    assert order.batch(0, "a0") == []
    assert order.batch(1, "b0") == []
    assert order.end(0) == [Release(0, "a0", table_end=True, last=False)]  # b0 follows it
    assert order.end(1) == []  # held: might be the snapshot's last
    assert order.finish() == [Release(1, "b0", table_end=True, last=True)]


def test_a_held_final_batch_leaves_when_another_table_has_rows():
    order = EmissionOrder()
    order.batch(0, "a0")
    assert order.end(0) == []
    assert order.batch(1, "b0") == [Release(0, "a0", table_end=True, last=False)]
    assert order.end(1) == []
    assert order.finish() == [Release(1, "b0", table_end=True, last=True)]


def test_empty_tables_ending_last_leave_the_last_row_marked_last():
    order = EmissionOrder()
    order.batch(0, "a0")
    assert order.end(0) == []
    assert order.end(1) == [Release(1, None, table_end=True, last=False)]  # empty: nothing to hold
    assert order.finish() == [Release(0, "a0", table_end=True, last=True)]


def test_in_table_order_empty_tables_end_after_the_held_final_batch():
    """One table after another: the empty tables read after a held final batch end after it."""
    order = EmissionOrder(in_table_order=True)
    order.batch(0, "a0")
    assert order.end(0) == []
    assert order.end(1) == []
    assert order.end(2) == []
    assert order.finish() == [Release(0, "a0", table_end=True, last=True), Release(1, None, table_end=True, last=False),
                              Release(2, None, table_end=True, last=False)]
    order = EmissionOrder(in_table_order=True)
    order.batch(0, "a0")
    order.end(0)
    order.end(1)
    assert order.batch(2, "c0") == [Release(0, "a0", table_end=True, last=False),
                                    Release(1, None, table_end=True, last=False)]


def test_no_rows_at_all_release_only_table_ends():
    order = EmissionOrder()
    assert order.end(0) == [Release(0, None, table_end=True, last=False)]
    assert order.finish() == []


def test_finishing_before_every_table_ended_is_refused():
    order = EmissionOrder()
    order.batch(0, "a0")
    with pytest.raises(ValueError, match=r"tables \[0\] have not ended"):
        order.finish()
