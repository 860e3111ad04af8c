"""Transaction-consistent cuts: every table of a source advances to the same transaction."""

from __future__ import annotations

import pytest

from silver.declarations import SilverOptions, SilverTable
from tests.silver.bronze_builder import int32, string
from tests.silver.conftest import rows
from tests.support.engines import SAIL_ONLY

pytestmark = pytest.mark.spark

TX = SilverOptions(consistency={"shop": "transaction"})


def _tables(builder):
    orders, lines = builder("orders"), builder("lines")
    orders.register([int32("id", optional=False), string("status")], ["id"])
    lines.register([int32("order_id", optional=False), int32("n", optional=False)], ["order_id", "n"])
    return orders, lines, [SilverTable(table="orders", source=orders.topic),
                           SilverTable(table="lines", source=lines.topic)]


def test_a_transaction_split_across_batches_waits_until_it_is_complete(builder, run, silver):
    orders, lines, decls = _tables(builder)
    # tx A complete in batch 1; tx B split over batches 1 (orders seq 2) and 2 (lines seq 2)
    orders.insert({"id": 1, "status": "new"})
    lines.insert({"order_id": 1, "n": 1})
    orders.next_tx().update({"id": 1, "status": "paid"})
    orders.commit(batch=1)
    lines.commit(batch=1)
    orders.commit_offset(1, {"lsn": 150, "txId": 1}, topics=[orders.topic, lines.topic],
                         complete_seq={orders.topic: 1})
    lines.next_tx().insert({"order_id": 1, "n": 2})
    lines.commit(batch=2)  # batch 2's offset row is not committed yet
    result = run(*decls, options=TX)
    assert [t.status for t in result.tables] == ["applied", "applied"]
    assert rows(silver("orders"), "id", "status") == [(1, "new")]
    assert rows(silver("lines"), "order_id", "n") == [(1, 1)]
    # without the cut, orders would already show tx B while lines did not
    orders.commit_offset(2, {"lsn": 250, "txId": 2}, topics=[lines.topic], complete_seq={})
    run(*decls, options=TX)
    assert rows(silver("orders"), "id", "status") == [(1, "paid")]
    assert rows(silver("lines"), "order_id", "n") == [(1, 1), (1, 2)]


def test_bronze_without_the_complete_seq_record_is_cut_at_whole_batches(builder, run, silver):
    """Offsets commits written before the bronze writer recorded where complete transactions stop:
    every row of the committed batches is taken, none of a batch not committed yet."""
    orders, lines, decls = _tables(builder)
    orders.insert({"id": 1, "status": "new"}).next_tx().update({"id": 1, "status": "paid"}).commit(batch=1)
    lines.insert({"order_id": 1, "n": 1}).commit(batch=1)
    orders.commit_offset(1, {"lsn": 150, "txId": 1}, topics=[orders.topic, lines.topic])
    lines.next_tx().insert({"order_id": 1, "n": 2}).commit(batch=2)
    result = run(*decls, options=TX)
    assert [t.status for t in result.tables] == ["applied", "applied"]
    assert rows(silver("orders"), "id", "status") == [(1, "paid")]
    assert rows(silver("lines"), "order_id", "n") == [(1, 1)]


@pytest.mark.parametrize("options", [TX, SilverOptions()], ids=["transaction", "table"])
def test_tables_wait_while_the_initial_snapshot_is_incomplete(builder, run, silver, options):
    """Under either consistency: an incomplete snapshot may be discarded and taken again, its
    rows' seq reused, so its rows are applied only once it completes."""
    orders, _lines, decls = _tables(builder)
    orders.read({"id": 1, "status": "new"})
    orders.commit(batch=1)
    orders.commit_offset(1, {"lsn": 10, "snapshot": True}, snapshot_completed=False)
    result = run(*decls, options=options)
    assert [t.status for t in result.tables] == ["waiting", "waiting"]
    if options.consistency:
        return  # completing it under transaction consistency: the test above
    orders.read({"id": 2, "status": "new"})
    orders.commit(batch=2)
    orders.commit_offset(2, {"lsn": 10}, snapshot_completed=True)
    result = run(*decls, options=options)
    assert [t.status for t in result.tables] == ["applied", "waiting"]
    assert rows(silver("orders"), "id") == [(1,), (2,)]


