"""Data-quality gates on real increments (bronze rows built by the test builder), per action.

The oracles are the rows each test writes: which of them break which expectation is stated by
hand, not computed by the code under test.
"""

from __future__ import annotations

import datetime as dt
import os

import pytest

from silver.declarations import SilverTable
from silver.expectations import Expectation
from tests.silver.bronze_builder import int32, micro_timestamp, string
from tests.silver.conftest import rows

pytestmark = pytest.mark.spark
sail_only = pytest.mark.parametrize("engine", ["sail"], indirect=True)


def _users(builder):
    b = builder("users")
    b.register([int32("id", optional=False), string("email"), int32("age"), string("country")], ["id"])
    return b


def _decl(b, *expectations: dict[str, object]) -> SilverTable:
    return SilverTable(table="users", source=b.topic,
                       expectations=[Expectation.model_validate(e) for e in expectations])


def _results(spark, root):
    df = spark.read.format("delta").load(f"{root}/silver/_cdc/quality")
    return rows(df, "expectation", "action", "passed", "failing_rows", "rows_checked")


def _quarantined(spark, root):
    df = spark.read.format("delta").load(f"{root}/silver/_quarantine")
    return rows(df, "seq", "reason")


def _progress(spark, root):
    return rows(spark.read.format("delta").load(f"{root}/silver/_cdc/progress/users"), "last_seq")


def test_a_failing_gate_applies_nothing_and_a_quarantine_gate_sets_rows_aside(builder, run, silver, spark, root):
    """Both engines: fail stops the increment (no silver table, quarantine or progress is written);
    after the declaration is relaxed, the same increment applies with the failing rows quarantined."""
    b = _users(builder)
    b.insert({"id": 1, "email": "a@x.org", "age": 30, "country": "DE"})   # seq 1: fine
    b.insert({"id": 2, "email": None, "age": 40, "country": "FR"})       # seq 2: null email
    b.insert({"id": 3, "email": "c@x.org", "age": 200, "country": "DE"})  # seq 3: age out of range
    b.insert({"id": 4, "email": "d@x.org", "age": 50, "country": "US"})   # seq 4: fine
    b.commit()
    strict = _decl(b, {"type": "not_null", "column": "email", "action": "quarantine"},
                   {"type": "between", "column": "age", "min": 0, "max": 150, "action": "fail"})
    (stopped,) = run(strict).tables
    assert stopped.status == "failed"
    assert "expectation 'between_age' (fail): 1 failing row(s) (of 4 upserted row(s))" in (stopped.error or "")
    assert [os.path.exists(f"{root}/silver/{p}") for p in ("users", "_quarantine", "_cdc/progress/users")] \
        == [False, False, False]

    relaxed = _decl(b, {"type": "not_null", "column": "email", "action": "quarantine"},
                    {"type": "between", "column": "age", "min": 0, "max": 150, "action": "warn"})
    (applied,) = run(relaxed).tables
    assert applied.status == "applied", applied.error
    assert (applied.upserts, applied.quarantined) == (3, 1)
    assert rows(silver("users"), "id", "email", "age") == [(1, "a@x.org", 30), (3, "c@x.org", 200),
                                                           (4, "d@x.org", 50)]
    assert _quarantined(spark, root) == [(2, "not_null_email")]
    assert _progress(spark, root) == [(4,)]
    assert _results(spark, root) == [
        ("between_age", "fail", False, 1, 4),  # the stopped run is recorded too
        ("between_age", "warn", False, 1, 4),
        ("not_null_email", "quarantine", False, 1, 4),
        ("not_null_email", "quarantine", False, 1, 4)]


