"""SCD1 apply semantics: upserts, deletes, tombstones, truncates, TOAST, key changes, dedupe."""

from __future__ import annotations

from decimal import Decimal

import pytest
from chispa import assert_df_equality
from pyspark.sql import functions as sf

from silver import increment
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
    expected = spark.createDataFrame(
        [(1, "ann3", "x", Decimal("11.00"), 5, "u"), (3, "cid", None, None, 3, "c")],
        "id int, name string, bio string, balance decimal(10,2), _cdc_seq bigint, _cdc_op string",
    )
    assert_df_equality(silver("customers").drop("_cdc_ts"), expected, ignore_row_order=True, ignore_nullable=True)


def test_second_run_applies_only_new_rows_and_deletes_existing(builder, run, silver):
    b = _customers(builder)
    b.insert({"id": 1, "name": "a", "bio": "b", "balance": None}).insert(
        {"id": 2, "name": "b", "bio": "b", "balance": None}
    )
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
    # a re-create removed by a truncate in the same increment is kept, flagged by the truncate
    b.insert({"id": 1, "name": "back", "bio": None, "balance": None}).truncate().commit()
    run(decl)
    assert rows(silver("customers"), "id", "name", "is_deleted", "_cdc_op") == [
        (1, "back", True, "t"),
        (2, "b", True, "t"),
    ]


# ---- soft deletes: every row that existed is kept, flagged, with its last values -------------

SOFT_SCHEMA = (
    "id int, name string, bio string, balance decimal(10,2), _cdc_seq bigint, _cdc_op string, "
    "_cdc_ts_ms bigint, _cdc_deleted boolean, _cdc_deleted_at_ms bigint"
)


def _soft(b):
    return _decl(b, deletes="soft")


def _soft_state(df):
    """Every column, timestamps as epoch milliseconds (exact, no time zone involved)."""
    return df.select(
        "id",
        "name",
        "bio",
        "balance",
        "_cdc_seq",
        "_cdc_op",
        sf.unix_millis("_cdc_ts").alias("_cdc_ts_ms"),
        "_cdc_deleted",
        sf.unix_millis("_cdc_deleted_at").alias("_cdc_deleted_at_ms"),
    )


def _assert_soft(spark, df, expected):
    assert_df_equality(
        _soft_state(df), spark.createDataFrame(expected, SOFT_SCHEMA), ignore_row_order=True, ignore_nullable=True
    )


T0, T1, T2, T3 = 1_700_000_000_000, 1_700_000_100_000, 1_700_000_200_000, 1_700_000_300_000


def test_soft_created_and_deleted_in_the_first_increment_is_inserted_flagged(builder, run, silver, spark):
    b = _customers(builder)
    b.insert({"id": 1, "name": "a", "bio": "long", "balance": enc_decimal("1.00", 2)})  # seq 1
    b.update({"id": 1, "name": "a2", "bio": PLACEHOLDER, "balance": enc_decimal("2.00", 2)})  # 2, TOAST
    b.next_tx(ts_ms=T1).delete({"id": 1})  # seq 3 (+ tombstone 4)
    b.insert({"id": 2, "name": "kept", "bio": None, "balance": None})  # 5
    b.delete({"id": 3})  # 6 (+7): a key-only image of a row silver never saw: the key, flagged
    b.commit()
    (res,) = run(_soft(b)).tables
    assert res.status == "applied", res.error
    _assert_soft(
        spark,
        silver("customers"),
        [
            (1, "a2", "long", Decimal("2.00"), 3, "d", T1, True, T1),
            (2, "kept", None, None, 5, "c", T1, False, None),
            (3, None, None, None, 6, "d", T1, True, T1),
        ],
    )


