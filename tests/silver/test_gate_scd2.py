"""Data-quality gates on ``history: scd2`` tables, per action (Sail only).

The oracles are written by hand: which version breaks which expectation, and the versions
(``_cdc_seq``, open or closed and by which ``seq``) silver must hold afterwards.
"""

from __future__ import annotations

import os

import pytest

from silver.declarations import QuarantineOptions, SilverOptions, SilverTable
from silver.expectations import Expectation
from tests.silver.bronze_builder import int32, string
from tests.silver.conftest import rows
from tests.support.engines import SAIL_ONLY

pytestmark = [pytest.mark.spark, SAIL_ONLY]

VERSION = ("id", "_cdc_seq", "email", "age", "_cdc_is_current", "_cdc_end_seq", "_cdc_deleted")


def _users(builder):
    b = builder("users")
    b.register([int32("id", optional=False), string("email"), int32("age")], ["id"])
    return b


def _decl(b, *expectations: dict[str, object]) -> SilverTable:
    return SilverTable(table="users", source=b.topic, history="scd2",
                       expectations=[Expectation.model_validate(e) for e in expectations])


def _versions(silver):
    """Every version, by key and ``_cdc_seq``."""
    return sorted(rows(silver("users"), *VERSION), key=lambda v: (v[0], v[1]))


def _quarantined(spark, root):
    return rows(spark.read.format("delta").load(f"{root}/silver/_quarantine"), "seq", "reason")


def _progress(spark, root):
    return rows(spark.read.format("delta").load(f"{root}/silver/_cdc/progress/users"), "last_seq")


def _results(spark, root):
    df = spark.read.format("delta").load(f"{root}/silver/_cdc/quality")
    return rows(df, "expectation", "action", "passed", "failing_rows", "rows_checked", "seq_from", "seq_to")


def test_fail_checks_every_version_and_applies_nothing_then_warn_applies_all(builder, run, silver, spark, root):
    """A bad intermediate version (not the key's latest) stops the increment; with ``warn`` every
    version opens."""
    b = _users(builder)
    b.insert({"id": 1, "email": "a@x.org", "age": 30}).commit()                  # seq 1
    gate = _decl(b, {"type": "between", "column": "age", "min": 0, "max": 150, "action": "fail"})
    assert run(gate).tables[0].status == "applied"
    b.update({"id": 1, "email": "a@x.org", "age": 200})                          # seq 2: out of range
    b.update({"id": 1, "email": "a@x.org", "age": 32})                           # seq 3: fine (the latest)
    b.commit()
    (stopped,) = run(gate).tables
    assert stopped.status == "failed"
    assert "expectation 'between_age' (fail): 1 failing row(s) (of 2 upserted row(s))" in (stopped.error or "")
    assert _versions(silver) == [(1, 1, "a@x.org", 30, True, None, False)]
    assert _progress(spark, root) == [(1,)]
    assert not os.path.exists(f"{root}/silver/_quarantine")

    warn = _decl(b, {"type": "between", "column": "age", "min": 0, "max": 150, "action": "warn"})
    (applied,) = run(warn).tables
    assert applied.status == "applied", applied.error
    assert applied.expectations_failed == ("expectation 'between_age' (warn): 1 failing row(s)",)
    assert _versions(silver) == [(1, 1, "a@x.org", 30, False, 2, False), (1, 2, "a@x.org", 200, False, 3, False),
                                 (1, 3, "a@x.org", 32, True, None, False)]
    assert _progress(spark, root) == [(3,)]
    assert _results(spark, root) == [("between_age", "fail", False, 1, 2, 2, 3),
                                     ("between_age", "fail", True, 0, 1, 1, 1),
                                     ("between_age", "warn", False, 1, 2, 2, 3)]


