"""The change-stream core: merge order, update pairs, key changes, serials (against Debezium's
``SqlServerOffsetContext.setChangePosition``), capture-instance switches and restarts."""

from __future__ import annotations

import random
from collections.abc import Iterable, Sequence
from typing import Any

import pytest

from cdc_sources.sqlserver.changes import (
    CaptureInstance,
    ChangeEvent,
    ChangeRow,
    ChangeStream,
    ChangeStreamError,
    SchemaSwitch,
    TableId,
    merge_rows,
    with_stop_lsns,
)
from cdc_sources.sqlserver.lsn import Lsn
from tests.cdc_sources.sqlserver.dbz_offsets import ask

CUSTOMERS = TableId("testDB", "dbo", "customers")
ORDERS = TableId("testDB", "dbo", "orders")
CUST = CaptureInstance("dbo_customers", CUSTOMERS, Lsn.parse("00000001:00000000:0000"), ("id", "name"), ("id",))
ORD = CaptureInstance("dbo_orders", ORDERS, Lsn.parse("00000001:00000000:0000"), ("id", "qty"), ("id",))
NOKEY = CaptureInstance("dbo_log", TableId("testDB", "dbo", "log"), Lsn.parse("00000001:00000000:0000"),
                        ("line",))


def lsn(tx: int, n: int = 0) -> Lsn:
    return Lsn(tx.to_bytes(4, "big") + n.to_bytes(4, "big") + b"\x00\x00")


def row(instance: CaptureInstance, tx: int, seq: int, op: int, *values: Any) -> ChangeRow:
    """A change row of transaction ``tx`` (commit LSN ``tx:ffff``) at change ``seq``."""
    return ChangeRow(instance.name, lsn(tx, 0xFFFF), lsn(tx, seq), op, tuple(values))


def kinds(items: Iterable[Any]) -> list[tuple[str, int]]:
    return [(i.kind.value, i.serial) if isinstance(i, ChangeEvent) else ("switch", 0) for i in items]


# -- merge --------------------------------------------------------------------------------------


def test_merge_orders_by_commit_change_and_operation_across_instances() -> None:
    cust = [row(CUST, 1, 1, 2, 1, "a"), row(CUST, 2, 3, 3, 1, "a"), row(CUST, 2, 3, 4, 1, "b"),
            row(CUST, 4, 1, 1, 1, "b")]
    orders = [row(ORD, 1, 2, 2, 10, 1), row(ORD, 2, 1, 2, 11, 1), row(ORD, 3, 1, 2, 12, 1)]
    merged = list(merge_rows({CUST.name: cust, ORD.name: orders}))
    assert [(r.instance, r.commit, r.seqval, r.operation) for r in merged] == sorted(
        [(r.instance, r.commit, r.seqval, r.operation) for r in cust + orders],
        key=lambda t: (t[1].sort_key(), t[2].sort_key(), t[3]))
    assert [r.instance for r in merged] == ["dbo_customers", "dbo_orders", "dbo_orders", "dbo_customers",
                                            "dbo_customers", "dbo_orders", "dbo_customers"]


def test_merge_rejects_unordered_rows_and_skips_rows_without_lsns(caplog: pytest.LogCaptureFixture) -> None:
    with pytest.raises(ChangeStreamError, match="dbo_orders: rows out of order"):
        list(merge_rows({ORD.name: [row(ORD, 2, 1, 2, 1, 1), row(ORD, 1, 1, 2, 2, 1)]}))
    missing = ChangeRow(ORD.name, Lsn.NULL, lsn(1, 1), 2, (1, 1))
    assert list(merge_rows({ORD.name: [missing, row(ORD, 1, 2, 2, 2, 1)]})) == [row(ORD, 1, 2, 2, 2, 1)]
    assert "without a commit or change LSN was skipped" in caplog.text


# -- events -------------------------------------------------------------------------------------


def run(rows: Sequence[ChangeRow], **kwargs: Any) -> list[Any]:
    return list(ChangeStream([CUST, ORD, NOKEY], **kwargs).events(rows))


def test_update_pair_is_one_u_with_serial_two() -> None:
    events = run([row(CUST, 1, 1, 3, 1, "a"), row(CUST, 1, 1, 4, 1, "b")])
    assert kinds(events) == [("u", 2)]
    assert events[0].before == (1, "a") and events[0].after == (1, "b") and events[0].key == (1,)


@pytest.mark.parametrize("rows", [
    [row(CUST, 1, 1, 3, 1, "a")],
    [row(CUST, 1, 1, 3, 1, "a"), row(CUST, 1, 1, 2, 1, "b")],
    [row(CUST, 1, 1, 3, 1, "a"), row(ORD, 1, 1, 4, 1, 1)],
], ids=["at-end", "followed-by-insert", "other-instance"])
def test_update_before_without_after_is_an_error(rows: list[ChangeRow]) -> None:
    with pytest.raises(ChangeStreamError, match="was not followed by its after image"):
        run(rows)


