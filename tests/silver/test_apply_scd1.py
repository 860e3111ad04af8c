"""SCD1 apply semantics: upserts, deletes, tombstones, truncates, TOAST, key changes, dedupe."""

from __future__ import annotations

from decimal import Decimal

import pytest
from chispa import assert_df_equality

from silver.declarations import SilverTable, SoftDeleteColumns
from tests.silver.bronze_builder import PLACEHOLDER, decimal, enc_decimal, int32, string
from tests.silver.conftest import rows

pytestmark = pytest.mark.spark


def _customers(builder):
    b = builder("customers")
    b.register([int32("id", optional=False), string("name"), string("bio"), decimal("balance", 10, 2)], ["id"])
    return b


def _decl(b, **kw):
    return SilverTable(table=b.table, source=b.topic, **kw)


def test_upsert_update_delete_keep_latest_per_key(builder, run, silver, spark):
    b = _customers(builder)
    b.read({"id": 1, "name": "ann", "bio": "x", "balance": enc_decimal("1.50", 2)})
    b.read({"id": 2, "name": "bob", "bio": "y", "balance": enc_decimal("-2.25", 2)})
    b.insert({"id": 3, "name": "cid", "bio": None, "balance": None})
    b.update({"id": 1, "name": "ann2", "bio": "x", "balance": enc_decimal("10.00", 2)})
    b.update({"id": 1, "name": "ann3", "bio": "x", "balance": enc_decimal("11.00", 2)})
    b.delete({"id": 2})
    b.commit()
    result = run(_decl(b))
    (res,) = result.tables
    assert (res.status, res.events, res.upserts, res.deletes) == ("applied", 7, 2, 1)
    expected = spark.createDataFrame([(1, "ann3", "x", Decimal("11.00"), 5, "u"), (3, "cid", None, None, 3, "c")],
                                     "id int, name string, bio string, balance decimal(10,2), _cdc_seq bigint, "
                                     "_cdc_op string")
    assert_df_equality(silver("customers").drop("_cdc_ts"), expected, ignore_row_order=True, ignore_nullable=True)


def test_second_run_applies_only_new_rows_and_deletes_existing(builder, run, silver):
    b = _customers(builder)
    b.insert({"id": 1, "name": "a", "bio": "b", "balance": None}).insert({"id": 2, "name": "b", "bio": "b",
                                                                          "balance": None})
    b.commit()
    run(_decl(b))
    b.delete({"id": 1}, tombstone=True)
    b.update({"id": 2, "name": "b2", "bio": "b", "balance": enc_decimal("3", 2)})
    b.commit()
    (res,) = run(_decl(b)).tables
    assert (res.seq_from, res.seq_to, res.events, res.upserts, res.deletes) == (2, 5, 3, 1, 1)
    assert rows(silver("customers"), "id", "name") == [(2, "b2")]
    (again,) = run(_decl(b)).tables
    assert again.status == "up_to_date"


def test_tombstone_alone_deletes_the_row(builder, run, silver):
    b = _customers(builder)
    b.insert({"id": 1, "name": "a", "bio": None, "balance": None}).commit()
    run(_decl(b))
    b.raw(key='{"id":1}', value=None, op=None, schema_id=None).commit()
    (res,) = run(_decl(b)).tables
    assert res.deletes == 1
    assert silver("customers").count() == 0


def test_truncate_removes_rows_whose_last_change_came_before_it(builder, run, silver):
    b = _customers(builder)
    b.insert({"id": 1, "name": "old", "bio": None, "balance": None}).commit()
    run(_decl(b))
    b.insert({"id": 2, "name": "before-truncate", "bio": None, "balance": None})
    b.truncate()
    b.insert({"id": 3, "name": "after-truncate", "bio": None, "balance": None})
    b.update({"id": 1, "name": "reinserted", "bio": None, "balance": None})
    b.commit()
    (res,) = run(_decl(b)).tables
    assert res.truncates == 1
    assert rows(silver("customers"), "id", "name") == [(1, "reinserted"), (3, "after-truncate")]


def test_unchanged_toast_keeps_previous_value_from_silver(builder, run, silver):
    b = _customers(builder)
    b.insert({"id": 1, "name": "a", "bio": "long text", "balance": None}).commit()
    run(_decl(b))
    b.update({"id": 1, "name": "a2", "bio": PLACEHOLDER, "balance": None}).commit()
    run(_decl(b))
    assert rows(silver("customers"), "id", "name", "bio") == [(1, "a2", "long text")]


def test_unchanged_toast_takes_earlier_value_in_same_increment(builder, run, silver):
    b = _customers(builder)
    b.insert({"id": 1, "name": "a", "bio": "first", "balance": None})
    b.update({"id": 1, "name": "a2", "bio": "second", "balance": None})
    b.update({"id": 1, "name": "a3", "bio": PLACEHOLDER, "balance": None})
    b.insert({"id": 2, "name": "b", "bio": "kept", "balance": None})
    b.delete({"id": 2})
    b.insert({"id": 2, "name": "b2", "bio": PLACEHOLDER, "balance": None})
    b.commit()
    run(_decl(b))
    # id 2 was deleted and re-inserted: the old bio must not come back
    assert rows(silver("customers"), "id", "name", "bio") == [(1, "a3", "second"), (2, "b2", None)]


