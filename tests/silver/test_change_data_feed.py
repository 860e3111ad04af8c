"""``change_data_feed: true``: silver's own changes can be read incrementally (Delta Change Data
Feed) on classic Spark; Sail cannot write a Change Data Feed and says so."""

from __future__ import annotations

import pytest

from silver.declarations import SilverTable
from tests.silver.bronze_builder import int32, string

pytestmark = pytest.mark.spark


def test_silver_changes_are_readable_as_a_change_data_feed(builder, run, spark, engine, root):
    b = builder("orders")
    b.register([int32("id", optional=False), string("status")], ["id"])
    b.insert({"id": 1, "status": "new"}).insert({"id": 2, "status": "new"}).commit()
    decl = SilverTable(table="orders", source=b.topic, change_data_feed=True)
    (first,) = run(decl).tables
    if engine == "sail":  # differs on purpose: Sail 0.7.2 does not support the changeDataFeed table feature
        assert first.status == "failed"
        assert "cannot write Delta's Change Data Feed" in (first.error or "")
        return
    assert first.status == "applied", first.error
    b.update({"id": 1, "status": "paid"}).delete({"id": 2}).insert({"id": 3, "status": "new"}).commit()
    (second,) = run(decl).tables
    assert second.status == "applied", second.error
    feed = (spark.read.format("delta").option("readChangeFeed", "true").option("startingVersion", 0)
            .load(f"{root}/silver/orders"))
    got = sorted((r["id"], r["status"], r["_change_type"]) for r in feed.collect())
    assert got == [(1, "new", "insert"), (1, "new", "update_preimage"), (1, "paid", "update_postimage"),
                   (2, "new", "delete"), (2, "new", "insert"), (3, "new", "insert")]
    properties = spark.sql(f"SHOW TBLPROPERTIES delta.`{root}/silver/orders`").collect()
    assert {r["key"]: r["value"] for r in properties}.get("delta.enableChangeDataFeed") == "true"