def test_soft_created_and_deleted_in_a_later_increment_and_update_then_delete(builder, run, silver, spark):
    b = _customers(builder)
    b.insert({"id": 1, "name": "a", "bio": "long", "balance": enc_decimal("1.00", 2)})  # 1
    b.insert({"id": 2, "name": "b", "bio": "bio-b", "balance": None}).commit()  # 2
    run(_soft(b))
    b.next_tx(ts_ms=T1)
    b.insert({"id": 5, "name": "brief", "bio": "x", "balance": None})  # 3
    b.update({"id": 5, "name": "brief2", "bio": PLACEHOLDER, "balance": None})  # 4
    b.delete({"id": 5}, tombstone=False)  # 5
    b.update({"id": 1, "name": "a2", "bio": PLACEHOLDER, "balance": enc_decimal("3.00", 2)})  # 6
    b.next_tx(ts_ms=T2).delete({"id": 1})  # 7 (+8): keeps the update's values, bio from silver
    b.delete({"id": 2}, tombstone=False)  # 9: no values in the increment: silver's stay
    b.commit()
    (res,) = run(_soft(b)).tables
    assert res.status == "applied", res.error
    _assert_soft(
        spark,
        silver("customers"),
        [
            (1, "a2", "long", Decimal("3.00"), 7, "d", T2, True, T2),
            (2, "b", "bio-b", None, 9, "d", T2, True, T2),
            (5, "brief2", "x", None, 5, "d", T1, True, T1),
        ],
    )


def test_soft_delete_takes_a_full_before_image(builder, run, silver, spark):
    b = _customers(builder)
    b.insert({"id": 1, "name": "a", "bio": "in silver", "balance": None}).commit()  # 1
    run(_soft(b))
    b.next_tx(ts_ms=T1)
    # REPLICA IDENTITY FULL / MySQL: the delete carries the whole row; no earlier event of id 7 anywhere
    b.delete({"id": 7}, before={"id": 7, "name": "seven", "bio": "b7", "balance": enc_decimal("7.70", 2)})  # 2, 3
    # the image's placeholder is never written: bio keeps silver's value
    b.delete({"id": 1}, before={"id": 1, "name": "a-last", "bio": PLACEHOLDER, "balance": None})  # 4, 5
    b.commit()
    run(_soft(b))
    _assert_soft(
        spark,
        silver("customers"),
        [
            (1, "a-last", "in silver", None, 4, "d", T1, True, T1),
            (7, "seven", "b7", Decimal("7.70"), 2, "d", T1, True, T1),
        ],
    )


def test_soft_truncate_keeps_rows_created_before_it_in_the_increment(builder, run, silver, spark):
    b = _customers(builder)
    b.insert({"id": 1, "name": "a", "bio": None, "balance": None})  # 1
    b.insert({"id": 2, "name": "b", "bio": "bio-b", "balance": None}).commit()  # 2
    run(_soft(b))
    b.next_tx(ts_ms=T1)
    b.insert({"id": 3, "name": "c", "bio": None, "balance": None})  # 3
    b.update({"id": 2, "name": "b2", "bio": PLACEHOLDER, "balance": None})  # 4
    b.next_tx(ts_ms=T2).truncate()  # 5
    b.next_tx(ts_ms=T3)
    b.insert({"id": 4, "name": "d", "bio": None, "balance": None})  # 6
    b.insert({"id": 5, "name": "e", "bio": None, "balance": None})  # 7
    b.truncate()  # 8
    b.insert({"id": 6, "name": "f", "bio": None, "balance": None})  # 9
    b.delete({"id": 4}, tombstone=False)  # 10: deleted after the truncate that removed it: its own time
    b.commit()
    (res,) = run(_soft(b)).tables
    assert (res.status, res.truncates) == ("applied", 2), res.error
    # every row that existed is there; each is flagged by the first truncate after its last change
    _assert_soft(
        spark,
        silver("customers"),
        [
            (1, "a", None, None, 5, "t", T2, True, T2),
            (2, "b2", "bio-b", None, 5, "t", T2, True, T2),
            (3, "c", None, None, 5, "t", T2, True, T2),
            (4, "d", None, None, 10, "d", T3, True, T3),
            (5, "e", None, None, 8, "t", T3, True, T3),
            (6, "f", None, None, 9, "c", T3, False, None),
        ],
    )