def test_placeholder_for_a_new_key_is_null_never_the_placeholder(builder, run, silver):
    b = _customers(builder)
    b.update({"id": 5, "name": "x", "bio": PLACEHOLDER, "balance": None}).commit()
    run(_decl(b))
    assert rows(silver("customers"), "id", "bio") == [(5, None)]


def test_primary_key_change_moves_the_row(builder, run, silver):
    b = _customers(builder)
    b.insert({"id": 1, "name": "a", "bio": "t", "balance": None}).commit()
    run(_decl(b))
    b.change_key({"id": 1}, {"id": 10, "name": "a", "bio": "t", "balance": None}).commit()
    run(_decl(b))
    assert rows(silver("customers"), "id", "name") == [(10, "a")]


def test_primary_key_change_carries_unchanged_toast_values_from_the_old_key(builder, run, silver):
    b = _customers(builder)
    b.insert({"id": 1, "name": "a", "bio": "in silver", "balance": None}).commit()
    run(_decl(b))
    b.insert({"id": 2, "name": "b", "bio": "in this increment", "balance": None})
    b.change_key({"id": 1}, {"id": 10, "name": "a", "bio": PLACEHOLDER, "balance": None})
    b.change_key({"id": 2}, {"id": 20, "name": "b", "bio": PLACEHOLDER, "balance": None})
    b.commit()
    run(_decl(b))
    assert rows(silver("customers"), "id", "bio") == [(10, "in silver"), (20, "in this increment")]


def test_snapshot_reads_and_streamed_changes_mix_by_seq(builder, run, silver):
    b = _customers(builder)
    b.read({"id": 1, "name": "snap", "bio": None, "balance": None})
    b.update({"id": 1, "name": "streamed", "bio": None, "balance": None})
    b.read({"id": 2, "name": "snap2", "bio": None, "balance": None})
    b.delete({"id": 2})
    b.commit()
    run(_decl(b))
    assert rows(silver("customers"), "id", "name") == [(1, "streamed")]


def test_soft_deletes_keep_the_row_flagged(builder, run, silver):
    b = _customers(builder)
    b.insert({"id": 1, "name": "a", "bio": None, "balance": None})
    b.insert({"id": 2, "name": "b", "bio": None, "balance": None}).commit()
    decl = _decl(b, deletes="soft", soft_delete=SoftDeleteColumns(flag="is_deleted", timestamp="deleted_at"))
    run(decl)
    b.next_tx(ts_ms=1_800_000_000_000).delete({"id": 1}).commit()
    run(decl)
    got = {r["id"]: (r["name"], r["is_deleted"], r["deleted_at"] is not None) for r in silver("customers").collect()}
    assert got == {1: ("a", True, True), 2: ("b", False, False)}
    # a change superseded by a truncate in the same increment is not applied
    b.insert({"id": 1, "name": "back", "bio": None, "balance": None}).truncate().commit()
    run(decl)
    assert rows(silver("customers"), "id", "name", "is_deleted") == [(1, "a", True), (2, "b", True)]


def test_rerunning_an_applied_increment_changes_nothing(builder, run, silver, spark, root):
    b = _customers(builder)
    b.insert({"id": 1, "name": "a", "bio": "x", "balance": None}).insert({"id": 2, "name": "b", "bio": "y",
                                                                          "balance": None})
    b.commit()
    run(_decl(b))
    b.update({"id": 1, "name": "a2", "bio": PLACEHOLDER, "balance": None}).delete({"id": 2}).truncate()
    b.insert({"id": 3, "name": "c", "bio": None, "balance": None}).commit()
    run(_decl(b))
    before = silver("customers").drop("_cdc_ts")
    expected = spark.createDataFrame(before.collect(), before.schema)
    # forget the progress: the next run re-reads and re-applies everything
    import shutil
    shutil.rmtree(f"{root}/silver/_cdc/progress/customers")
    run(_decl(b))
    assert_df_equality(silver("customers").drop("_cdc_ts"), expected, ignore_row_order=True)


def test_columns_renames_and_casts(builder, run, silver):
    b = _customers(builder)
    b.insert({"id": 1, "name": "a", "bio": "secret", "balance": enc_decimal("12.34", 2)}).commit()
    decl = _decl(b, exclude_columns=["bio"], rename={"name": "full name"}, casts={"balance": "double"})
    run(decl)
    df = silver("customers")
    assert df.columns == ["id", "full name", "balance", "_cdc_seq", "_cdc_op", "_cdc_ts"]
    assert dict(df.dtypes)["balance"] == "double"
    assert rows(df, "id", "full name", "balance") == [(1, "a", 12.34)]


def test_declared_keys_other_than_the_primary_key(builder, run, silver):
    b = builder("accounts")
    b.register([int32("id", optional=False), string("email"), string("name")], ["id"])
    b.insert({"id": 1, "email": "a@x", "name": "a"}).insert({"id": 2, "email": "b@x", "name": "b"})
    b.delete({"id": 1}, before={"id": 1, "email": "a@x", "name": "a"})  # REPLICA IDENTITY FULL
    b.commit()
    run(SilverTable(table="accounts", source=b.topic, keys=["email"]))
    assert rows(silver("accounts"), "email", "name") == [("b@x", "b")]
