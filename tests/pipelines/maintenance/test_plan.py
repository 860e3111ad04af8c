"""The maintenance plan's pure decisions: VACUUM retention from what silver still reads, and
which bronze rows retention may delete."""

from __future__ import annotations

import datetime as dt

from pipelines.maintenance.plan import Reader, retention_cut, vacuum_window

NOW = dt.datetime(2026, 11, 27, 12, 0, tzinfo=dt.UTC)


def test_no_reader_uses_the_configured_retention():
    w = vacuum_window(168, [], {}, 50)
    assert (w.hours, w.keep_versions, w.enforce) == (168, (), True)
    assert vacuum_window(2, [], {}, 50).enforce is False
    assert vacuum_window(0, [], {}, 50).hours == 1  # a reader that just listed the files can open them


def test_a_reader_that_never_read_keeps_delta_default():
    w = vacuum_window(0, [Reader("a", None, None)], {}, 50)
    assert (w.hours, w.enforce) == (168, True) and "has not read it yet" in w.reason


def test_a_lagging_reader_stretches_the_retention_to_its_version():
    readers = [Reader("a", 10, 40), Reader("b", 5, 12)]
    w = vacuum_window(24, readers, {40: 0.2, 12: 30.5}, 50)
    assert (w.hours, w.keep_versions) == (31, ()) and "b needs version 12" in w.reason


def test_a_configured_retention_longer_than_the_lag_wins():
    assert vacuum_window(168, [Reader("a", 1, 12)], {12: 30.5}, 50).hours == 168


def test_under_an_hour_the_versions_since_the_reader_are_kept():
    w = vacuum_window(0, [Reader("a", 1, 47)], {47: 0.1}, 50)
    assert (w.hours, w.keep_versions, w.enforce) == (0, (47, 48, 49, 50), False)


def test_retention_is_off_by_default_and_refused_for_streams():
    assert retention_cut(None, [], NOW).predicate is None
    cut = retention_cut(7, [Reader("a", 10, 3, streamed=True)], NOW)
    assert cut.predicate is None and "stream" in cut.reason


def test_retention_waits_for_every_silver_table():
    assert retention_cut(7, [Reader("a", 10, 3), Reader("b", None, None)], NOW).predicate is None


def test_retention_deletes_old_rows_up_to_the_slowest_table():
    cut = retention_cut(7, [Reader("a", 10, 3), Reader("b", 4, 2)], NOW)
    assert cut.before == NOW - dt.timedelta(days=7) and cut.upto_seq == 4
    assert cut.predicate is not None and cut.predicate.endswith("AND seq <= 4")
    assert "2026-11-20T12:00:00.000000Z" in cut.predicate
    assert retention_cut(1, [], NOW).upto_seq is None  # no silver table reads the topic
