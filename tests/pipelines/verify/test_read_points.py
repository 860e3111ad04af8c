"""Which bronze rows belong to a source read, and when capture has reached it (pure)."""

from __future__ import annotations

import pytest

from pipelines.verify.model import VerifyError
from pipelines.verify.mysql_source import BinlogReadPoint
from pipelines.verify.postgres_source import PostgresReadPoint


def test_postgres_rows_belong_to_the_read_by_transaction_id_against_the_snapshot() -> None:
    point = PostgresReadPoint("100:105:101,103", insert_lsn=5000)
    seen = {tx: point.includes({"txId": tx, "lsn": 1}) for tx in range(98, 108)}
    assert seen == {98: True, 99: True, 100: True, 101: False, 102: True, 103: False, 104: True,
                    105: False, 106: False, 107: False}


def test_postgres_32_bit_transaction_ids_are_placed_in_the_snapshot_epoch() -> None:
    epoch = 3 << 32
    point = PostgresReadPoint(f"{epoch - 5}:{epoch + 2}:", insert_lsn=1)
    assert point.includes({"txId": (1 << 32) - 3})  # the previous epoch's last xids: before the snapshot
    assert point.includes({"txId": 1})
    assert not point.includes({"txId": 2}) and not point.includes({"txId": 3})


def test_postgres_capture_has_reached_the_read_at_or_past_the_insert_lsn_outside_a_snapshot() -> None:
    point = PostgresReadPoint("1:1:", insert_lsn=5000)
    assert not point.capture_reached({"lsn": 4999})
    assert point.capture_reached({"lsn": 5000, "lsn_commit": 4000})
    assert not point.capture_reached({"lsn": 9000, "snapshot": "INITIAL", "snapshot_completed": False})
    assert point.includes({"snapshot": "INITIAL", "lsn": 4000, "txId": None})
    assert not point.includes({"snapshot": "INITIAL", "lsn": 6000, "txId": None})
    with pytest.raises(VerifyError, match="has no txId"):
        point.includes({"lsn": 5})


def test_binlog_rows_belong_to_the_read_when_their_transaction_starts_before_its_position() -> None:
    point = BinlogReadPoint("mysql-bin.000002", 400)
    assert point.includes({"file": "mysql-bin.000001", "pos": 90000, "row": 1})
    assert point.includes({"file": "mysql-bin.000002", "pos": 399, "event": 2, "row": 1})
    assert not point.includes({"file": "mysql-bin.000002", "pos": 400, "row": 1})
    assert not point.includes({"file": "mysql-bin.000003", "pos": 4, "row": 1})
    assert point.capture_reached({"file": "mysql-bin.000002", "pos": 400})
    assert point.capture_reached({"file": "mysql-bin.000003", "pos": 4})
    assert not point.capture_reached({"file": "mysql-bin.000002", "pos": 250, "event": 3})
    assert point.describe() == "binlog mysql-bin.000002:400"
