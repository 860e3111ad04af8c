"""Truncate, asterisk-mask and hash transforms (TruncateColumn, MaskStrings)."""

from __future__ import annotations

import hashlib
from typing import Any

import pytest

from cdc_sources.common.column_transforms import JDBC_CHARACTER_TYPES, ColumnTransforms


def transforms(options: dict[str, str]) -> ColumnTransforms:
    built, problems = ColumnTransforms.from_options(options)
    assert problems == []
    return built


def convert(options: dict[str, str], value: Any, *, is_string: bool = True, length: int | None = None) -> Any:
    fn = transforms(options).transform_for("public", "t", "c", is_string=is_string, length=length)
    assert fn is not None
    return fn(value)


class TestNoRule:
    def test_no_options_cost_nothing(self) -> None:
        built = transforms({})
        assert built.for_column("public", "t", "c", is_string=True, length=10) is None
        assert built.transform_for("public", "t", "c", is_string=True, length=10) is None

    def test_unmatched_column(self) -> None:
        built = transforms({"column.mask.with.3.chars": "public.t.other"})
        assert built.transform_for("public", "t", "c", is_string=True, length=None) is None


class TestTruncate:
    OPTIONS = {"column.truncate.to.3.chars": "public.t.c"}

    @pytest.mark.parametrize(("value", "expected"), [("abcdef", "abc"), ("abc", "abc"), ("ab", "ab"), ("", "")])
    def test_only_longer_values_are_cut(self, value: str, expected: str) -> None:
        assert convert(self.OPTIONS, value) == expected

    def test_schema_parameter_and_type_unchanged(self) -> None:
        found = transforms(self.OPTIONS).for_column("public", "t", "c", is_string=True, length=10)
        assert found is not None
        assert dict(found.schema_parameters) == {"truncateLength": "3"}
        assert found.option == "column.truncate.to.3.chars"

    @pytest.mark.parametrize("length", [0, 2, 3])
    def test_nothing_when_the_column_cannot_be_longer(self, length: int) -> None:
        assert transforms(self.OPTIONS).for_column("public", "t", "c", is_string=True, length=length) is None

    @pytest.mark.parametrize("length", [None, -1, 4])
    def test_applies_when_length_unknown_or_larger(self, length: int | None) -> None:
        assert convert(self.OPTIONS, "abcdef", length=length) == "abc"

    def test_binary_values_are_cut_to_bytes(self) -> None:
        assert convert(self.OPTIONS, b"\x00\x01\x02\x03") == b"\x00\x01\x02"
        assert convert(self.OPTIONS, bytearray(b"abcd")) == b"abc"
        assert convert(self.OPTIONS, b"ab") == b"ab"

    def test_acts_on_the_value_type_not_the_column_type(self) -> None:
        # Debezium truncates whatever String reaches it (e.g. decimal.handling.mode=string).
        assert convert(self.OPTIONS, "12345.67", is_string=False) == "123"
        assert convert(self.OPTIONS, 12345, is_string=False) == 12345
        assert convert(self.OPTIONS, None) is None

    def test_zero_chars(self) -> None:
        assert convert({"column.truncate.to.0.chars": "public.t.c"}, "abc") == ""

    def test_counts_utf16_units_like_java(self) -> None:
        options = {"column.truncate.to.3.chars": "public.t.c"}
        assert convert(options, "h\U0001f600llo") == "h\U0001f600"  # the emoji counts 2
        assert convert(options, "héllo") == "hél"

    def test_drops_a_character_split_by_the_cut(self) -> None:
        # Java would keep half the surrogate pair; no UTF-8 JSON can carry that.
        assert convert({"column.truncate.to.2.chars": "public.t.c"}, "h\U0001f600llo") == "h"

    def test_short_astral_value_is_untouched(self) -> None:
        assert convert({"column.truncate.to.4.chars": "public.t.c"}, "\U0001f600\U0001f600") == "\U0001f600\U0001f600"


