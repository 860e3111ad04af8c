"""Commit marks: one integer order for PostgreSQL and binlog positions (silver's re-snapshot start)."""

from __future__ import annotations

from cdc_sources.spi import BINLOG_FILE_FACTOR, commit_mark


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