def test_a_quarantined_version_is_as_if_the_change_never_arrived(builder, run, silver, spark, root):
    b = _users(builder)
    b.insert({"id": 1, "email": "a@x.org", "age": 30})   # seq 1
    b.insert({"id": 2, "email": "b@x.org", "age": 40})   # seq 2
    b.commit()
    decl = _decl(b, {"type": "not_null", "column": "email", "action": "quarantine"})
    assert run(decl).tables[0].status == "applied"

    b.update({"id": 1, "email": None, "age": 31})        # seq 3: quarantined; version seq 1 stays open ...
    b.update({"id": 1, "email": "a2@x.org", "age": 32})  # seq 4: ... until this change closes it
    b.insert({"id": 3, "email": None, "age": 50})        # seq 5: quarantined: key 3 has no version
    b.insert({"id": 4, "email": "d@x.org", "age": 60})   # seq 6: stays open ...
    b.update({"id": 4, "email": None, "age": 61})        # seq 7: ... as this one is quarantined
    b.update({"id": 2, "email": None, "age": 41})        # seq 8: quarantined; the delete closes seq 2
    b.delete({"id": 2})                                  # seq 9 (tombstone seq 10)
    b.commit()
    (res,) = run(decl).tables
    assert res.status == "applied", res.error
    assert (res.upserts, res.deletes, res.quarantined) == (2, 1, 4)
    assert res.expectations_failed == ("expectation 'not_null_email' (quarantine): 4 failing row(s)",)
    assert _versions(silver) == [
        (1, 1, "a@x.org", 30, False, 4, False), (1, 4, "a2@x.org", 32, True, None, False),
        (2, 2, "b@x.org", 40, False, 9, True),
        (4, 6, "d@x.org", 60, True, None, False)]
    assert _quarantined(spark, root) == [(3, "not_null_email"), (5, "not_null_email"), (7, "not_null_email"),
                                         (8, "not_null_email")]

    b.update({"id": 4, "email": None, "age": 62}).commit()        # seq 11: quarantined alone
    assert run(decl).tables[0].quarantined == 1
    b.update({"id": 4, "email": "d2@x.org", "age": 63}).commit()  # seq 12: closes the version of seq 6
    assert run(decl).tables[0].status == "applied"
    assert [v for v in _versions(silver) if v[0] == 4] == [(4, 6, "d@x.org", 60, False, 12, False),
                                                           (4, 12, "d2@x.org", 63, True, None, False)]
    assert _progress(spark, root) == [(12,)]


def test_unique_compares_the_versions_open_after_the_increment(builder, run, silver, spark, root):
    """A key's own earlier versions and closed versions hold no value; open versions of other keys do."""
    b = _users(builder)
    b.insert({"id": 1, "email": "a@x.org", "age": 30})   # seq 1
    b.insert({"id": 2, "email": "b@x.org", "age": 30})   # seq 2
    b.update({"id": 2, "email": "b2@x.org", "age": 30})  # seq 3: b@x.org is history now
    b.update({"id": 1, "email": "a@x.org", "age": 31})   # seq 4: repeats only its own earlier version
    b.commit()
    decl = _decl(b, {"type": "unique", "columns": ["email"], "action": "quarantine"})
    (first,) = run(decl).tables
    assert first.status == "applied" and first.expectations_failed == (), first.expectations_failed

    b.insert({"id": 3, "email": "b@x.org", "age": 50})   # seq 5: only a closed version held it: fine
    b.insert({"id": 4, "email": "a@x.org", "age": 60})   # seq 6: id 1's open version holds it: quarantined
    b.insert({"id": 5, "email": "c@x.org", "age": 70})   # seq 7
    b.update({"id": 5, "email": "d@x.org", "age": 70})   # seq 8: frees c@x.org ...
    b.insert({"id": 6, "email": "c@x.org", "age": 80})   # seq 9: ... for this one
    b.commit()
    (second,) = run(decl).tables
    assert second.status == "applied", second.error
    assert second.expectations_failed == ("expectation 'unique_email' (quarantine): 1 failing row(s), 1 of them "
                                          "repeating a value a silver row already holds",)
    assert _quarantined(spark, root) == [(6, "unique_email")]
    assert rows(silver("users").where("_cdc_is_current"), "id", "email") == [
        (1, "a@x.org"), (2, "b2@x.org"), (3, "b@x.org"), (5, "d@x.org"), (6, "c@x.org")]

    gate = _decl(b, {"type": "unique", "columns": ["email"], "action": "fail"})
    b.update({"id": 1, "email": "z@x.org", "age": 31})   # seq 10: frees a@x.org ...
    b.insert({"id": 7, "email": "a@x.org", "age": 90})   # seq 11: ... in the same increment
    b.commit()
    assert run(gate).tables[0].status == "applied"
    b.insert({"id": 8, "email": "q@x.org", "age": 20})   # seq 12: two new open versions ...
    b.insert({"id": 9, "email": "q@x.org", "age": 20})   # seq 13: ... with one value
    b.commit()
    (stopped,) = run(gate).tables
    assert stopped.status == "failed"
    assert "expectation 'unique_email' (fail): 2 failing row(s) (of 2 upserted row(s))" in (stopped.error or "")
    assert _progress(spark, root) == [(11,)]


