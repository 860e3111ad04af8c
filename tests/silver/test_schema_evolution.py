"""Schema evolution: added/dropped columns, safe widening, incompatible changes, modes."""

from __future__ import annotations

import pytest

from silver.declarations import SilverTable
from tests.silver.bronze_builder import col, decimal, enc_decimal, int32, int64, string
from tests.silver.conftest import rows

pytestmark = pytest.mark.spark


def _start(builder, run, **kw):
    b = builder("items")
    b.register([int32("id", optional=False), string("name"), int32("qty"), decimal("price", 10, 2)], ["id"])
    b.insert({"id": 1, "name": "a", "qty": 1, "price": enc_decimal("1.00", 2)}).commit()
    decl = SilverTable(table="items", source=b.topic, **kw)
    run(decl)
    return b, decl


def test_added_column_appears_and_existing_rows_read_null(builder, run, silver):
    b, decl = _start(builder, run)
    b.register([int32("id", optional=False), string("name"), int32("qty"), decimal("price", 10, 2), string("color")],
               ["id"])
    b.insert({"id": 2, "name": "b", "qty": 2, "price": None, "color": "red"}).commit()
    (res,) = run(decl).tables
    assert res.schema_changes == ("added column color string",)
    assert rows(silver("items"), "id", "color") == [(1, None), (2, "red")]


def test_dropped_column_stays_and_is_null_from_then_on(builder, run, silver):
    b, decl = _start(builder, run)
    b.register([int32("id", optional=False), string("name"), decimal("price", 10, 2)], ["id"])
    b.update({"id": 1, "name": "a2", "price": None}).insert({"id": 3, "name": "c", "price": None}).commit()
    run(decl)
    assert "qty" in silver("items").columns
    assert rows(silver("items"), "id", "name", "qty") == [(1, "a2", None), (3, "c", None)]


def test_safe_widening_int_to_bigint_and_decimal_precision(builder, run, silver):
    b, decl = _start(builder, run)
    b.register([int32("id", optional=False), string("name"), int64("qty"), decimal("price", 14, 2)], ["id"])
    b.insert({"id": 2, "name": "b", "qty": 10_000_000_000, "price": enc_decimal("123456789012.34", 2)}).commit()
    (res,) = run(decl).tables
    assert sorted(res.schema_changes) == ["widened column price to decimal(14,2)", "widened column qty to bigint"]
    types = dict(silver("items").dtypes)
    assert (types["qty"], types["price"]) == ("bigint", "decimal(14,2)")
    assert rows(silver("items"), "id", "qty") == [(1, 1), (2, 10_000_000_000)]


def test_narrowed_source_type_is_cast_up_to_silver(builder, run, silver):
    b, decl = _start(builder, run)
    b.register([int32("id", optional=False), string("name"), col("qty", "int16"), decimal("price", 10, 2)], ["id"])
    b.insert({"id": 2, "name": "b", "qty": 7, "price": None}).commit()
    (res,) = run(decl).tables
    assert res.status == "applied" and dict(silver("items").dtypes)["qty"] == "int"


def test_incompatible_change_stops_that_table_only_and_leaves_it_untouched(builder, run, silver, root):
    b, decl = _start(builder, run)
    other = builder("others")
    other.register([int32("id", optional=False), string("v")], ["id"])
    other.insert({"id": 1, "v": "x"}).commit()
    other_decl = SilverTable(table="others", source=other.topic)
    b.register([int32("id", optional=False), string("name"), string("qty"), decimal("price", 10, 2)], ["id"])
    b.insert({"id": 2, "name": "b", "qty": "many", "price": None}).commit()
    before = sorted(tuple(r) for r in silver("items").collect())
    result = run(decl, other_decl)
    failed, ok = result.tables
    assert failed.status == "failed" and "column 'qty' changed type int -> string" in (failed.error or "")
    assert ok.status == "applied"
    assert sorted(tuple(r) for r in silver("items").collect()) == before
    # still failing next time: progress did not move
    assert run(decl).tables[0].status == "failed"


def test_strict_mode_rejects_any_schema_change(builder, run, silver):
    b, decl = _start(builder, run, schema_evolution="strict")
    b.register([int32("id", optional=False), string("name"), int32("qty"), decimal("price", 10, 2), string("x")],
               ["id"])
    b.insert({"id": 2, "name": "b", "qty": 1, "price": None, "x": "y"}).commit()
    (res,) = run(decl).tables
    assert res.status == "failed" and "new source column 'x'" in (res.error or "")
    assert silver("items").count() == 1


