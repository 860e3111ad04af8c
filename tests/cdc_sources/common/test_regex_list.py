"""Debezium's comma-separated Java regex lists (Strings.RegExSplitter + Predicates.includes)."""

from __future__ import annotations

import pytest

from cdc_sources.common.regex_list import (
    InvalidRegexListError,
    RegexList,
    regex_list_option,
    split_regex_list,
    translate_java_regex,
)
from cdc_sources.spi import ConfigProblem


class TestSplit:
    @pytest.mark.parametrize(
        ("text", "items"),
        [
            ("a,b", ["a", "b"]),
            ("a\\,b", ["a,b"]),  # \, is a literal comma; the backslash goes
            (" a , b ", ["a", "b"]),  # items are trimmed
            ("a,,b", ["a", "b"]),  # empty items are skipped
            ("a,", ["a"]),
            ("x{1,3}", ["x{1", "3}"]),  # commas inside quantifiers still split
            ("x{1\\,3}", ["x{1,3}"]),
            ("a\\.b,c", ["a\\.b", "c"]),  # other escapes are kept for the regex
            ("a\\\\,b", ["a\\\\", "b"]),  # an escaped backslash does not escape the comma
            ("a\\\\\\,b", ["a\\\\,b"]),
            ("", []),
            ("\ta\n,b", ["a", "b"]),  # Java's trim removes control characters too
            ("\u00a0a", ["\u00a0a"]),  # ...but not non-ASCII spaces
            ("a, ,b", ["a", "", "b"]),  # a blank item survives as an empty regex
        ],
    )
    def test_splits_like_regexsplitter(self, text: str, items: list[str]) -> None:
        assert split_regex_list(text) == items

    def test_trailing_lone_backslash_is_an_error(self) -> None:
        with pytest.raises(InvalidRegexListError) as err:
            split_regex_list("a,b\\")
        assert err.value.item == "a,b\\"
        assert "lone backslash" in err.value.reason


class TestMatching:
    def test_items_are_anchored_to_the_whole_name(self) -> None:
        patterns = RegexList("public")
        assert patterns.matches("public")
        assert not patterns.matches("public2")
        assert not patterns.matches("xpublic")

    def test_any_item_may_match(self) -> None:
        patterns = RegexList("inventory\\..*, public.orders")
        assert patterns.matches("inventory.customers")
        assert patterns.matches("public.orders")
        assert not patterns.matches("public.customers")

    def test_dot_is_a_regex_dot(self) -> None:
        assert RegexList("public.orders").matches("publicXorders")

    def test_case_is_ignored_by_default(self) -> None:
        assert RegexList("Public\\.ORDERS").matches("public.orders")

    def test_case_sensitive_on_request(self) -> None:
        patterns = RegexList("Public", case_sensitive=True)
        assert patterns.matches("Public")
        assert not patterns.matches("public")

    def test_case_folding_is_ascii_only_as_in_java(self) -> None:
        # Java CASE_INSENSITIVE without UNICODE_CASE folds ASCII letters only.
        assert not RegexList("é").matches("É")
        assert RegexList("é").matches("é")

    def test_word_class_is_ascii_only_as_in_java(self) -> None:
        assert RegexList("\\w+").matches("orders_2")
        assert not RegexList("\\w+").matches("größe")

    def test_no_items_match_nothing(self) -> None:
        assert RegexList(",,").items == ()
        assert not RegexList(",,").matches("")

    def test_empty_item_matches_only_the_empty_name(self) -> None:
        patterns = RegexList("a, ,b")
        assert patterns.matches("")
        assert not patterns.matches(" ")


class TestJavaSyntax:
    def test_quoted_literal(self) -> None:
        patterns = RegexList("\\Qa.b\\E.*")
        assert patterns.matches("a.b-anything")
        assert not patterns.matches("aXb")

    def test_unterminated_quote_runs_to_the_end(self) -> None:
        assert RegexList("x\\Q(.*").matches("x(.*")

    def test_named_group_and_backreference(self) -> None:
        patterns = RegexList("(?<s>[a-z]+)\\.\\k<s>")
        assert patterns.matches("ab.ab")
        assert not patterns.matches("ab.cd")

    def test_lookbehind_is_left_alone(self) -> None:
        assert translate_java_regex("(?<=a)b(?<!c)") == "(?<=a)b(?<!c)"

    def test_end_anchors(self) -> None:
        assert translate_java_regex("a\\z") == "a\\Z"
        assert RegexList("a\\Z").matches("a")

    def test_leading_bracket_in_a_class_is_literal(self) -> None:
        assert RegexList("[]a]+").matches("]a]")

    @pytest.mark.parametrize("pattern", ["[a-c[x-z]]", "[a-z&&[^e]]", "[a&&b]"])
    def test_class_union_and_intersection_are_refused(self, pattern: str) -> None:
        with pytest.raises(InvalidRegexListError) as err:
            RegexList(pattern)
        assert err.value.item == pattern
        assert "union or intersection" in err.value.reason

    def test_escaped_bracket_inside_a_class_is_fine(self) -> None:
        assert RegexList("[\\[a]+").matches("[a[")

    @pytest.mark.parametrize("pattern", ["foo(", "[a-", "\\p{Alpha}", "*a"])
    def test_invalid_regex_names_the_item(self, pattern: str) -> None:
        with pytest.raises(InvalidRegexListError) as err:
            RegexList(f"ok,{pattern}")
        assert err.value.item == pattern
        assert isinstance(err.value, ValueError)


class TestOption:
    def test_absent_or_blank_is_none(self) -> None:
        problems: list[ConfigProblem] = []
        assert regex_list_option({}, "table.include.list", case_sensitive=False, problems=problems) is None
        assert regex_list_option({"x": "  "}, "x", case_sensitive=False, problems=problems) is None
        assert problems == []

    def test_invalid_list_adds_a_problem_naming_the_option(self) -> None:
        problems: list[ConfigProblem] = []
        result = regex_list_option(
            {"table.include.list": "public.a,pub(lic"}, "table.include.list", case_sensitive=False, problems=problems
        )
        assert result is None
        assert len(problems) == 1
        assert problems[0].path == "table.include.list"
        assert "'pub(lic'" in problems[0].message
        assert "missing )" in problems[0].message

    def test_valid_list(self) -> None:
        problems: list[ConfigProblem] = []
        result = regex_list_option({"x": "a.*"}, "x", case_sensitive=False, problems=problems)
        assert result is not None
        assert result.matches("abc")
        assert problems == []