def test_key_change_is_delete_tombstone_create_at_one_serial() -> None:
    events = run([row(CUST, 1, 1, 3, 1, "a"), row(CUST, 1, 1, 4, 2, "a")])
    assert kinds(events) == [("d", 2), ("tombstone", 2), ("c", 2)]
    assert [e.key for e in events] == [(1,), (1,), (2,)]
    assert [e.closes_position for e in events] == [False, False, True]
    assert kinds(run([row(CUST, 1, 1, 3, 1, "a"), row(CUST, 1, 1, 4, 2, "a")], tombstones_on_delete=False)) == [
        ("d", 2), ("c", 2)]
    assert kinds(run([row(CUST, 1, 1, 3, 1, "a"), row(CUST, 1, 1, 4, 2, "a")], skipped=frozenset("d"))) == [("c", 2)]


def test_key_change_as_delete_and_insert_counts_serials_one_and_two() -> None:
    events = run([row(CUST, 1, 1, 1, 1, "a"), row(CUST, 1, 1, 2, 2, "a")])
    assert kinds(events) == [("d", 1), ("tombstone", 1), ("c", 2)]


def test_keyless_tables_skipped_operations_and_unchanged_updates() -> None:
    events = run([row(NOKEY, 1, 1, 2, "x"), row(NOKEY, 1, 2, 3, "x"), row(NOKEY, 1, 2, 4, "y"),
                  row(NOKEY, 1, 3, 1, "y")])
    assert kinds(events) == [("c", 1), ("u", 2), ("d", 1), ("tombstone", 1)]
    assert all(e.key is None for e in events)
    same = [row(CUST, 1, 1, 3, 1, "a"), row(CUST, 1, 1, 4, 1, "a")]
    assert kinds(run(same)) == [("u", 2)] and run(same, skip_unchanged=True) == []
    assert kinds(run([row(CUST, 1, 1, 2, 1, "a")], skipped=frozenset("c"))) == []


def _random_rows(rng: random.Random, transactions: int) -> list[ChangeRow]:
    """Random transactions over both tables: inserts, deletes, updates (3+4), key changes as 1+2
    at one change LSN and as 3+4 (each row change has its own change LSN, gaps allowed)."""
    rows: list[ChangeRow] = []
    for tx in range(1, transactions + 1):
        seq = 0
        for _ in range(rng.randint(1, 5)):
            seq += rng.choice([1, 1, 2])
            inst = rng.choice([CUST, ORD])
            kind = rng.choice(["i", "d", "u", "k12", "k34"])
            k = rng.randint(1, 9)
            if kind == "i":
                rows.append(row(inst, tx, seq, 2, k, "v"))
            elif kind == "d":
                rows.append(row(inst, tx, seq, 1, k, "v"))
            elif kind == "u":
                rows += [row(inst, tx, seq, 3, k, "v"), row(inst, tx, seq, 4, k, "w")]
            elif kind == "k12":
                rows += [row(inst, tx, seq, 1, k, "v"), row(inst, tx, seq, 2, k + 10, "v")]
            else:
                rows += [row(inst, tx, seq, 3, k, "v"), row(inst, tx, seq, 4, k + 10, "v")]
    return sorted(rows, key=lambda r: (r.commit.sort_key(), r.seqval.sort_key(), r.operation))


@pytest.mark.conformance
def test_serials_are_debeziums() -> None:
    rng = random.Random(11)
    streams = [_random_rows(rng, 6) for _ in range(25)]
    # three row changes at one position: the serial goes on counting (1, 2, then 2 more: 4)
    streams.append([row(CUST, 1, 1, 1, 1, "a"), row(CUST, 1, 1, 2, 2, "a"), row(CUST, 1, 1, 3, 2, "a"),
                    row(CUST, 1, 1, 4, 2, "b"), row(CUST, 1, 2, 2, 3, "c")])
    requests, ours = [], []
    for rows in streams:
        steps, i = [], 0
        while i < len(rows):
            count = 2 if rows[i].operation == 3 else 1
            steps.append([str(rows[i].commit), str(rows[i].seqval), rows[i].operation, count])
            i += count
        requests.append({"cmd": "serials", "steps": steps})
        events = [e for e in ChangeStream([CUST, ORD], tombstones_on_delete=False).events(rows)
                  if isinstance(e, ChangeEvent) and e.closes_position]
        ours.append([e.serial for e in events])
    answers = ask(requests)
    assert [a["serials"] for a in answers] == ours
    assert sum(len(s) for s in ours) > 150
    assert ours[-1] == [1, 2, 4, 1]


# -- capture instance switch ----------------------------------------------------------------------

