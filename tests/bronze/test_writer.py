"""The bronze writer: seq assignment, replay dropping, offsets and schema history."""

from __future__ import annotations

import datetime as dt

import orjson
import pytest
from deltalake import DeltaTable

from bronze.schema import offsets_path, schemas_path, topic_path
from bronze.writer import BronzeWriter
from cdc_sources.spi import ChangeRecord, SchemaVersion


def rec(topic: str, n: int, op: str = "c", commit: int = 100) -> ChangeRecord:
    return ChangeRecord(topic, orjson.dumps({"id": n}).decode(), orjson.dumps({"after": {"id": n}}).decode(),
                        op, orjson.dumps({"lsn": commit + n}).decode(), (commit, n, 0), "s1")


SCHEMA = SchemaVersion("p.public.t", "s1", '{"type":"struct"}', '{"type":"struct"}', "public.t", ("id",))


def read(root: str, topic: str) -> list[dict[str, object]]:
    return sorted(DeltaTable(topic_path(root, topic)).to_pyarrow_table().to_pylist(), key=lambda r: r["seq"])


def test_commit_assigns_consecutive_seq_per_table(tmp_path):
    root = str(tmp_path)
    w = BronzeWriter(root, "p")
    assert w.recover() is None
    w.commit([rec("p.public.t", 1), rec("p.public.u", 2), rec("p.public.t", 3)], [SCHEMA], {"lsn": 1},
             snapshot_completed=True)
    w.commit([rec("p.public.t", 4)], [], {"lsn": 2}, snapshot_completed=True)
    t = read(root, "p.public.t")
    assert [r["seq"] for r in t] == [1, 2, 3]
    assert [orjson.loads(r["key"])["id"] for r in t] == [1, 3, 4]
    assert [r["batch"] for r in t] == [1, 1, 2]
    assert [r["seq"] for r in read(root, "p.public.u")] == [1]


def test_replayed_records_are_dropped_after_restart(tmp_path):
    root = str(tmp_path)
    w = BronzeWriter(root, "p")
    w.recover()
    w.commit([rec("p.public.t", 1), rec("p.public.t", 2)], [SCHEMA], {"lsn": 10}, snapshot_completed=True)
    w.close()
    # a crash before the offset of the next batch was stored: the source replays records 2 and 3
    w2 = BronzeWriter(root, "p")
    stored = w2.recover()
    assert stored is not None and stored.offset == {"lsn": 10} and stored.batch == 1
    result = w2.commit([rec("p.public.t", 2), rec("p.public.t", 3)], [SCHEMA], {"lsn": 11}, snapshot_completed=True)
    assert (result.records_written, result.records_skipped) == (1, 1)
    assert [orjson.loads(r["key"])["id"] for r in read(root, "p.public.t")] == [1, 2, 3]
    assert [r["seq"] for r in read(root, "p.public.t")] == [1, 2, 3]


def test_offsets_and_schema_history_are_recorded(tmp_path):
    root = str(tmp_path)
    w = BronzeWriter(root, "p")
    w.recover()
    w.commit([rec("p.public.t", 1)], [SCHEMA, SCHEMA], {"lsn": 5, "txId": 7}, snapshot_completed=False)
    w.commit([], [SCHEMA], {"lsn": 6}, snapshot_completed=True)
    offsets = sorted(DeltaTable(offsets_path(root, "p")).to_pyarrow_table().to_pylist(), key=lambda o: o["batch"])
    assert [(o["batch"], orjson.loads(o["offset"])["lsn"], o["snapshot_completed"]) for o in offsets] == [
        (1, 5, False), (2, 6, True)]
    schemas = DeltaTable(schemas_path(root, "p")).to_pyarrow_table().to_pylist()
    assert [(s["schema_id"], s["primary_key"]) for s in schemas] == [("s1", ["id"])]
    stored = BronzeWriter(root, "p").recover()
    assert stored is not None and stored.snapshot_completed and stored.offset == {"lsn": 6}