def test_unique_over_columns_skips_versions_a_truncate_closes(builder, run, silver, spark, root):
    """Versions open before a truncate in the increment (in silver or in the increment) are closed
    by it and hold no value; two versions opened after it do."""
    b = _users(builder)
    b.insert({"id": 1, "email": "a@x.org", "age": 30}).commit()           # seq 1
    decl = _decl(b, {"type": "unique", "columns": ["email", "age"], "action": "quarantine"})
    assert run(decl).tables[0].status == "applied"
    b.insert({"id": 2, "email": "b@x.org", "age": 40})                    # seq 2: closed by the truncate
    b.truncate()                                                          # seq 3
    b.insert({"id": 3, "email": "a@x.org", "age": 30})                    # seq 4: id 1's values: fine
    b.insert({"id": 4, "email": "b@x.org", "age": 40})                    # seq 5: id 2's values: fine
    b.insert({"id": 5, "email": "c@x.org", "age": 50})                    # seq 6: repeated ...
    b.insert({"id": 6, "email": "c@x.org", "age": 50})                    # seq 7: ... here
    b.insert({"id": 7, "email": "c@x.org", "age": 51})                    # seq 8: another age: fine
    b.commit()
    (res,) = run(decl).tables
    assert res.status == "applied", res.error
    assert res.expectations_failed == ("expectation 'unique_email_age' (quarantine): 2 failing row(s)",)
    assert _quarantined(spark, root) == [(6, "unique_email_age"), (7, "unique_email_age")]
    assert rows(silver("users").where("_cdc_is_current"), "id") == [(3,), (4,), (7,)]
    assert rows(silver("users").where("NOT _cdc_is_current"), "id", "_cdc_end_seq", "_cdc_deleted") == [
        (1, 3, True), (2, 3, True)]


def test_with_quarantine_disabled_a_failing_version_stops_the_table(builder, run, silver):
    b = _users(builder)
    b.insert({"id": 1, "email": "a@x.org", "age": 30}).commit()           # seq 1
    decl = _decl(b, {"type": "not_null", "column": "email", "action": "quarantine"})
    options = SilverOptions(quarantine=QuarantineOptions(enabled=False))
    assert run(decl, options=options).tables[0].status == "applied"
    b.update({"id": 1, "email": None, "age": 31})                         # seq 2
    b.update({"id": 1, "email": "a2@x.org", "age": 32})                   # seq 3
    b.commit()
    (res,) = run(decl, options=options).tables
    assert res.status == "failed"
    assert "1 event(s) cannot be applied (e.g. not_null_email) and quarantine is disabled" in (res.error or "")
    assert _versions(silver) == [(1, 1, "a@x.org", 30, True, None, False)]