V2 = CaptureInstance("dbo_customers_v2", CUSTOMERS, lsn(5, 0xFFFF), ("id", "name", "phone"), ("id",))


def test_stop_lsns_and_the_two_instance_limit() -> None:
    old, new = with_stop_lsns([V2, CUST])
    assert (old.name, old.stop_lsn, new.stop_lsn) == ("dbo_customers", V2.start_lsn, Lsn.NULL)
    v3 = CaptureInstance("dbo_customers_v3", CUSTOMERS, lsn(9), ("id",))
    with pytest.raises(ChangeStreamError, match="3 capture instances"):
        with_stop_lsns([CUST, V2, v3])


def test_switch_to_the_new_instance_at_its_start_lsn() -> None:
    old_rows = [row(CUST, 3, 1, 2, 1, "a"), row(CUST, 5, 1, 2, 2, "b"), row(CUST, 6, 1, 2, 3, "c")]
    new_rows = [row(V2, 5, 1, 2, 2, "b", None), row(V2, 6, 1, 2, 3, "c", "555")]
    orders = [row(ORD, 4, 1, 2, 1, 1), row(ORD, 5, 2, 2, 2, 1)]
    stream = ChangeStream([CUST, V2, ORD])
    items = list(stream.events(merge_rows({CUST.name: old_rows, V2.name: new_rows, ORD.name: orders})))
    described = [(i.instance.name, i.after) if isinstance(i, ChangeEvent) else ("switch", i.new.name) for i in items]
    assert described == [("dbo_customers", (1, "a")), ("dbo_orders", (1, 1)), ("switch", "dbo_customers_v2"),
                         ("dbo_customers_v2", (2, "b", None)), ("dbo_orders", (2, 1)),
                         ("dbo_customers_v2", (3, "c", "555"))]
    switch = items[2]
    assert isinstance(switch, SchemaSwitch) and switch.old is not None and switch.old.name == "dbo_customers"
    assert stream.current_instance(CUSTOMERS) == "dbo_customers_v2"
    (later,) = stream.events([row(V2, 7, 1, 2, 4, "d", None)])
    assert isinstance(later, ChangeEvent) and later.instance.name == "dbo_customers_v2"


def test_an_update_both_instances_hold_after_the_switch_is_one_event_of_the_new_one() -> None:
    """Both instances hold an update after the new one's start LSN: the merge interleaves the two
    instances' operation 3 and 4 rows (same position); the old instance's are dropped first."""
    old_rows = [row(CUST, 5, 1, 3, 2, "b"), row(CUST, 5, 1, 4, 2, "B")]
    new_rows = [row(V2, 5, 1, 3, 2, "b", None), row(V2, 5, 1, 4, 2, "B", "x")]
    items = list(ChangeStream([CUST, V2]).events(merge_rows({CUST.name: old_rows, V2.name: new_rows})))
    assert [(type(i).__name__, getattr(i, "after", None)) for i in items] == [
        ("SchemaSwitch", None), ("ChangeEvent", (2, "B", "x"))]


def test_instances_added_and_dropped_while_streaming() -> None:
    stream = ChangeStream([CUST])
    assert kinds(stream.events([row(CUST, 3, 1, 2, 1, "a")])) == [("c", 1)]
    stream.set_instances([CUST, V2])  # a new instance appeared: the old one stops at its start
    items = list(stream.events(merge_rows({CUST.name: [row(CUST, 5, 1, 2, 2, "b")],
                                           V2.name: [row(V2, 5, 1, 2, 2, "b", "x")]})))
    assert [(type(i).__name__, getattr(i, "after", None)) for i in items] == [
        ("SchemaSwitch", None), ("ChangeEvent", (2, "b", "x"))]
    stream.set_instances([V2])  # the old instance was disabled
    assert stream.current_instance(CUSTOMERS) == "dbo_customers_v2"
    assert kinds(stream.events([row(V2, 6, 1, 2, 3, "c", None)])) == [("c", 1)]


# -- restart ------------------------------------------------------------------------------------


def test_restart_at_every_event_emits_each_event_exactly_once() -> None:
    rng = random.Random(5)
    rows = _random_rows(rng, 8)
    full = list(ChangeStream([CUST, ORD]).events(rows))
    assert len(full) > 30
    cuts = [i for i, e in enumerate(full) if isinstance(e, ChangeEvent) and e.closes_position]
    for cut in cuts:
        event = full[cut]
        assert isinstance(event, ChangeEvent)
        stored = event.offset()
        # a restart re-reads from the stored commit LSN inclusive; an at-least-once source may give more
        again = [r for r in rows if r.commit >= stored.commit_lsn]
        for replay in (again, rows):
            rest = list(ChangeStream([CUST, ORD], resume=stored).events(replay))
            assert full[:cut + 1] + rest == full, f"restart after event {cut} ({stored})"
