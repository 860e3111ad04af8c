"""column.propagate.source.type / datatype.propagate.source.type."""

from __future__ import annotations

from cdc_sources.common.source_type import SourceTypePropagation, source_type_parameters


def propagation(options: dict[str, str]) -> SourceTypePropagation:
    built, problems = SourceTypePropagation.from_options(options)
    assert problems == []
    return built


class TestWhich:
    def test_nothing_by_default(self) -> None:
        assert not propagation({}).propagates("public", "t", "c", "varchar")

    def test_by_column(self) -> None:
        built = propagation({"column.propagate.source.type": "public\\.t\\.(a|b)"})
        assert built.propagates("public", "t", "a", "int4")
        assert built.propagates("PUBLIC", "T", "B", "int4")
        assert not built.propagates("public", "t", "c", "int4")

    def test_by_type_qualified_by_table(self) -> None:
        built = propagation({"datatype.propagate.source.type": ".+\\.numeric,public\\.t\\.varchar"})
        assert built.propagates("inventory", "orders", "price", "numeric")
        assert built.propagates("public", "t", "name", "VARCHAR")
        assert not built.propagates("other", "t", "name", "varchar")

    def test_bare_type_name_matches_nothing(self) -> None:
        assert not propagation({"datatype.propagate.source.type": "varchar"}).propagates("public", "t", "c", "varchar")

    def test_catalog(self) -> None:
        built = propagation({"column.propagate.source.type": "shop\\.dbo\\.t\\.c"})
        assert built.propagates("dbo", "t", "c", "int", catalog="shop")
        assert not built.propagates("dbo", "t", "c", "int")


class TestPrecedence:
    def test_truncate_or_mask_first_means_no_propagation(self) -> None:
        built = propagation(
            {
                "column.propagate.source.type": "public\\.t\\..*",
                "column.truncate.to.5.chars": "public.t.a",
                "column.mask.with.5.chars": "public.t.b",
            }
        )
        assert not built.propagates("public", "t", "a", "varchar")
        assert not built.propagates("public", "t", "b", "varchar")
        assert built.propagates("public", "t", "c", "varchar")

    def test_propagation_wins_over_hashing(self) -> None:
        built = propagation(
            {"column.mask.hash.SHA-256.with.salt.s": "public.t.a", "column.propagate.source.type": "public.t.a"}
        )
        assert built.propagates("public", "t", "a", "varchar")

    def test_only_propagation_problems_are_reported(self) -> None:
        _, problems = SourceTypePropagation.from_options(
            {"datatype.propagate.source.type": "(", "column.truncate.to.1.chars": "("}
        )
        assert [p.path for p in problems] == ["datatype.propagate.source.type"]


class TestParameters:
    def test_all_parameters_in_debezium_order(self) -> None:
        built = propagation({"column.propagate.source.type": "public.t.price"})
        parameters = built.schema_parameters(
            "public", "t", "price", type_name="numeric", length=10, scale=2, comment="net price"
        )
        assert parameters is not None
        assert list(parameters.items()) == [
            ("__debezium.source.column.type", "NUMERIC"),
            ("__debezium.source.column.length", "10"),
            ("__debezium.source.column.scale", "2"),
            ("__debezium.source.column.comment", "net price"),
            ("__debezium.source.column.name", "price"),
        ]

    def test_unset_length_scale_and_empty_comment_are_left_out(self) -> None:
        assert source_type_parameters("c", type_name="text", length=None, scale=None, comment="") == {
            "__debezium.source.column.type": "TEXT",
            "__debezium.source.column.name": "c",
        }
        assert "__debezium.source.column.length" not in source_type_parameters(
            "c", type_name="text", length=-1, scale=None
        )

    def test_zero_scale_is_kept(self) -> None:
        assert (
            source_type_parameters("c", type_name="numeric", length=5, scale=0)["__debezium.source.column.scale"] == "0"
        )

    def test_none_when_not_propagated(self) -> None:
        assert propagation({}).schema_parameters("public", "t", "c", type_name="int4", length=None, scale=None) is None