def test_ignore_mode_keeps_the_silver_schema(builder, run, silver):
    b, decl = _start(builder, run, schema_evolution="ignore")
    b.register([int32("id", optional=False), string("name"), int32("qty"), decimal("price", 10, 2), string("x")],
               ["id"])
    b.insert({"id": 2, "name": "b", "qty": 1, "price": None, "x": "y"}).commit()
    (res,) = run(decl).tables
    assert res.status == "applied" and "x" not in silver("items").columns
    assert rows(silver("items"), "id", "name") == [(1, "a"), (2, "b")]


def test_key_change_in_the_source_stops_the_table(builder, run):
    b, decl = _start(builder, run)
    b.register([int32("id", optional=False), string("name"), int32("qty"), decimal("price", 10, 2)], ["id", "name"])
    b.insert({"id": 2, "name": "b", "qty": 1, "price": None}).commit()
    (res,) = run(decl).tables
    assert res.status == "failed" and "rebuild" in (res.error or "")


def _struct(name: str, *fields: dict) -> dict:
    return col(name, "struct", fields=list(fields))


def test_struct_column_gaining_a_field_widens_across_versions_and_in_silver(builder, run, silver):
    """struct<x> -> struct<x,y>: rows of both versions in one increment, then the silver column
    widened; classic Spark cannot cast between structs of different field counts."""
    b = builder("shapes")
    b.register([int32("id", optional=False), _struct("pos", int32("x"))], ["id"])
    b.insert({"id": 1, "pos": {"x": 1}}).commit()
    decl = SilverTable(table="shapes", source=b.topic)
    run(decl)
    b.insert({"id": 2, "pos": {"x": 2}})
    b.register([int32("id", optional=False), _struct("pos", int32("x"), int32("y"))], ["id"])
    b.insert({"id": 3, "pos": {"x": 3, "y": 30}}).insert({"id": 4, "pos": None}).commit()
    (res,) = run(decl).tables
    assert res.status == "applied", res.error
    assert res.schema_changes == ("widened column pos to struct<x:int,y:int>",)
    got = {r["id"]: (None if r["pos"] is None else r["pos"].asDict()) for r in silver("shapes").collect()}
    assert got == {1: {"x": 1, "y": None}, 2: {"x": 2, "y": None}, 3: {"x": 3, "y": 30}, 4: None}


def test_added_column_whose_name_needs_column_mapping(builder, run, silver):
    b, decl = _start(builder, run)
    b.register([int32("id", optional=False), string("name"), int32("qty"), decimal("price", 10, 2),
                string("ship to")], ["id"])
    b.insert({"id": 2, "name": "b", "qty": 2, "price": None, "ship to": "Berlin"}).commit()
    (res,) = run(decl).tables
    assert res.status == "applied", res.error
    assert rows(silver("items"), "id", "name", "ship to") == [(1, "a", None), (2, "b", "Berlin")]


def test_renamed_column_keeps_its_values(builder, run, silver):
    """The one classic-Spark proof of renames (Delta column mapping there; a rewrite on Sail); the
    real-connector proofs are in tests/pipelines/test_silver_renames.py."""
    b, decl = _start(builder, run)
    b.insert({"id": 2, "name": "b", "qty": 2, "price": enc_decimal("2.00", 2)}).commit()
    run(decl)
    b.update({"id": 1, "name": "a", "qty": 5, "price": enc_decimal("1.00", 2)})  # before the rename, same increment
    b.register([int32("id", optional=False), string("name"), int32("amount"), decimal("price", 10, 2)], ["id"],
               renamed=[("qty", "amount")])
    b.insert({"id": 3, "name": "c", "amount": 3, "price": None}).commit()
    (res,) = run(decl).tables
    assert res.schema_changes == ("renamed column qty to amount",)
    assert "qty" not in silver("items").columns
    assert rows(silver("items"), "id", "amount") == [(1, 5), (2, 2), (3, 3)]
    (again,) = run(decl).tables  # nothing new: nothing renamed again
    assert again.schema_changes == ()
