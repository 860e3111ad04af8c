"""Bad events go to the quarantine table with a reason; the rest of the batch applies."""

from __future__ import annotations

import shutil

import pytest

from silver.declarations import QuarantineOptions, SilverOptions, SilverTable
from tests.silver.bronze_builder import int32, string
from tests.silver.conftest import rows

pytestmark = pytest.mark.spark


def _setup(builder):
    b = builder("users")
    b.register([int32("id", optional=False), string("name"), int32("age")], ["id"])
    return b, SilverTable(table="users", source=b.topic)


def _quarantine(spark, root):
    return rows(spark.read.format("delta").load(f"{root}/silver/_quarantine"), "silver_table", "seq", "reason")


def test_bad_events_are_quarantined_and_the_rest_applies(builder, run, silver, spark, root):
    b, decl = _setup(builder)
    b.insert({"id": 1, "name": "a", "age": 30})
    b.raw(key='{"id":2}', value='{"after": {"id": 2', op="c")
    b.insert({"id": 3, "name": "c", "age": "thirty"})
    b.raw(key='{"id":4}', value=b.envelope("c", None, {"id": 4, "name": "d", "age": 1}), op="c", schema_id="nope")
    b.insert({"id": 5, "name": "e", "age": 50})
    b.commit()
    (res,) = run(decl).tables
    assert (res.upserts, res.quarantined) == (2, 3)
    assert rows(silver("users"), "id", "age") == [(1, 30), (5, 50)]
    assert _quarantine(spark, root) == [
        ("users", 2, "undecodable value: not a Debezium JSON envelope"),
        ("users", 3, "values do not match the schema in column(s): age"),
        ("users", 4, "schema_id nope is not in the schema history")]


def test_when_the_latest_event_of_a_key_is_bad_the_previous_good_one_applies(builder, run, silver, spark, root):
    b, decl = _setup(builder)
    b.insert({"id": 1, "name": "a", "age": 1})
    b.update({"id": 1, "name": "b", "age": 2})
    b.update({"id": 1, "name": "c", "age": "x"})
    b.commit()
    (res,) = run(decl).tables
    assert res.quarantined == 1
    assert rows(silver("users"), "id", "name") == [(1, "b")]
    assert [r[1] for r in _quarantine(spark, root)] == [3]


def test_rerun_does_not_duplicate_quarantine_rows(builder, run, spark, root):
    b, decl = _setup(builder)
    b.insert({"id": 1, "name": "a", "age": "x"}).commit()
    run(decl)
    shutil.rmtree(f"{root}/silver/_cdc/progress/users")
    run(decl)
    assert len(_quarantine(spark, root)) == 1


def test_with_quarantine_disabled_a_bad_event_stops_the_table(builder, run, silver):
    b, decl = _setup(builder)
    b.insert({"id": 1, "name": "a", "age": 1}).commit()
    run(decl)
    b.insert({"id": 2, "name": "b", "age": "x"}).commit()
    (res,) = run(decl, options=SilverOptions(quarantine=QuarantineOptions(enabled=False))).tables
    assert res.status == "failed" and "quarantine is disabled" in (res.error or "")
    assert rows(silver("users"), "id") == [(1,)]