@sail_only
def test_a_quarantined_update_leaves_the_silver_row_as_it_was(builder, run, silver, spark, root):
    b = _users(builder)
    b.insert({"id": 1, "email": "a@x.org", "age": 30, "country": "DE"}).commit()
    decl = _decl(b, {"type": "not_null", "column": "email", "action": "quarantine"})
    (first,) = run(decl).tables
    assert first.status == "applied"
    b.update({"id": 1, "email": None, "age": 31, "country": "DE"})       # seq 2: null email
    b.insert({"id": 2, "email": "b@x.org", "age": 50, "country": "US"})  # seq 3: fine
    b.commit()
    (second,) = run(decl).tables
    assert (second.upserts, second.quarantined) == (1, 1)
    assert second.expectations_failed == ("expectation 'not_null_email' (quarantine): 1 failing row(s)",)
    assert rows(silver("users"), "id", "email", "age") == [(1, "a@x.org", 30), (2, "b@x.org", 50)]
    assert _quarantined(spark, root) == [(2, "not_null_email")]
    assert _progress(spark, root) == [(3,)]


@sail_only
def test_every_row_level_type_quarantines_the_rows_it_names(builder, run, silver, spark, root):
    b = _users(builder)
    b.insert({"id": 1, "email": "a@x.org", "age": 30, "country": "DE"})    # seq 1: fine
    b.insert({"id": 2, "email": "nobody", "age": 40, "country": "FR"})     # seq 2: regex
    b.insert({"id": 3, "email": "c@x.org", "age": -1, "country": "DE"})    # seq 3: between, sql
    b.insert({"id": 4, "email": "d@x.org", "age": 20, "country": "XX"})    # seq 4: accepted_values
    b.insert({"id": 5, "email": "e@x.org", "age": None, "country": "DE"})  # seq 5: sql (null is not true)
    b.insert({"id": 6, "email": "dup@x.org", "age": 60, "country": "FR"})  # seq 6: unique
    b.insert({"id": 7, "email": "dup@x.org", "age": 70, "country": "FR"})  # seq 7: unique
    b.insert({"id": 8, "email": None, "age": 80, "country": None})         # seq 8: nulls pass all but sql
    b.commit()
    decl = _decl(b,
                 {"type": "regex", "column": "email", "pattern": "^[^@]+@[^@]+$", "action": "quarantine"},
                 {"type": "between", "column": "age", "min": 0, "max": 150, "action": "quarantine"},
                 {"type": "accepted_values", "column": "country", "values": ["DE", "FR", "US"],
                  "action": "quarantine"},
                 {"type": "unique", "columns": ["email"], "action": "quarantine"},
                 {"type": "sql", "name": "adult", "condition": "age >= 18", "action": "quarantine"})
    (res,) = run(decl).tables
    assert res.status == "applied" and (res.upserts, res.quarantined) == (2, 6)
    assert rows(silver("users"), "id") == [(1,), (8,)]
    assert _quarantined(spark, root) == [
        (2, "regex_email"), (3, "between_age, adult"), (4, "accepted_values_country"), (5, "adult"),
        (6, "unique_email"), (7, "unique_email")]


@sail_only
def test_a_passing_increment_is_applied_and_recorded(builder, run, silver, spark, root):
    b = _users(builder)
    for i in range(1, 21):
        b.insert({"id": i, "email": f"u{i}@x.org", "age": 20 + i, "country": "DE"})
    b.delete({"id": 20})
    b.commit()
    decl = _decl(b, {"type": "not_null", "column": "email", "action": "fail"},
                 {"type": "unique", "columns": ["email", "country"], "action": "fail"},
                 {"type": "row_count", "min": 1, "max": 19, "action": "fail"},
                 {"type": "sql", "condition": "length(email) > 5 AND age > 20", "name": "sane", "action": "fail"})
    (res,) = run(decl).tables
    assert res.status == "applied" and (res.upserts, res.deletes, res.quarantined) == (19, 1, 0)
    assert len(rows(silver("users"), "id")) == 19
    assert _results(spark, root) == [("not_null_email", "fail", True, 0, 19), ("row_count", "fail", True, None, 19),
                                     ("sane", "fail", True, 0, 19), ("unique_email_country", "fail", True, 0, 19)]


