"""Commit marks: one integer order for PostgreSQL and binlog positions (silver's re-snapshot start)."""

from __future__ import annotations

from cdc_sources.spi import BINLOG_FILE_FACTOR, SQLSERVER_VLF_LIMIT, commit_mark


def test_postgres_positions_use_the_commit_lsn():
    assert commit_mark({"lsn": 900, "lsn_commit": 880}) == 880


def test_binlog_positions_order_by_file_then_position():
    checkpoint = {"file": "mysql-bin.000003", "pos": 4096, "gtids": "0-1-9"}  # after a commit
    next_tx = {"file": "mysql-bin.000003", "pos": 4096, "row": 1, "server_id": 1}  # the next transaction's row
    later_file = {"file": "mysql-bin.000004", "pos": 4}
    assert commit_mark(checkpoint) == 3 * BINLOG_FILE_FACTOR + 4096
    assert commit_mark(checkpoint) <= commit_mark(next_tx) < commit_mark(later_file)  # type: ignore[operator]


def test_positions_without_either_have_no_mark():
    assert commit_mark({}) is None
    assert commit_mark({"file": "no-number", "pos": 4}) is None


def test_sqlserver_positions_order_by_the_commit_lsn_block() -> None:
    # VVVVVVVV:BBBBBBBB:SSSS: the VLF and the log block order commits; the slot is left out
    checkpoint = {"commit_lsn": "0000002a:00000118:0003", "change_lsn": "0000002a:00000110:0002",
                  "event_serial_no": 1}
    next_tx = {"commit_lsn": "0000002a:00000120:0001", "change_lsn": "0000002a:00000119:0004"}
    next_vlf = {"commit_lsn": "0000002b:00000001:0001"}
    assert commit_mark(checkpoint) == (0x2A << 32) | 0x118
    assert commit_mark(checkpoint) < commit_mark(next_tx) < commit_mark(next_vlf)  # type: ignore[operator]
    assert commit_mark({"commit_lsn": "ffffffff:ffffffff:ffff"}) == (SQLSERVER_VLF_LIMIT << 32) | 0xFFFFFFFF
    assert commit_mark({"commit_lsn": "ffffffff:ffffffff:ffff"}) < 2**63  # type: ignore[operator]
    assert commit_mark({"commit_lsn": "NULL", "change_lsn": "NULL"}) is None
    assert commit_mark({"commit_lsn": "0000002a-00000118-0003"}) is None