def test_tombstones_and_headers_round_trip(tmp_path):
    root = str(tmp_path)
    w = BronzeWriter(root, "p")
    w.recover()
    tomb = ChangeRecord("p.public.t", '{"id":1}', None, None, "{}", (1, 1, 1), None,
                        {"__debezium.newkey": '{"id":2}'})
    w.commit([tomb], [], {"lsn": 1}, snapshot_completed=True)
    row = read(root, "p.public.t")[0]
    assert row["value"] is None and row["op"] is None
    assert row["headers"] == [("__debezium.newkey", '{"id":2}')]


def test_interrupted_snapshot_rows_are_discarded(tmp_path):
    root = str(tmp_path)
    w = BronzeWriter(root, "p")
    w.recover()
    w.commit([rec("p.public.t", 1, op="r")], [SCHEMA], {"lsn": 1, "snapshot": True}, snapshot_completed=False)
    w2 = BronzeWriter(root, "p")
    w2.recover()
    assert w2.discard_incomplete_snapshot() == 1
    assert read(root, "p.public.t") == []
    w2.commit([rec("p.public.t", 7, op="r", commit=200)], [SCHEMA], {"lsn": 2, "snapshot": True},
              snapshot_completed=True)
    assert [r["seq"] for r in read(root, "p.public.t")] == [1]  # no gap where the discarded rows were


def test_snapshot_rows_committed_before_any_offset_are_discarded(tmp_path):
    root = str(tmp_path)
    w = BronzeWriter(root, "p")
    w.recover()
    w._commit_schemas([SCHEMA], dt.datetime.now(dt.UTC))
    w.stage([rec("p.public.t", 1, op="r")])
    w._commit_topic("p.public.t", w._pending["p.public.t"], 1)
    # crash here: data committed, no offset yet
    w2 = BronzeWriter(root, "p")
    assert w2.recover() is None
    assert w2.discard_incomplete_snapshot() == 1


@pytest.mark.parametrize("bad_key", [(), (0, 0, 0)])
def test_records_at_or_below_the_high_water_mark_never_land(tmp_path, bad_key):
    root = str(tmp_path)
    w = BronzeWriter(root, "p")
    w.recover()
    w.commit([rec("p.public.t", 5)], [], {"lsn": 1}, snapshot_completed=True)
    stale = rec("p.public.t", 5)
    stale.order_key = bad_key or (100, 5, 0)
    assert w.commit([stale], [], {"lsn": 2}, snapshot_completed=True).records_written == 0


def block(topic: str, first: int, n: int, prefix: tuple[int, ...] = (100, 0)):
    import pyarrow as pa

    from cdc_sources.spi import ChangeBlock

    keys = pa.array([orjson.dumps({"id": first + i}).decode() for i in range(n)])
    values = pa.array([orjson.dumps({"after": {"id": first + i}}).decode() for i in range(n)])
    positions = pa.array(['{"lsn":1}'] * n)
    return ChangeBlock(topic, keys, values, "r", positions, prefix, first, "s1", {"h": "v"})


def test_blocks_and_records_mix_in_order(tmp_path):
    root = str(tmp_path)
    w = BronzeWriter(root, "p")
    w.recover()
    result = w.commit([block("p.public.t", 1, 3), rec("p.public.t", 4, commit=200), block("p.public.t", 5, 2)],
                      [SCHEMA], {"lsn": 1}, snapshot_completed=False)
    # the second block's keys (100, 0, 5..6) are older than the record's (200, 4, 0): a replay
    assert (result.records_written, result.records_skipped) == (4, 2)
    assert [orjson.loads(r["key"])["id"] for r in read(root, "p.public.t")] == [1, 2, 3, 4]
    assert [r["seq"] for r in read(root, "p.public.t")] == [1, 2, 3, 4]
    assert read(root, "p.public.t")[0]["headers"] == [("h", "v")]