@sail_only
def test_row_count_and_freshness_judge_the_increment_as_a_whole(builder, run, silver, spark, root):
    b = _users(builder)
    old = int((dt.datetime.now(dt.UTC) - dt.timedelta(hours=2)).timestamp() * 1000)
    b.next_tx(ts_ms=old)
    b.insert({"id": 1, "email": "a@x.org", "age": 30, "country": "DE"})
    b.insert({"id": 2, "email": "b@x.org", "age": 30, "country": "DE"})
    b.commit()
    decl = _decl(b, {"type": "freshness", "max_age_seconds": 3600, "action": "warn"},
                 {"type": "row_count", "max": 1, "action": "warn"})
    (stale,) = run(decl).tables
    assert stale.status == "applied" and stale.upserts == 2
    assert any("newest _cdc_ts is 7" in n and "more than 3600s" in n for n in stale.expectations_failed), \
        stale.expectations_failed
    assert any("upserts 2 row(s), expected between any and 1" in n for n in stale.expectations_failed)

    b.next_tx(ts_ms=int(dt.datetime.now(dt.UTC).timestamp() * 1000))
    b.update({"id": 1, "email": "a@x.org", "age": 31, "country": "DE"}).commit()
    gate = _decl(b, {"type": "freshness", "max_age_seconds": 3600, "action": "fail"},
                 {"type": "row_count", "min": 2, "action": "fail"})
    (short,) = run(gate).tables
    assert short.status == "failed"
    assert "expectation 'row_count' (fail): the increment upserts 1 row(s), expected between 2 and any" \
        in (short.error or "")
    assert "freshness" not in (short.error or "")  # it passed: the row is new
    assert rows(silver("users"), "id", "age") == [(1, 30), (2, 30)]


@sail_only
def test_an_expectation_on_a_missing_column_or_a_broken_condition_stops_the_table(builder, run, silver):
    b = _users(builder)
    b.insert({"id": 1, "email": "a@x.org", "age": 30, "country": "DE"}).commit()
    (missing,) = run(_decl(b, {"type": "not_null", "column": "phone", "action": "warn"})).tables
    assert missing.status == "failed"
    assert "expectation 'not_null_phone' names column(s) ['phone'] that the table does not have" in missing.error
    (broken,) = run(_decl(b, {"type": "sql", "name": "c", "condition": "nosuch > 1", "action": "warn"})).tables
    assert broken.status == "failed"
    assert "expectation 'c': condition 'nosuch > 1' is not a valid Spark SQL boolean expression" in broken.error


@sail_only
def test_freshness_reads_a_declared_timestamp_column(builder, run, spark, root):
    b = builder("events")
    b.register([int32("id", optional=False), micro_timestamp("happened")], ["id"])
    recent = dt.datetime.now(dt.UTC) - dt.timedelta(minutes=5)
    b.insert({"id": 1, "happened": int(recent.timestamp() * 1_000_000)}).commit()
    decl = SilverTable(table="events", source=b.topic, expectations=[Expectation.model_validate(
        {"type": "freshness", "column": "happened", "max_age_seconds": 600, "action": "fail"})])
    (res,) = run(decl).tables
    assert res.status == "applied", res.error
    (row,) = spark.read.format("delta").load(f"{root}/silver/_cdc/quality").collect()
    assert row["passed"] and 290 <= row["observed"] <= 600


@sail_only
def test_an_increment_of_deletes_only_passes_freshness(builder, run, silver, spark, root):
    b = _users(builder)
    b.insert({"id": 1, "email": "a@x.org", "age": 30, "country": "DE"})
    b.insert({"id": 2, "email": "b@x.org", "age": 30, "country": "DE"})
    b.commit()
    run(_decl(b))
    b.delete({"id": 2}).commit()  # builder times are from 2023: any upsert would be stale
    decl = _decl(b, {"type": "freshness", "max_age_seconds": 60, "action": "fail"})
    (res,) = run(decl).tables
    assert res.status == "applied" and res.deletes == 1, res.error
    assert rows(silver("users"), "id") == [(1,)]
    assert _results(spark, root) == [("freshness", "fail", True, None, 0)]


