"""message.key.columns (Key.CustomKeyMapper)."""

from __future__ import annotations

import pytest

from cdc_sources.common.key_columns import KeyColumns

COLUMNS = ("id", "a", "b", "tenant")


def keys(text: str) -> KeyColumns:
    built, problems = KeyColumns.from_options({"message.key.columns": text})
    assert problems == []
    return built


class TestChoice:
    def test_absent_option_means_primary_key(self) -> None:
        built, problems = KeyColumns.from_options({})
        assert problems == []
        assert built.for_table("public", "t", COLUMNS) is None

    def test_columns_in_the_order_written(self) -> None:
        assert keys("public.t:b,a").for_table("public", "t", COLUMNS) == ("b", "a")

    def test_several_tables(self) -> None:
        built = keys("inventory.customers:pk1,pk2;(.*).purchaseorders:pk3,pk4")
        assert built.for_table("inventory", "customers", ("pk2", "pk1", "x")) == ("pk1", "pk2")
        assert built.for_table("shop", "purchaseorders", ("pk4", "pk3")) == ("pk3", "pk4")
        assert built.for_table("shop", "customers", ("pk1",)) is None

    def test_table_part_is_anchored(self) -> None:
        assert keys("public.t:a").for_table("public", "t2", COLUMNS) is None

    def test_column_part_is_a_regex(self) -> None:
        assert keys("public.t:(a|b)").for_table("public", "t", COLUMNS) == ("a", "b")

    def test_case_is_ignored(self) -> None:
        assert keys("PUBLIC.T:A").for_table("public", "t", COLUMNS) == ("a",)

    def test_unknown_columns_fall_back_to_the_primary_key(self) -> None:
        assert keys("public.t:nope").for_table("public", "t", COLUMNS) is None

    def test_partly_known_columns_are_used(self) -> None:
        assert keys("public.t:nope,tenant").for_table("public", "t", COLUMNS) == ("tenant",)

    def test_a_column_named_twice_is_listed_once(self) -> None:
        assert keys("public.t:a;public\\..*:a,id").for_table("public", "t", COLUMNS) == ("a", "id")

    def test_whitespace_around_entries_and_columns(self) -> None:
        assert keys(" public.t : b , a ;").for_table("public", "t", COLUMNS) is None  # "public.t " keeps its space
        assert keys(" public.t:b , a ").for_table("public", "t", COLUMNS) == ("b", "a")

    def test_catalog(self) -> None:
        built = keys("shop.dbo.t:a")
        assert built.for_table("dbo", "t", COLUMNS, catalog="shop") == ("a",)
        assert built.for_table("dbo", "t", COLUMNS) is None

    def test_cached(self) -> None:
        built = keys("public.t:a")
        assert built.for_table("public", "t", COLUMNS) is built.for_table("public", "t", list(COLUMNS))


class TestProblems:
    def test_empty_value(self) -> None:
        _, problems = KeyColumns.from_options({"message.key.columns": ""})
        assert [p.path for p in problems] == ["message.key.columns"]
        assert "must not be empty" in problems[0].message

    @pytest.mark.parametrize(
        "text",
        ["public.t", "public.t:", ":a", "public.t:a,", "public.t:a;;x.y:b", ";public.t:a", "a:b:c", " "],
    )
    def test_bad_format(self, text: str) -> None:
        _, problems = KeyColumns.from_options({"message.key.columns": text})
        assert problems
        assert all(p.path == "message.key.columns" for p in problems)
        assert "invalid format" in problems[0].message

    def test_trailing_semicolons_are_fine(self) -> None:
        built, problems = KeyColumns.from_options({"message.key.columns": "public.t:a;;"})
        assert problems == []
        assert built.for_table("public", "t", COLUMNS) == ("a",)

    def test_invalid_regex(self) -> None:
        _, problems = KeyColumns.from_options({"message.key.columns": "public.(t:a"})
        assert [p.path for p in problems] == ["message.key.columns"]
        assert "public.(t.a" in problems[0].message