@SAIL_ONLY
def test_rows_of_a_batch_whose_offsets_row_is_not_committed_yet_wait_for_it(builder, run, silver):
    """Capture commits a batch's bronze rows before its offsets row. In between, the committed cut
    still says the snapshot is complete, but the new batch may be the first of a new snapshot
    attempt, which a crash discards (its rows removed, their seq reused): silver must not apply it."""
    orders, _lines, decls = _tables(builder)
    orders.read({"id": 1, "status": "new"}).commit(batch=1)
    orders.commit_offset(1, {"lsn": 10}, snapshot_completed=True)
    orders.read({"id": 2, "status": "again"}).commit(batch=2)  # a new attempt; its offsets row not yet
    result = run(*decls)
    assert (result.tables[0].status, result.tables[0].seq_to) == ("applied", 1)
    assert rows(silver("orders"), "id") == [(1,)]
    orders.commit_offset(2, {"lsn": 10, "snapshot": True}, snapshot_completed=False)
    assert run(*decls).tables[0].status == "waiting"
    orders.read({"id": 3, "status": "new"}).commit(batch=3)
    orders.commit_offset(3, {"lsn": 10}, snapshot_completed=True)
    run(*decls)
    assert rows(silver("orders"), "id") == [(2,), (3,)]  # the new snapshot is authoritative: id 1 was not in it


@SAIL_ONLY
def test_a_table_whose_bronze_table_does_not_exist_yet_waits_under_transaction_consistency(builder, run, silver):
    """Its source committed a batch, but not one row of this table yet: the table is waiting
    for bronze (as under table consistency), not up to date."""
    orders, _lines, decls = _tables(builder)
    orders.insert({"id": 1, "status": "new"}).commit(batch=1)
    orders.commit_offset(1, {"lsn": 150, "txId": 1}, topics=[orders.topic])
    for options in (TX, SilverOptions()):
        result = run(*decls, options=options)
        assert [(t.table, t.status) for t in result.tables][1] == ("lines", "waiting"), options
    assert rows(silver("orders"), "id") == [(1,)]


def test_table_consistency_is_the_default(builder, run, silver):
    orders, _lines, decls = _tables(builder)
    orders.insert({"id": 1, "status": "new"}).commit(batch=1)
    result = run(*decls)  # no offsets at all: each table applies what bronze has
    assert result.tables[0].status == "applied" and result.tables[1].status == "waiting"
    assert rows(silver("orders"), "id") == [(1,)]


def test_the_cut_comes_from_the_offsets_log_not_its_rows(spark, root):
    """The offsets table gains a data file per capture batch: the cut is read from its newest
    commit's metadata (as the capture writes it), so a pass costs the same however many there are."""
    from pathlib import Path

    from bronze.schema import offsets_path
    from bronze.writer import BronzeWriter
    from silver.consistency import SourceCut, committed_cut

    writer = BronzeWriter(root, "shop")
    try:
        writer.recover()
        writer.commit([], [], {"lsn": 10, "snapshot": True}, snapshot_completed=False)
        writer.commit([], [], {"lsn": 300, "txId": 7}, snapshot_completed=True)
    finally:
        writer.close()
    expected = SourceCut(2, True, {})
    assert committed_cut(spark, root, "shop") == expected
    data_files = list(Path(offsets_path(root, "shop")).glob("*.parquet"))
    assert len(data_files) == 2
    for f in data_files:  # no row is read: the cut stays readable without them
        f.unlink()
    assert committed_cut(spark, root, "shop") == expected


def test_a_newer_offsets_commit_without_the_metadata_is_read_from_the_rows(spark, root):
    """Compaction of the offsets table is passed over; rows another writer appended decide the cut."""
    import datetime as dt

    import pyarrow as pa
    from deltalake import DeltaTable, write_deltalake

    from bronze.schema import OFFSETS_SCHEMA, offsets_path
    from bronze.writer import BronzeWriter
    from silver.consistency import SourceCut, committed_cut

    writer = BronzeWriter(root, "shop")
    try:
        writer.recover()
        writer.commit([], [], {"lsn": 10, "snapshot": True}, snapshot_completed=False)
        writer.commit([], [], {"lsn": 300, "txId": 7}, snapshot_completed=True)
    finally:
        writer.close()
    path = offsets_path(root, "shop")
    DeltaTable(path).optimize.compact()
    assert committed_cut(spark, root, "shop") == SourceCut(2, True, {})
    write_deltalake(path, pa.Table.from_pydict(
        {"batch": [3], "offset": ['{"lsn": 1, "snapshot": true}'], "snapshot_completed": [False],
         "topics": [[]], "records": [0], "committed_at": [dt.datetime.now(dt.UTC)]}, schema=OFFSETS_SCHEMA),
        mode="append")
    assert committed_cut(spark, root, "shop") == SourceCut(3, False)