@sail_only
def test_unique_also_holds_against_the_rows_silver_already_has(builder, run, silver, spark, root):
    """A value repeating a silver row outside the increment fails ``unique``; a key's own old value,
    a deleted row's value and (with soft deletes) a flagged row's value do not count."""
    b = _users(builder)
    b.insert({"id": 1, "email": "a@x.org", "age": 30, "country": "DE"})
    b.insert({"id": 2, "email": "b@x.org", "age": 30, "country": "DE"})
    b.insert({"id": 3, "email": "c@x.org", "age": 30, "country": "DE"})
    b.insert({"id": 4, "email": None, "age": 30, "country": "DE"})
    b.commit()
    decl = _decl(b, {"type": "unique", "columns": ["email"], "action": "quarantine"})
    assert run(decl).tables[0].status == "applied"

    b.update({"id": 1, "email": "a@x.org", "age": 31, "country": "DE"})  # seq 5: its own old value: fine
    b.insert({"id": 5, "email": "b@x.org", "age": 50, "country": "US"})  # seq 6: repeats id 2's email
    b.delete({"id": 3})                                                  # seq 7
    b.insert({"id": 6, "email": "c@x.org", "age": 60, "country": "US"})  # seq 9: id 3's email, now free
    b.insert({"id": 7, "email": None, "age": 70, "country": "US"})       # seq 10: null, like id 4: passes
    b.commit()
    (res,) = run(decl).tables
    assert res.status == "applied", res.error
    assert res.expectations_failed == ("expectation 'unique_email' (quarantine): 1 failing row(s), 1 of them "
                                       "repeating a value a silver row already holds",)
    assert rows(silver("users"), "id", "email", "age") == [(1, "a@x.org", 31), (2, "b@x.org", 30), (4, None, 30),
                                                           (6, "c@x.org", 60), (7, None, 70)]
    assert _quarantined(spark, root) == [(6, "unique_email")]

    b.update({"id": 2, "email": "z@x.org", "age": 30, "country": "DE"})  # seq 11: frees b@x.org ...
    b.insert({"id": 8, "email": "b@x.org", "age": 80, "country": "FR"})  # seq 12: ... in the same increment
    b.commit()
    gate = _decl(b, {"type": "unique", "columns": ["email"], "action": "fail"})
    (moved,) = run(gate).tables
    assert moved.status == "applied", moved.error
    assert rows(silver("users"), "id", "email") == [(1, "a@x.org"), (2, "z@x.org"), (4, None), (6, "c@x.org"),
                                                    (7, None), (8, "b@x.org")]

    b.insert({"id": 9, "email": "a@x.org", "age": 90, "country": "FR"}).commit()  # seq 13: id 1's email
    (stopped,) = run(gate).tables
    assert stopped.status == "failed"
    assert "expectation 'unique_email' (fail): 1 failing row(s), 1 of them repeating" in (stopped.error or "")


@sail_only
def test_unique_against_silver_skips_soft_deleted_rows_and_rows_a_truncate_removes(builder, run, silver):
    b = _users(builder)
    b.insert({"id": 1, "email": "a@x.org", "age": 30, "country": "DE"})
    b.insert({"id": 2, "email": "b@x.org", "age": 30, "country": "DE"})
    b.delete({"id": 2})
    b.commit()
    soft = SilverTable(table="users", source=b.topic, deletes="soft",
                       expectations=[Expectation.model_validate({"type": "unique", "columns": ["email"],
                                                                 "action": "fail"})])
    assert run(soft).tables[0].status == "applied"
    b.insert({"id": 3, "email": "b@x.org", "age": 40, "country": "DE"}).commit()  # only a flagged row had it
    (flagged,) = run(soft).tables
    assert flagged.status == "applied", flagged.error

    b.truncate()
    b.insert({"id": 4, "email": "a@x.org", "age": 50, "country": "DE"}).commit()  # id 1 went with the truncate
    (truncated,) = run(soft).tables
    assert truncated.status == "applied", truncated.error
    assert rows(silver("users").where("NOT _cdc_deleted"), "id", "email") == [(4, "a@x.org")]