def test_a_replayed_block_is_cut_at_the_high_water_mark(tmp_path):
    root = str(tmp_path)
    w = BronzeWriter(root, "p")
    w.recover()
    w.commit([block("p.public.t", 1, 5)], [SCHEMA], {"lsn": 1}, snapshot_completed=False)
    w2 = BronzeWriter(root, "p")
    w2.recover()
    result = w2.commit([block("p.public.t", 3, 6)], [SCHEMA], {"lsn": 2}, snapshot_completed=False)
    assert (result.records_written, result.records_skipped) == (3, 3)
    assert [orjson.loads(r["key"])["id"] for r in read(root, "p.public.t")] == list(range(1, 9))
    assert w2.commit([block("p.public.t", 2, 4)], [], {"lsn": 3}, snapshot_completed=False).records_written == 0


def test_renames_and_column_ids_join_a_schema_history_written_without_them(tmp_path):
    import pyarrow as pa
    from deltalake import write_deltalake

    root = str(tmp_path)
    old_history = pa.table({"topic": ["p.public.t"], "schema_id": ["s0"], "table": ["public.t"],
                            "primary_key": [["id"]], "key_schema": ["{}"], "value_schema": ["{}"],
                            "registered_at": [dt.datetime(2026, 1, 1, tzinfo=dt.UTC)]},
                           schema=pa.schema([
                               ("topic", pa.string(), False), ("schema_id", pa.string(), False),
                               ("table", pa.string(), False), ("primary_key", pa.list_(pa.string()), False),
                               ("key_schema", pa.large_string(), False), ("value_schema", pa.large_string(), False),
                               ("registered_at", pa.timestamp("us", tz="UTC"), False)]))
    write_deltalake(schemas_path(root, "p"), old_history)  # as capture wrote it before renames were recorded
    w = BronzeWriter(root, "p")
    w.recover()
    renamed = SchemaVersion("p.public.t", "s1", "{}", "{}", "public.t", ("id",), (("price", "unit_price"),), (1, 2))
    w.commit([rec("p.public.t", 1)], [renamed], {"lsn": 1}, snapshot_completed=True)
    rows = sorted(DeltaTable(schemas_path(root, "p")).to_pyarrow_table().to_pylist(), key=lambda r: r["schema_id"])
    assert [(r["schema_id"], r["renamed_columns"], r["column_ids"]) for r in rows] == [
        ("s0", None, None), ("s1", [{"old": "price", "new": "unit_price"}], [1, 2])]


def test_the_offsets_table_checkpoints_every_ten_commits(tmp_path):
    """Its log is replayed at every commit: a checkpoint every 10 commits (not Delta's 100) bounds that."""
    root = str(tmp_path)
    w = BronzeWriter(root, "p")
    w.recover()
    for n in range(1, 22):
        w.commit([rec("p.public.t", n)], [SCHEMA] if n == 1 else [], {"lsn": n}, snapshot_completed=True)
    log = tmp_path / "bronze" / "_cdc" / "p" / "offsets" / "_delta_log"
    assert sorted(p.name for p in log.glob("*.checkpoint.parquet")) == [
        "00000000000000000009.checkpoint.parquet", "00000000000000000019.checkpoint.parquet"]
    assert BronzeWriter(root, "p").recover().offset == {"lsn": 21}


def _complete_seq(root: str, batch: int) -> dict[str, int]:
    """The ``cdc.complete_seq`` record of a batch's offsets commit, read from the Delta log."""
    for commit in DeltaTable(offsets_path(root, "p")).history():
        if commit.get("cdc.batch") == str(batch):
            return dict(orjson.loads(commit["cdc.complete_seq"]))
    raise AssertionError(f"no offsets commit of batch {batch}")


