"""Which names a renamed column had in each schema version, and which silver columns to rename."""

from __future__ import annotations

import datetime as dt

from silver.connect_schema import ConnectField, ConnectSchema
from silver.declarations import SilverTable
from silver.renames import current_names, silver_renames
from silver.schema_history import TopicSchema, renames_by_id

TOPIC = "shop.public.p"
T0 = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)


def version(sid: str, *names: str, renamed: tuple[tuple[str, str], ...] = ()) -> TopicSchema:
    row = ConnectSchema("struct", fields=tuple(ConnectField(n, ConnectSchema("int32")) for n in names))
    return TopicSchema(sid, ("id",), None, row, T0, renamed)


def test_names_follow_renames_to_the_newest_version():
    history = [version("v1", "id", "price", "name"),
               version("v2", "id", "unit_price", "name", renamed=(("price", "unit_price"),)),
               version("v3", "id", "cost", "name", "price", renamed=(("unit_price", "cost"),))]
    assert current_names(history) == {"v1": {"price": "cost"}, "v2": {"unit_price": "cost"}, "v3": {}}


def test_a_dropped_column_is_not_followed_into_a_later_one_of_the_same_name():
    history = [version("v1", "id", "a"), version("v2", "id"), version("v3", "id", "a"),
               version("v4", "id", "b", renamed=(("a", "b"),))]
    assert current_names(history) == {"v1": {}, "v2": {}, "v3": {"a": "b"}, "v4": {}}


def test_silver_renames_apply_once_and_follow_the_declaration():
    history = [version("v1", "id", "price"), version("v2", "id", "unit_price", renamed=(("price", "unit_price"),)),
               version("v3", "id", "cost", renamed=(("unit_price", "cost"),))]
    plain = SilverTable(table="p", source=TOPIC)
    assert silver_renames(plain, history, ["id", "price", "_cdc_seq"]) == [("price", "cost")]
    assert silver_renames(plain, history[:2], ["id", "price"]) == [("price", "unit_price")]
    assert silver_renames(plain, history, ["id", "cost"]) == []  # already done: nothing (idempotent)
    assert silver_renames(plain, history, ["id", "price", "cost"]) == []  # the new name is taken
    renamed = SilverTable(table="p", source=TOPIC, rename={"price": "price_eur", "cost": "cost_eur"})
    assert silver_renames(renamed, history, ["id", "price_eur"]) == [("price_eur", "cost_eur")]
    excluded = SilverTable(table="p", source=TOPIC, exclude_columns=["cost"])
    assert silver_renames(excluded, history, ["id", "price"]) == []


def test_postgres_renames_are_found_from_column_ids():
    before = version("v1", "id", "price", "name")
    before = TopicSchema("v1", ("id",), None, before.row, T0, (), (1, 2, 3))
    after = version("v2", "id", "unit_price", "name", "price")
    renamed = TopicSchema("v2", ("id",), None, version("v2", "id", "unit_price", "name").row, T0, (), (1, 2, 3))
    readded = TopicSchema("v2", ("id",), None, after.row, T0, (), (1, 2, 3, 4))  # price re-added as attnum 4
    dropped = TopicSchema("v2", ("id",), None, version("v2", "id", "name", "price").row, T0, (), (1, 3, 4))
    assert renames_by_id(before, renamed) == (("price", "unit_price"),)
    assert renames_by_id(before, readded) == (("price", "unit_price"),)  # and a new column took the old name
    assert renames_by_id(before, dropped) == ()  # dropped and re-added: another column
    assert renames_by_id(version("v1", "id", "price"), renamed) == ()  # no ids recorded (older history)
