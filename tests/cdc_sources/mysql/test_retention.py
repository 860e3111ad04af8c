"""The binlog a capture still needs, from ``SHOW BINARY LOGS`` rows (the server part is in
tests/pipelines/test_status.py)."""

from __future__ import annotations

from cdc_sources.mysql.connection import BinlogFile
from cdc_sources.mysql.retention import retention_of

FILES = [BinlogFile("bin.000001", 1000), BinlogFile("bin.000002", 5000), BinlogFile("bin.000003", 700)]


def test_bytes_behind_span_the_later_files():
    found = retention_of(FILES, "bin.000002", 4000)
    assert found.retained_bytes == 1000 + 700
    assert not found.lost and not found.at_risk
    assert found.server_position == "bin.000003:700"


def test_the_oldest_kept_binlog_is_at_risk():
    found = retention_of(FILES, "bin.000001", 200)
    assert found.retained_bytes == 800 + 5000 + 700 and found.at_risk and not found.lost


def test_a_purged_binlog_is_lost():
    found = retention_of(FILES[1:], "bin.000001", 200)
    assert found.lost and found.retained_bytes is None
    assert "bin.000001 was purged (oldest kept: bin.000002)" in found.detail
