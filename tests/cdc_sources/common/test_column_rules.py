"""Which single column-mapper rule applies to a column (Debezium's ColumnMappers order)."""

from __future__ import annotations

import pytest

from cdc_sources.common.column_rules import (
    ColumnRules,
    RuleKind,
    is_column_rule_option,
    parse_column_rules,
)

EVERY_KIND = {
    # mapping order deliberately differs from Debezium's precedence order
    "column.mask.hash.v2.SHA-256.with.salt.s2": "public.t.(a|b|c|d|e|f)",
    "column.mask.hash.SHA-256.with.salt.s1": "public.t.(a|b|c|d|e)",
    "datatype.propagate.source.type": "public.t.varchar",
    "column.propagate.source.type": "public.t.(a|b|c)",
    "column.mask.with.3.chars": "public.t.(a|b)",
    "column.truncate.to.5.chars": "public.t.a",
}


def rules(options: dict[str, str]) -> ColumnRules:
    parsed, problems = parse_column_rules(options)
    assert problems == []
    return parsed


class TestPrecedence:
    @pytest.mark.parametrize(
        ("column", "type_name", "kind"),
        [
            ("a", "int4", RuleKind.TRUNCATE),
            ("b", "int4", RuleKind.MASK),
            ("c", "int4", RuleKind.PROPAGATE_COLUMN),
            ("d", "varchar", RuleKind.PROPAGATE_TYPE),
            ("d", "int4", RuleKind.HASH_V1),
            ("e", "int4", RuleKind.HASH_V1),
            ("f", "int4", RuleKind.HASH_V2),
            ("g", "int4", None),
        ],
    )
    def test_first_rule_in_debezium_order_wins(self, column: str, type_name: str, kind: RuleKind | None) -> None:
        rule = rules(EVERY_KIND).first_match("public", "t", column, type_name=type_name)
        assert (rule.kind if rule else None) is kind

    def test_same_kind_keeps_the_options_order(self) -> None:
        parsed = rules({"column.truncate.to.9.chars": "public.t.a", "column.truncate.to.2.chars": "public.t.a"})
        rule = parsed.first_match("public", "t", "a")
        assert rule is not None
        assert rule.size == 9
        assert rule.option == "column.truncate.to.9.chars"


class TestNames:
    def test_column_rules_match_container_table_column(self) -> None:
        parsed = rules({"column.mask.with.2.chars": "inventory\\.customers\\.email"})
        assert parsed.first_match("inventory", "customers", "email") is not None
        assert parsed.first_match("Inventory", "CUSTOMERS", "Email") is not None
        assert parsed.first_match("inventory", "customers", "email2") is None

    def test_catalog_qualified_name_also_matches(self) -> None:
        parsed = rules({"column.mask.with.2.chars": "shop\\.dbo\\.users\\.name"})
        assert parsed.first_match("dbo", "users", "name", catalog="shop") is not None
        assert parsed.first_match("dbo", "users", "name") is None
        mapped = rules({"column.mask.with.2.chars": "dbo\\.users\\.name"})
        assert mapped.first_match("dbo", "users", "name", catalog="shop") is not None

    def test_datatype_rules_match_the_type_qualified_by_its_table(self) -> None:
        parsed = rules({"datatype.propagate.source.type": ".+\\.numeric"})
        assert parsed.first_match("public", "t", "price", type_name="numeric") is not None
        assert parsed.first_match("public", "t", "price", type_name="NUMERIC") is not None
        bare = rules({"datatype.propagate.source.type": "numeric"})
        assert bare.first_match("public", "t", "price", type_name="numeric") is None

    def test_datatype_rules_need_the_type_name(self) -> None:
        parsed = rules({"datatype.propagate.source.type": ".*"})
        assert parsed.first_match("public", "t", "c") is None

    def test_no_rules_match_nothing(self) -> None:
        assert ColumnRules().first_match("public", "t", "c") is None

    def test_empty_value_makes_no_rule(self) -> None:
        assert rules({"column.mask.with.2.chars": ""}).rules == ()

    def test_blank_value_matches_no_column(self) -> None:
        assert rules({"column.mask.with.2.chars": " "}).first_match("public", "t", "c") is None


class TestOptionNames:
    @pytest.mark.parametrize(
        "name",
        [
            "column.truncate.to.20.chars",
            "column.mask.with.0.chars",
            "column.mask.hash.SHA-256.with.salt.CzQMA0cB5K",
            "column.mask.hash.v2.SHA-512/224.with.salt.a.b",
            "column.propagate.source.type",
            "datatype.propagate.source.type",
        ],
    )
    def test_recognised(self, name: str) -> None:
        assert is_column_rule_option(name)

    @pytest.mark.parametrize(
        "name",
        [
            "column.truncate.to.-1.chars",
            "column.mask.with.x.chars",
            "column.mask.hash.SHA-256.with.salt.",
            "column.truncate.to.\u0663.chars",  # an Arabic-Indic digit: Java's \d is ASCII-only
        ],
    )
    def test_not_recognised(self, name: str) -> None:
        assert not is_column_rule_option(name)

    def test_hash_option_parts(self) -> None:
        parsed = rules({"column.mask.hash.v2.SHA-256.with.salt.a.b.c": "x"})
        (rule,) = parsed.rules
        assert (rule.kind, rule.algorithm, rule.salt) == (RuleKind.HASH_V2, "SHA-256", "a.b.c")

    def test_leading_zeros_in_the_length(self) -> None:
        (rule,) = rules({"column.truncate.to.007.chars": "x"}).rules
        assert rule.size == 7


class TestProblems:
    def test_length_beyond_java_int(self) -> None:
        _, problems = parse_column_rules({"column.mask.with.2147483648.chars": "x"})
        assert [(kind, p.path) for kind, p in problems] == [(RuleKind.MASK, "column.mask.with.2147483648.chars")]

    def test_unknown_algorithm(self) -> None:
        _, problems = parse_column_rules({"column.mask.hash.SHA-999.with.salt.s": "x"})
        ((kind, problem),) = problems
        assert kind is RuleKind.HASH_V1
        assert problem.path == "column.mask.hash.SHA-999.with.salt.s"
        assert "SHA-999" in problem.message
        assert "SHA-256" in problem.message

    def test_md2_is_explained(self) -> None:
        _, problems = parse_column_rules({"column.mask.hash.v2.MD2.with.salt.s": "x"})
        ((kind, problem),) = problems
        assert kind is RuleKind.HASH_V2
        assert "MD2 is not available" in problem.message

    def test_invalid_regex(self) -> None:
        _, problems = parse_column_rules({"column.propagate.source.type": "a.b.(c"})
        ((kind, problem),) = problems
        assert kind is RuleKind.PROPAGATE_COLUMN
        assert problem.path == "column.propagate.source.type"
        assert "'a.b.(c'" in problem.message

    def test_all_problems_at_once(self) -> None:
        parsed, problems = parse_column_rules(
            {
                "column.truncate.to.5.chars": "ok",
                "column.mask.with.3.chars": "(",
                "column.mask.hash.NOPE.with.salt.s": "x",
            }
        )
        assert [p.path for _, p in problems] == ["column.mask.with.3.chars", "column.mask.hash.NOPE.with.salt.s"]
        assert [r.kind for r in parsed.rules] == [RuleKind.TRUNCATE]

    def test_unrelated_options_are_ignored(self) -> None:
        parsed, problems = parse_column_rules({"table.include.list": "(", "slot.name": "x"})
        assert parsed.rules == ()
        assert problems == []
