"""PostgreSQL's read-only watermarks: 32-bit stream transaction ids against 64-bit snapshot ids,
and the order keys of a chunk's rows against the stream's (pure)."""

from __future__ import annotations

from cdc_sources.postgres.readonly_watermarks import PostgresWatermarks, committed_unseen, xid_at_least


def test_stream_xids_compare_with_the_low_watermark_modulo_2_32() -> None:
    assert xid_at_least(1000, 1000) and xid_at_least(1001, 1000) and not xid_at_least(999, 1000)
    epoch = 3 << 32
    assert xid_at_least(5, epoch + 5) and not xid_at_least(4, epoch + 5)
    # across a wraparound: 2^32 - 10 is before xid 3 of the next epoch
    assert xid_at_least(3, epoch + (1 << 32) - 10) and not xid_at_least((1 << 32) - 11, epoch + (1 << 32) - 10)


def test_a_chunk_follows_every_record_before_the_high_watermark_and_precedes_the_others() -> None:
    marks = PostgresWatermarks(conn=None)
    high = 0x1950000
    before, at, after = (high - 8, high - 40, 2), (high, high - 16, 1), (high + 200, high + 100, 1)
    rows = [(*marks.close_order_key(high, seq), h) for seq in (10, 11) for h in (0, 2**62)]
    assert before < min(rows) and max(rows) < at < after
    assert rows == sorted(rows)  # a later chunk at the same high watermark follows the earlier one
    assert not marks.passed(high, before) and marks.passed(high, at)
    assert marks.opens(1000, '{"lsn":1,"txId":1000}') and not marks.opens(1000, '{"lsn":1,"txId":999}')
    assert not marks.opens(1000, '{"lsn":1}')


def test_the_stream_s_latest_transaction_ids_are_remembered_and_matched_against_running_ones() -> None:
    marks = PostgresWatermarks(conn=None, recent=3)
    for xid in (10, 10, 11, 12, 11, 13):  # records of one transaction follow each other
        marks.passing(f'{{"lsn":1,"txId":{xid}}}')
    marks.passing('{"lsn_proc":1}')  # no transaction id: nothing to remember
    assert marks.recent_ids == (11, 12, 13)  # 10 forgotten, the oldest beyond three
    assert committed_unseen(["9", "13", "11", "20"], set(marks.recent_ids)) == [11, 13]
    assert committed_unseen([], set(marks.recent_ids)) == []