def test_each_batch_records_where_the_complete_transactions_stop(tmp_path):
    """A transaction spanning batches (t: records 3-4, u: 5-6) is recorded as open in each table it
    has rows in, from its first row, until a batch where it ends; a restart keeps the record."""
    root, t, u = str(tmp_path), "p.public.t", "p.public.u"
    w = BronzeWriter(root, "p")
    w.recover()
    w.stage([rec(t, 1), rec(u, 2)], transaction_end=True)
    w.commit([rec(t, 3), rec(t, 4)], [SCHEMA], {"lsn": 1}, snapshot_completed=True, transaction_end=False)
    assert _complete_seq(root, 1) == {t: 1}  # t: seq 2-3 (records 3, 4) are of the open transaction; u: complete
    w.commit([rec(u, 5)], [], {"lsn": 1}, snapshot_completed=True, transaction_end=False)
    assert _complete_seq(root, 2) == {t: 1, u: 1}
    w.close()
    w = BronzeWriter(root, "p")  # a restart: the source replays the open transaction from its start
    w.recover()
    result = w.commit([rec(t, 3), rec(t, 4), rec(u, 5), rec(u, 6)], [], {"lsn": 1}, snapshot_completed=True,
                      transaction_end=False)
    assert (result.records_written, result.records_skipped) == (1, 3)
    assert _complete_seq(root, 3) == {t: 1, u: 1}
    w.stage([], transaction_end=True)  # the transaction ends with nothing after it
    w.commit([rec(t, 7)], [], {"lsn": 2}, snapshot_completed=True, transaction_end=False)
    assert _complete_seq(root, 4) == {t: 3}
    w.commit([], [], {"lsn": 3}, snapshot_completed=True)
    assert _complete_seq(root, 5) == {}
    w.close()
    assert [r["seq"] for r in read(root, t)] == [1, 2, 3, 4]
    assert [r["seq"] for r in read(root, u)] == [1, 2, 3]


def test_the_open_transaction_stays_open_after_a_crash_before_the_offset_commit(tmp_path, monkeypatch):
    """Batch 2 committed its data (records 2, 3 of a transaction still open) but not its offset:
    after the restart they come back as replays, and the batch still records them as open."""
    root, t = str(tmp_path), "p.public.t"
    w = BronzeWriter(root, "p")
    w.recover()
    w.commit([rec(t, 1)], [SCHEMA], {"lsn": 1}, snapshot_completed=True)

    def lost(*_args: object, **_kwargs: object) -> None:
        raise OSError("crash before the offset commit")

    with monkeypatch.context() as patch:
        patch.setattr(BronzeWriter, "_commit_offset", lost)
        with pytest.raises(OSError):
            w.commit([rec(t, 2), rec(t, 3)], [], {"lsn": 1}, snapshot_completed=True, transaction_end=False)
    w.close()
    w = BronzeWriter(root, "p")
    w.recover()  # resumes at batch 1's offset: the source replays the open transaction from its start
    result = w.commit([rec(t, 2), rec(t, 3), rec(t, 4)], [], {"lsn": 1}, snapshot_completed=True,
                      transaction_end=False)
    assert (result.records_written, result.records_skipped) == (1, 2)
    assert _complete_seq(root, 2) == {t: 1}
    w.close()


def test_versions_of_one_commit_are_registered_in_the_order_given(tmp_path):
    """Readers order a topic's versions by ``registered_at``: versions committed together must
    keep the order the source announced them in, whatever their ids."""
    root = str(tmp_path)
    w = BronzeWriter(root, "p")
    w.recover()
    ids = ["s9", "s1", "s5"]  # not in id order
    versions = [SchemaVersion("p.public.t", i, "{}", "{}", "public.t", ("id",)) for i in ids]
    w.commit([rec("p.public.t", 1)], versions, {"lsn": 5}, snapshot_completed=True)
    schemas = DeltaTable(schemas_path(root, "p")).to_pyarrow_table().to_pylist()
    assert [s["schema_id"] for s in sorted(schemas, key=lambda s: (s["registered_at"], s["schema_id"]))] == ids


