"""SCD2: one row per version; deletes and truncates close versions; nothing is ever reopened."""

from __future__ import annotations

import datetime as dt
import shutil

import pytest

from silver.declarations import SilverTable
from tests.silver.bronze_builder import PLACEHOLDER, int32, string
from tests.silver.conftest import rows

pytestmark = pytest.mark.spark

T0 = 1_700_000_000_000


def _ts(ms: int) -> dt.datetime:
    return dt.datetime(1970, 1, 1) + dt.timedelta(milliseconds=ms)


def _setup(builder):
    b = builder("prices")
    b.register([int32("id", optional=False), string("v"), string("doc")], ["id"])
    return b, SilverTable(table="prices", source=b.topic, history="scd2")


def _versions(silver):
    return rows(silver("prices"), "id", "v", "_cdc_valid_from", "_cdc_valid_to", "_cdc_is_current", "_cdc_deleted")


def test_versions_open_and_close_by_seq_and_delete_marks_deleted(builder, run, silver):
    b, decl = _setup(builder)
    b.next_tx(T0).insert({"id": 1, "v": "a", "doc": None})
    b.next_tx(T0 + 1000).update({"id": 1, "v": "b", "doc": None})
    b.next_tx(T0 + 2000).delete({"id": 1})
    b.next_tx(T0 + 3000).insert({"id": 1, "v": "c", "doc": None})
    b.insert({"id": 2, "v": "x", "doc": None})
    b.commit()
    (res,) = run(decl).tables
    assert (res.upserts, res.deletes) == (4, 1)
    assert _versions(silver) == [
        (1, "a", _ts(T0), _ts(T0 + 1000), False, False),
        (1, "b", _ts(T0 + 1000), _ts(T0 + 2000), False, True),
        (1, "c", _ts(T0 + 3000), None, True, False),
        (2, "x", _ts(T0 + 3000), None, True, False)]


def test_next_run_closes_the_open_version(builder, run, silver):
    b, decl = _setup(builder)
    b.next_tx(T0).insert({"id": 1, "v": "a", "doc": None}).commit()
    run(decl)
    b.next_tx(T0 + 5000).update({"id": 1, "v": "b", "doc": None}).commit()
    b.next_tx(T0 + 6000).delete({"id": 1}).commit()
    run(decl)
    assert _versions(silver) == [(1, "a", _ts(T0), _ts(T0 + 5000), False, False),
                                 (1, "b", _ts(T0 + 5000), _ts(T0 + 6000), False, True)]


def test_truncate_closes_every_open_version(builder, run, silver):
    b, decl = _setup(builder)
    b.next_tx(T0).insert({"id": 1, "v": "a", "doc": None}).insert({"id": 2, "v": "b", "doc": None}).commit()
    run(decl)
    b.next_tx(T0 + 1000).insert({"id": 3, "v": "c", "doc": None})
    b.next_tx(T0 + 2000).truncate()
    b.next_tx(T0 + 3000).insert({"id": 1, "v": "a2", "doc": None})
    b.commit()
    run(decl)
    assert _versions(silver) == [
        (1, "a", _ts(T0), _ts(T0 + 2000), False, True),
        (1, "a2", _ts(T0 + 3000), None, True, False),
        (2, "b", _ts(T0), _ts(T0 + 2000), False, True),
        (3, "c", _ts(T0 + 1000), _ts(T0 + 2000), False, True)]


def test_replayed_events_never_resurrect_or_reopen(builder, run, silver, root):
    b, decl = _setup(builder)
    b.next_tx(T0).insert({"id": 1, "v": "a", "doc": None}).commit()
    run(decl)
    b.next_tx(T0 + 1000).update({"id": 1, "v": "b", "doc": None})
    b.next_tx(T0 + 2000).delete({"id": 1}).commit()
    run(decl)
    expected = _versions(silver)
    shutil.rmtree(f"{root}/silver/_cdc/progress/prices")  # every bronze event is replayed
    run(decl)
    assert _versions(silver) == expected
    assert all(not current for *_, current, _ in expected)


def test_unchanged_toast_takes_the_previous_version_value(builder, run, silver):
    b, decl = _setup(builder)
    b.next_tx(T0).insert({"id": 1, "v": "a", "doc": "big"}).commit()
    run(decl)
    b.next_tx(T0 + 1000).update({"id": 1, "v": "b", "doc": PLACEHOLDER})
    b.next_tx(T0 + 2000).update({"id": 1, "v": "c", "doc": PLACEHOLDER})
    b.commit()
    run(decl)
    assert rows(silver("prices"), "v", "doc") == [("a", "big"), ("b", "big"), ("c", "big")]