class TestMask:
    OPTIONS = {"column.mask.with.5.chars": "public.t.c"}

    def test_every_value_becomes_asterisks(self) -> None:
        assert convert(self.OPTIONS, "secret") == "*****"
        assert convert(self.OPTIONS, "") == "*****"

    def test_null_is_masked_too(self) -> None:
        assert convert(self.OPTIONS, None) == "*****"

    def test_zero_chars_gives_empty_string(self) -> None:
        assert convert({"column.mask.with.0.chars": "public.t.c"}, "secret") == ""

    def test_schema_parameter(self) -> None:
        found = transforms(self.OPTIONS).for_column("public", "t", "c", is_string=True, length=None)
        assert found is not None
        assert dict(found.schema_parameters) == {"masked": "true"}

    def test_non_character_column_keeps_values_but_is_marked(self) -> None:
        found = transforms(self.OPTIONS).for_column("public", "t", "c", is_string=False, length=None)
        assert found is not None
        assert found.convert is None
        assert dict(found.schema_parameters) == {"masked": "true"}
        assert transforms(self.OPTIONS).transform_for("public", "t", "c", is_string=False, length=None) is None


class TestHash:
    def test_v1(self) -> None:
        options = {"column.mask.hash.SHA-256.with.salt.salt": "public.t.c"}
        assert convert(options, "hello") == "af5843a0f0e728ab0332c8888b6e1190bfb79e584f0d40538de8f10df6ef29c6"

    def test_v2(self) -> None:
        options = {"column.mask.hash.v2.SHA-256.with.salt.salt": "public.t.c"}
        assert convert(options, "hello") == hashlib.sha256(b"salthello").hexdigest()

    def test_cut_to_the_column_length(self) -> None:
        options = {"column.mask.hash.v2.SHA-256.with.salt.salt": "public.t.c"}
        assert convert(options, "hello", length=8) == hashlib.sha256(b"salthello").hexdigest()[:8]

    def test_null_stays_null(self) -> None:
        assert convert({"column.mask.hash.MD5.with.salt.s": "public.t.c"}, None) is None

    def test_non_character_column(self) -> None:
        built = transforms({"column.mask.hash.MD5.with.salt.s": "public.t.c"})
        found = built.for_column("public", "t", "c", is_string=False, length=None)
        assert found is not None
        assert found.convert is None
        assert dict(found.schema_parameters) == {"masked": "true"}


class TestPrecedence:
    def test_truncate_beats_mask(self) -> None:
        options = {"column.mask.with.3.chars": "public.t.c", "column.truncate.to.2.chars": "public.t.c"}
        assert convert(options, "abcdef") == "ab"

    def test_truncate_rule_that_cannot_apply_still_shadows_later_rules(self) -> None:
        options = {"column.truncate.to.50.chars": "public.t.c", "column.mask.with.3.chars": "public.t.c"}
        assert transforms(options).for_column("public", "t", "c", is_string=True, length=20) is None

    def test_column_propagation_shadows_hashing(self) -> None:
        options = {
            "column.propagate.source.type": "public.t.c",
            "column.mask.hash.SHA-256.with.salt.s": "public.t.c",
        }
        assert transforms(options).for_column("public", "t", "c", is_string=True, length=None) is None

    def test_datatype_propagation_shadows_hashing_when_the_type_is_given(self) -> None:
        options = {
            "datatype.propagate.source.type": ".+\\.varchar",
            "column.mask.hash.SHA-256.with.salt.s": "public.t.c",
        }
        built = transforms(options)
        assert built.for_column("public", "t", "c", is_string=True, length=None, type_name="varchar") is None
        assert built.for_column("public", "t", "c", is_string=True, length=None, type_name="text") is not None


class TestBuilding:
    def test_only_transform_problems_are_reported(self) -> None:
        _, problems = ColumnTransforms.from_options(
            {"column.propagate.source.type": "(", "column.mask.with.3.chars": "("}
        )
        assert [p.path for p in problems] == ["column.mask.with.3.chars"]

    def test_results_are_built_once(self) -> None:
        built = transforms({"column.mask.hash.SHA-256.with.salt.s": "public.t.c"})
        first = built.for_column("public", "t", "c", is_string=True, length=10)
        assert built.for_column("public", "t", "c", is_string=True, length=10) is first
        assert built.for_column("public", "t", "c", is_string=True, length=12) is not first

    def test_catalog_qualified_rule(self) -> None:
        built = transforms({"column.mask.with.1.chars": "shop\\.dbo\\.t\\.c"})
        fn = built.transform_for("dbo", "t", "c", is_string=True, length=None, catalog="shop")
        assert fn is not None
        assert fn("x") == "*"

    def test_character_types(self) -> None:
        assert {"VARCHAR", "CHAR", "NVARCHAR", "CLOB"} <= JDBC_CHARACTER_TYPES
        assert "OTHER" not in JDBC_CHARACTER_TYPES