def laned(lane: str, lsn: int) -> ChangeRecord:
    """A record of a topic shared by independent positions (``lane``), at position ``lsn`` of its lane."""
    return ChangeRecord("p.transaction", None, orjson.dumps({"db": lane, "id": lsn}).decode(), None,
                        orjson.dumps({"lsn": lsn}).decode(), (lsn, 0), None, lane=lane)


def _laned_rows(root: str) -> list[tuple[str, int]]:
    return [(v["db"], v["id"]) for v in (orjson.loads(str(r["value"])) for r in read(root, "p.transaction"))]


def test_records_of_several_lanes_are_dropped_as_replays_per_lane_after_a_crash(tmp_path):
    """Two lanes interleave on one topic, each with its own positions (lane b's below lane a's).
    The data of batch 2 commits, its offset does not; after the restart each lane replays from its
    own stored position, interleaved otherwise: each record is in the table once."""
    root = str(tmp_path)
    w = BronzeWriter(root, "p")
    w.recover()
    w.commit([laned("a", 100), laned("b", 5)], [], {"lsn": 1}, snapshot_completed=True)
    w.stage([laned("a", 101), laned("b", 6), laned("a", 102), laned("b", 7)])
    w._commit_topic("p.transaction", w._pending["p.transaction"], 2)
    # crash here: batch 2's data committed, its offset not
    w.close()
    w2 = BronzeWriter(root, "p")
    assert w2.recover() is not None
    result = w2.commit([laned("b", 6), laned("b", 7), laned("b", 8), laned("a", 101), laned("a", 102),
                        laned("a", 103)], [], {"lsn": 2}, snapshot_completed=True)
    assert (result.records_written, result.records_skipped) == (2, 4)
    assert _laned_rows(root) == [("a", 100), ("b", 5), ("a", 101), ("b", 6), ("a", 102), ("b", 7),
                                 ("b", 8), ("a", 103)]
    assert [r["seq"] for r in read(root, "p.transaction")] == list(range(1, 9))


def test_a_lane_first_seen_after_a_restart_is_not_cut_by_another_lanes_mark(tmp_path):
    """Lane b's records at and below lane a's mark, one of them at the very same order key (two
    databases' transactions of the same commit LSN), are all written."""
    root = str(tmp_path)
    w = BronzeWriter(root, "p")
    w.recover()
    w.commit([laned("a", 100)], [], {"lsn": 1}, snapshot_completed=True)
    w.close()
    w2 = BronzeWriter(root, "p")
    w2.recover()
    w2.commit([laned("b", 5), laned("b", 100), laned("a", 100)], [], {"lsn": 2}, snapshot_completed=True)
    assert _laned_rows(root) == [("a", 100), ("b", 5), ("b", 100)]


def test_an_interrupted_snapshot_resets_each_lanes_mark(tmp_path):
    """The snapshot's rows are deleted, and the marks of every lane fall back to the last
    completed batch: a new attempt at the same positions is written again, and what that batch
    holds is still dropped as a replay."""
    root = str(tmp_path)
    w = BronzeWriter(root, "p")
    w.recover()
    w.commit([laned("a", 100), laned("b", 5)], [], {"lsn": 1}, snapshot_completed=True)
    w.commit([laned("a", 101), laned("b", 6)], [], {"lsn": 2}, snapshot_completed=False)
    w.close()
    w2 = BronzeWriter(root, "p")
    w2.recover()
    assert w2.discard_incomplete_snapshot() == 2
    w2.commit([laned("a", 100), laned("a", 101)], [], {"lsn": 3}, snapshot_completed=False)
    w2.commit([laned("b", 5), laned("b", 6)], [], {"lsn": 4}, snapshot_completed=True)
    assert _laned_rows(root) == [("a", 100), ("b", 5), ("a", 101), ("b", 6)]