def test_soft_truncate_in_the_first_increment(builder, run, silver, spark):
    b = _customers(builder)
    b.insert({"id": 1, "name": "a", "bio": None, "balance": None})  # 1
    b.next_tx(ts_ms=T1).truncate()  # 2
    b.insert({"id": 2, "name": "b", "bio": None, "balance": None}).commit()  # 3
    run(_soft(b))
    _assert_soft(
        spark,
        silver("customers"),
        [(1, "a", None, None, 2, "t", T1, True, T1), (2, "b", None, None, 3, "c", T1, False, None)],
    )


def _soft_scenario(b):
    b.insert({"id": 1, "name": "a", "bio": "x", "balance": None})
    b.insert({"id": 2, "name": "b", "bio": "y", "balance": None}).commit()
    yield
    b.next_tx(ts_ms=T1)
    b.update({"id": 1, "name": "a2", "bio": PLACEHOLDER, "balance": None}).delete({"id": 1})
    b.insert({"id": 3, "name": "c", "bio": "z", "balance": None}).delete({"id": 3})
    b.delete({"id": 8}, before={"id": 8, "name": "h", "bio": "w", "balance": None})
    b.insert({"id": 4, "name": "d", "bio": None, "balance": None})
    b.next_tx(ts_ms=T2).truncate()
    b.insert({"id": 5, "name": "e", "bio": None, "balance": None}).commit()


def test_soft_replaying_an_increment_changes_nothing(builder, run, silver, spark, root):
    b = _customers(builder)
    steps = _soft_scenario(b)
    next(steps)
    run(_soft(b))
    next(steps, None)
    run(_soft(b))
    before = _soft_state(silver("customers"))
    expected = spark.createDataFrame(before.collect(), before.schema)
    assert expected.count() == 6 and expected.where("_cdc_deleted").count() == 5
    import shutil

    shutil.rmtree(f"{root}/silver/_cdc/progress/customers")  # the next run re-applies everything
    (res,) = run(_soft(b)).tables
    assert res.status == "applied", res.error
    assert_df_equality(_soft_state(silver("customers")), expected, ignore_row_order=True)


def test_soft_killed_between_merge_and_truncate_then_rerun(builder, run, silver, spark, root, monkeypatch):
    b = _customers(builder)
    steps = _soft_scenario(b)
    next(steps)
    run(_soft(b))
    next(steps, None)

    def killed(*args, **kwargs):
        raise RuntimeError("killed before the truncate")

    with monkeypatch.context() as m:
        m.setattr(increment, "truncate_sql", killed)
        (res,) = run(_soft(b)).tables
    assert res.status != "applied" and "killed before the truncate" in (res.error or "")
    assert silver("customers").where("_cdc_op = 't'").count() == 1  # MERGE done (id 4), truncate not
    (res,) = run(_soft(b)).tables
    assert res.status == "applied", res.error
    _assert_soft(
        spark,
        silver("customers"),
        [
            (1, "a2", "x", None, 4, "d", T1, True, T1),
            (2, "b", "y", None, 12, "t", T2, True, T2),
            (3, "c", "z", None, 7, "d", T1, True, T1),
            (4, "d", None, None, 12, "t", T2, True, T2),
            (5, "e", None, None, 13, "c", T2, False, None),
            (8, "h", "w", None, 9, "d", T1, True, T1),
        ],
    )


def test_soft_recreate_after_delete_unflags_and_a_late_tombstone_keeps_the_delete(builder, run, silver, spark):
    b = _customers(builder)
    b.insert({"id": 1, "name": "a", "bio": "x", "balance": None})  # 1
    b.next_tx(ts_ms=T1).delete({"id": 1}, tombstone=False).commit()  # 2
    run(_soft(b))
    _assert_soft(spark, silver("customers"), [(1, "a", "x", None, 2, "d", T1, True, T1)])
    b.raw(key='{"id":1}', value=None, op=None, schema_id=None).commit()  # 3: its tombstone, one batch later
    run(_soft(b))
    _assert_soft(spark, silver("customers"), [(1, "a", "x", None, 3, "d", T1, True, T1)])
    b.next_tx(ts_ms=T2).insert({"id": 1, "name": "again", "bio": None, "balance": None}).commit()  # 4
    run(_soft(b))
    _assert_soft(spark, silver("customers"), [(1, "again", None, None, 4, "c", T2, False, None)])


