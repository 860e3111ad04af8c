"""Source positions in the source's own notation."""

from __future__ import annotations

from pipelines.positions import format_lsn, source_position


def test_lsn_as_postgresql_prints_it():
    assert format_lsn(0x1A4AA58) == "0/1A4AA58"
    assert format_lsn(97500059720) == "16/B374D848"  # the example in PostgreSQL's docs style
    assert format_lsn(0) == "0/0"


def test_postgres_offset():
    found = source_position({"lsn": 97500059720, "ts_usec": 1_700_000_000_123_456, "txId": 5})
    assert found is not None and found.text == "16/B374D848" and found.ts_ms == 1_700_000_000_123


def test_mysql_offset_with_and_without_gtids():
    found = source_position({"file": "mysql-bin.000003", "pos": 1234, "gtids": "0-1-77", "ts_sec": 1_700_000_000})
    assert found is not None and found.text == "mysql-bin.000003:1234 gtids 0-1-77"
    assert found.ts_ms == 1_700_000_000_000
    plain = source_position({"file": "mysql-bin.000003", "pos": 4})
    assert plain is not None and plain.text == "mysql-bin.000003:4" and plain.ts_ms is None


def test_an_offset_without_a_position():
    assert source_position({}) is None
    assert source_position({"lsn": True}) is None


def test_sqlserver_offset():
    found = source_position({"commit_lsn": "0000002a:000001f0:0003", "change_lsn": "0000002a:000001e8:0002",
                             "event_serial_no": 2})
    assert found is not None and found.text == "0000002a:000001f0:0003 (change 0000002a:000001e8:0002, serial 2)"
    snapshot = source_position({"commit_lsn": "0000002a:000001f0:0003", "change_lsn": "NULL", "event_serial_no": 0})
    assert snapshot is not None and snapshot.text == "0000002a:000001f0:0003"


def test_sqlserver_offset_of_several_databases():
    found = source_position({"partitions": [
        {"partition": {"server": "ms", "database": "inv"}, "offset": {"commit_lsn": "0000002a:000001f0:0003",
                                                                      "change_lsn": "NULL", "event_serial_no": 0}},
        {"partition": {"server": "ms", "database": "hr"}, "offset": {"commit_lsn": "00000020:00000100:0000",
                                                                     "change_lsn": "00000020:000000f8:0000",
                                                                     "event_serial_no": 1}}]})
    assert found is not None and found.text == (
        "inv 0000002a:000001f0:0003; hr 00000020:00000100:0000 (change 00000020:000000f8:0000, serial 1)")
    assert source_position({"partitions": []}) is None
