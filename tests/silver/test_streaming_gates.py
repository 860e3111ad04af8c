"""Quality gates under the Structured Streaming driver (classic Spark + Delta: Sail has no
Structured Streaming, see test_streaming), one micro-batch per bronze commit.

A table with a ``fail``, a ``quarantine`` and a ``warn`` expectation; bronze (written with
delta-rs by the test builder) holds a first commit with a row for each of quarantine and warn,
and a second with a row breaking the ``fail`` gate; a third commit (the source fixing that
row) must let the restarted stream go on. The oracles are the rows the test writes:
which of them break which expectation is stated by hand.
"""

from __future__ import annotations

import contextlib
import os

import pytest

from silver.declarations import SilverOptions, SilverTable
from silver.expectations import Expectation
from silver.streaming import StreamSettings, failure_line, start_stream
from tests.silver.bronze_builder import int32, string
from tests.silver.conftest import rows

pytestmark = [pytest.mark.spark, pytest.mark.parametrize("engine", ["spark"], indirect=True)]

GATES = [{"type": "between", "column": "age", "min": 0, "max": 150, "action": "fail"},
         {"type": "not_null", "column": "email", "action": "quarantine"},
         {"type": "accepted_values", "column": "country", "values": ["DE", "FR", "US"], "action": "warn"}]


def _stream(spark, root, decl):
    """One available-now run of the table's query, a micro-batch per bronze file; the failure or None."""
    settings = StreamSettings(checkpoint_location=f"{root}/silver/_checkpoints/users",
                              read_options={"maxFilesPerTrigger": "1"})
    query = start_stream(spark, root=root, decl=decl, source="shop", options=SilverOptions(), settings=settings)
    with contextlib.suppress(Exception):  # the query's failure: read below
        query.awaitTermination()
    return query.exception()


def _state(spark, root):
    silver = rows(spark.read.format("delta").load(f"{root}/silver/users"), "id", "email", "age", "country")
    quarantined = rows(spark.read.format("delta").load(f"{root}/silver/_quarantine"), "seq", "reason")
    progress = rows(spark.read.format("delta").load(f"{root}/silver/_cdc/progress/users"), "last_seq")
    return silver, quarantined, progress


def test_stream_gates_warn_quarantine_and_a_fail_that_moves_nothing(builder, spark, root):
    b = builder("users")
    b.register([int32("id", optional=False), string("email"), int32("age"), string("country")], ["id"])
    b.insert({"id": 1, "email": "a@x.org", "age": 30, "country": "DE"})   # seq 1: fine
    b.insert({"id": 2, "email": None, "age": 40, "country": "FR"})       # seq 2: quarantined (null email)
    b.insert({"id": 3, "email": "c@x.org", "age": 50, "country": "XX"})  # seq 3: warned (country), applied
    b.insert({"id": 4, "email": "d@x.org", "age": 60, "country": "US"})  # seq 4: fine
    b.commit()
    b.next_tx()
    b.update({"id": 1, "email": "a@x.org", "age": 31, "country": "DE"})  # seq 5: fine
    b.insert({"id": 5, "email": "e@x.org", "age": 200, "country": "FR"})  # seq 6: fails the stream
    b.insert({"id": 6, "email": "f@x.org", "age": 70, "country": "DE"})  # seq 7: fine
    b.commit()
    decl = SilverTable(table="users", source=b.topic,
                       expectations=[Expectation.model_validate(e) for e in GATES])
    checkpoint = f"{root}/silver/_checkpoints/users"

    failure = _stream(spark, root, decl)
    assert failure is not None
    assert failure_line(str(failure)) == (  # what `silver --stream` reports
        "silver table 'users': expectation 'between_age' (fail): 1 failing row(s) (of 3 upserted row(s)); the "
        "increment (seq 5..7) was not applied and its progress did not move")
    first_batch = [(1, "a@x.org", 30, "DE"), (3, "c@x.org", 50, "XX"), (4, "d@x.org", 60, "US")]
    assert _state(spark, root) == (first_batch, [(2, "not_null_email")], [(4,)])
    assert [os.path.exists(f"{checkpoint}/commits/{n}") for n in (0, 1)] == [True, False]
    results = spark.read.format("delta").load(f"{root}/silver/_cdc/quality")
    assert rows(results, "seq_from", "expectation", "action", "passed", "failing_rows", "rows_checked") == [
        (1, "accepted_values_country", "warn", False, 1, 4),
        (1, "between_age", "fail", True, 0, 4),
        (1, "not_null_email", "quarantine", False, 1, 4),
        (5, "accepted_values_country", "warn", True, 0, 3),
        (5, "between_age", "fail", False, 1, 3),  # the failed micro-batch is recorded too
        (5, "not_null_email", "quarantine", True, 0, 3)]

    b.next_tx()
    b.update({"id": 5, "email": "e@x.org", "age": 50, "country": "FR"})  # seq 8: the source fixes the row
    b.commit()
    # Spark re-runs the failed micro-batch (seq 5..7) as it was: the driver checks it again with
    # bronze up to now, where the fix is the key's latest change
    assert _stream(spark, root, decl) is None
    assert [os.path.exists(f"{checkpoint}/commits/{n}") for n in (1, 2)] == [True, True]
    assert _state(spark, root) == (
        [(1, "a@x.org", 31, "DE"), (3, "c@x.org", 50, "XX"), (4, "d@x.org", 60, "US"), (5, "e@x.org", 50, "FR"),
         (6, "f@x.org", 70, "DE")],
        [(2, "not_null_email")], [(8,)])