def test_rerunning_an_applied_increment_changes_nothing(builder, run, silver, spark, root):
    b = _customers(builder)
    b.insert({"id": 1, "name": "a", "bio": "x", "balance": None}).insert(
        {"id": 2, "name": "b", "bio": "y", "balance": None}
    )
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


def test_soft_delete_after_a_bad_update_keeps_the_last_good_values(builder, run, silver, spark, root):
    b = _customers(builder)
    b.insert({"id": 1, "name": "a", "bio": "x", "balance": enc_decimal("1.00", 2)})  # 1
    b.update({"id": 1, "name": "bad", "bio": "x", "balance": "%%%"})  # 2: quarantined
    b.next_tx(ts_ms=T1).delete({"id": 1}, tombstone=False)  # 3
    b.commit()
    (res,) = run(_soft(b)).tables
    assert (res.status, res.quarantined) == ("applied", 1), res.error
    _assert_soft(spark, silver("customers"), [(1, "a", "x", Decimal("1.00"), 3, "d", T1, True, T1)])
    quarantined = spark.read.format("delta").load(f"{root}/silver/_quarantine")
    assert rows(quarantined, "seq") == [(2,)]


def test_soft_primary_key_change_keeps_the_old_key_flagged(builder, run, silver, spark):
    b = _customers(builder)
    b.insert({"id": 1, "name": "a", "bio": "in silver", "balance": None}).commit()  # 1
    run(_soft(b))
    b.next_tx(ts_ms=T1)
    b.insert({"id": 2, "name": "b", "bio": "in this increment", "balance": None})  # 2
    b.change_key({"id": 1}, {"id": 10, "name": "a", "bio": PLACEHOLDER, "balance": None})  # 3, 4, 5
    b.change_key({"id": 2}, {"id": 20, "name": "b", "bio": PLACEHOLDER, "balance": None})  # 6, 7, 8
    b.commit()
    run(_soft(b))
    _assert_soft(
        spark,
        silver("customers"),
        [
            (1, "a", "in silver", None, 3, "d", T1, True, T1),
            (2, "b", "in this increment", None, 6, "d", T1, True, T1),
            (10, "a", "in silver", None, 5, "c", T1, False, None),
            (20, "b", "in this increment", None, 8, "c", T1, False, None),
        ],
    )


def test_soft_deletes_with_declared_keys(builder, run, silver):
    b = builder("accounts")
    b.register([int32("id", optional=False), string("email"), string("name")], ["id"])
    b.insert({"id": 1, "email": "a@x", "name": "a"}).update({"id": 1, "email": "a@x", "name": "a2"})
    b.delete({"id": 1}, before={"id": 1, "email": "a@x", "name": "a2"})
    b.delete({"id": 2}, before={"id": 2, "email": "b@x", "name": "b"})  # never seen: taken from the image
    b.commit()
    run(SilverTable(table="accounts", source=b.topic, keys=["email"], deletes="soft"))
    assert rows(silver("accounts"), "email", "id", "name", "_cdc_deleted", "_cdc_op") == [
        ("a@x", 1, "a2", True, "d"),
        ("b@x", 2, "b", True, "d"),
    ]


def test_soft_deletes_with_awkward_column_names(builder, run, silver):
    b = builder("Awkward")
    b.register([int32("select", optional=False), string("dot.ted"), string("we`ird")], ["select"])
    b.insert({"select": 1, "dot.ted": "a", "we`ird": "w"}).commit()
    decl = SilverTable(table="awkward", source=b.topic, keys=["select"], deletes="soft")
    run(decl)
    b.insert({"select": 2, "dot.ted": "b", "we`ird": "x"}).delete({"select": 2}).delete({"select": 1}).commit()
    (res,) = run(decl).tables
    assert res.status == "applied", res.error
    assert rows(silver("awkward"), "select", "dot.ted", "we`ird", "_cdc_deleted", "_cdc_op") == [
        (1, "a", "w", True, "d"),
        (2, "b", "x", True, "d"),
    ]
