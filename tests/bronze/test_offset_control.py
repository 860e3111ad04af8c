"""Operations recorded in the offsets table: reset, rewind, decommission (`bronze.offset_control`)."""

from __future__ import annotations

import orjson
from deltalake import DeltaTable

from bronze.offset_control import Control, read_control, write_control
from bronze.schema import offsets_path
from bronze.writer import BronzeWriter
from tests.bronze.test_writer import SCHEMA, read, rec

T = "p.public.t"


def _stream(root: str) -> None:
    """A completed snapshot (batch 1) and a streamed batch (batch 2)."""
    w = BronzeWriter(root, "p")
    w.recover()
    w.commit([rec(T, 1, op="r"), rec(T, 2, op="r")], [SCHEMA], {"lsn": 100}, snapshot_completed=True)
    w.commit([rec(T, 3, commit=200)], [], {"lsn": 203}, snapshot_completed=True)
    w.close()


def test_after_a_reset_nothing_is_resumed_and_batch_numbers_go_on(tmp_path):
    root = str(tmp_path)
    _stream(root)
    assert write_control(root, "p", Control.RESET, offset=None, snapshot_completed=False) == 3
    assert read_control(root, "p").control is Control.RESET
    w = BronzeWriter(root, "p")
    assert w.recover() is None
    # a new snapshot at a later point: its batch numbers follow the reset's
    w.commit([rec(T, 1, op="r", commit=500)], [], {"lsn": 501, "snapshot": True}, snapshot_completed=False)
    assert [r["batch"] for r in read(root, T)] == [1, 1, 2, 4]
    assert read_control(root, "p").control is None
    w.close()


def test_an_interrupted_snapshot_after_a_reset_discards_only_its_own_rows(tmp_path):
    root = str(tmp_path)
    _stream(root)
    write_control(root, "p", Control.RESET, offset=None, snapshot_completed=False)
    w = BronzeWriter(root, "p")
    w.recover()
    w.commit([rec(T, 1, op="r", commit=500)], [], {"lsn": 501, "snapshot": True}, snapshot_completed=False)
    w.close()
    again = BronzeWriter(root, "p")
    assert again.recover() is not None  # the interrupted snapshot's own offset
    assert again.discard_incomplete_snapshot() == 1
    assert [(orjson.loads(r["key"])["id"], r["batch"]) for r in read(root, T)] == [(1, 1), (2, 1), (3, 2)]
    # the table's high-water mark is back at the streamed record: the new snapshot's rows land
    result = again.commit([rec(T, 1, op="r", commit=600)], [], {"lsn": 601}, snapshot_completed=True)
    assert result.records_written == 1
    again.close()


def test_a_rewind_is_resumed_from_and_decommission_keeps_the_offset(tmp_path):
    root = str(tmp_path)
    _stream(root)
    write_control(root, "p", Control.REWIND, offset={"lsn": 150}, snapshot_completed=True)
    stored = BronzeWriter(root, "p").recover()
    assert stored is not None and (stored.batch, stored.offset, stored.snapshot_completed) == (3, {"lsn": 150}, True)
    w = BronzeWriter(root, "p")
    w.recover()
    # records re-read from the rewound position are dropped at the table's high-water mark
    result = w.commit([rec(T, 3, commit=200), rec(T, 4, commit=200)], [], {"lsn": 204}, snapshot_completed=True)
    assert (result.records_written, result.records_skipped) == (1, 1)
    w.close()
    write_control(root, "p", Control.DECOMMISSION, offset={"lsn": 204}, snapshot_completed=True)
    state = read_control(root, "p")
    assert (state.batch, state.control) == (5, Control.DECOMMISSION) and state.at.startswith("20")
    assert BronzeWriter(root, "p").recover().offset == {"lsn": 204}  # type: ignore[union-attr]
    rows = DeltaTable(offsets_path(root, "p")).to_pyarrow_table().to_pylist()
    assert sorted((r["batch"], r["records"]) for r in rows)[-3:] == [(3, 0), (4, 2), (5, 0)]
