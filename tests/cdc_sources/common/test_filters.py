"""Include/exclude lists for tables, columns and message prefixes (RelationalTableFilters)."""

from __future__ import annotations

import pytest

from cdc_sources.common.filters import (
    DATABASE_LISTS,
    SCHEMA_LISTS,
    BuiltinTables,
    ColumnFilter,
    DataCollectionFilter,
    MessagePrefixFilter,
)

# What the PostgreSQL and MySQL connectors pass (PostgresConnectorConfig.SystemTablesPredicate,
# BinlogConnectorConfig.BUILT_IN_DB_NAMES).
PG_BUILTIN = BuiltinTables(
    containers=frozenset({"pg_catalog", "information_schema"}),
    container_prefixes=("pg_temp",),
    tables=frozenset({"spatial_ref_sys"}),
)
MYSQL_BUILTIN = BuiltinTables(containers=frozenset({"mysql", "performance_schema", "sys", "information_schema"}))


def pg_filter(
    options: dict[str, str],
    *,
    always_include: tuple[tuple[str, str], ...] = (),
    case_sensitive: bool = False,
) -> DataCollectionFilter:
    built, problems = DataCollectionFilter.from_options(
        options,
        container_lists=SCHEMA_LISTS,
        builtin=PG_BUILTIN,
        always_include=always_include,
        case_sensitive=case_sensitive,
    )
    assert problems == []
    return built


class TestDefaults:
    def test_everything_but_system_tables(self) -> None:
        tables = pg_filter({})
        assert tables.includes_table("public", "orders")
        assert tables.includes_table("inventory", "customers")
        assert not tables.includes_table("pg_catalog", "pg_class")
        assert not tables.includes_table("information_schema", "tables")

    def test_system_schema_names_compare_lower_cased(self) -> None:
        assert not pg_filter({}).includes_table("Pg_Catalog", "x")

    def test_system_prefix_compares_case_sensitively(self) -> None:
        tables = pg_filter({})
        assert not tables.includes_table("pg_temp_3", "x")
        assert tables.includes_table("PG_TEMP_3", "x")  # Debezium uses startsWith on the raw name

    def test_system_table_in_any_schema(self) -> None:
        tables = pg_filter({})
        assert not tables.includes_table("public", "spatial_ref_sys")
        assert not tables.includes_table("gis", "SPATIAL_REF_SYS")

    def test_ignore_builtin_false_captures_system_tables(self) -> None:
        tables = pg_filter({"table.ignore.builtin": "false"})
        assert tables.includes_table("pg_catalog", "pg_class")
        assert tables.includes_table("public", "spatial_ref_sys")
        assert tables.includes_container("pg_catalog")

    def test_ignore_builtin_is_parsed_like_java(self) -> None:
        assert pg_filter({"table.ignore.builtin": " FALSE "}).includes_table("pg_catalog", "x")
        assert not pg_filter({"table.ignore.builtin": "True"}).includes_table("pg_catalog", "x")

    def test_system_tables_stay_hidden_even_when_listed(self) -> None:
        tables = pg_filter({"table.include.list": "pg_catalog\\..*,public\\..*"})
        assert not tables.includes_table("pg_catalog", "pg_class")
        assert tables.includes_table("public", "a")

    def test_containers(self) -> None:
        tables = pg_filter({})
        assert tables.includes_container("public")
        assert not tables.includes_container("pg_catalog")
        assert not tables.includes_container("pg_temp_1")


class TestLists:
    def test_schema_include(self) -> None:
        tables = pg_filter({"schema.include.list": "inv.*,public"})
        assert tables.includes_table("inventory", "a")
        assert tables.includes_table("public", "a")
        assert not tables.includes_table("public2", "a")  # anchored
        assert not tables.includes_container("shop")

    def test_schema_exclude(self) -> None:
        tables = pg_filter({"schema.exclude.list": "audit"})
        assert not tables.includes_table("audit", "log")
        assert tables.includes_table("audit2", "log")
        assert not tables.includes_container("audit")

    def test_table_include_is_schema_dot_table(self) -> None:
        tables = pg_filter({"table.include.list": "public\\.orders,inventory\\..*"})
        assert tables.includes_table("public", "orders")
        assert tables.includes_table("inventory", "anything")
        assert not tables.includes_table("public", "orders_old")
        assert not tables.includes_table("other", "orders")

    def test_table_exclude(self) -> None:
        tables = pg_filter({"table.exclude.list": "public\\.tmp_.*"})
        assert not tables.includes_table("public", "tmp_1")
        assert tables.includes_table("public", "orders")

    def test_schema_and_table_lists_combine(self) -> None:
        tables = pg_filter({"schema.include.list": "public", "table.exclude.list": ".*\\.tmp"})
        assert tables.includes_table("public", "orders")
        assert not tables.includes_table("public", "tmp")
        assert not tables.includes_table("other", "orders")

    def test_matching_ignores_case(self) -> None:
        tables = pg_filter({"table.include.list": "PUBLIC\\.Orders"})
        assert tables.includes_table("public", "orders")
        assert tables.includes_table("Public", "ORDERS")

    def test_case_sensitive_parameter(self) -> None:
        tables = pg_filter({"table.include.list": "public\\.Orders"}, case_sensitive=True)
        assert tables.includes_table("public", "Orders")
        assert not tables.includes_table("public", "orders")

    def test_blank_list_is_ignored(self) -> None:
        tables = pg_filter({"table.include.list": "  ", "schema.include.list": ""})
        assert tables.includes_table("public", "orders")

    def test_mysql_database_lists(self) -> None:
        built, problems = DataCollectionFilter.from_options(
            {"database.include.list": "shop", "table.exclude.list": "shop\\.audit"},
            container_lists=DATABASE_LISTS,
            builtin=MYSQL_BUILTIN,
        )
        assert problems == []
        assert built.includes_table("shop", "orders")
        assert not built.includes_table("shop", "audit")
        assert not built.includes_table("crm", "orders")
        assert not built.includes_container("mysql")

    def test_mysql_system_databases(self) -> None:
        built, _ = DataCollectionFilter.from_options({}, container_lists=DATABASE_LISTS, builtin=MYSQL_BUILTIN)
        assert not built.includes_table("MySQL", "user")
        assert not built.includes_table("sys", "x")
        assert built.includes_table("shop", "x")


class TestAlwaysInclude:
    def test_signal_table_is_captured_whatever_the_lists_say(self) -> None:
        tables = pg_filter({"schema.exclude.list": "ops"}, always_include=(("ops", "dbz_signal"),))
        assert tables.includes_table("ops", "dbz_signal")
        assert tables.includes_table("OPS", "DBZ_SIGNAL")
        assert not tables.includes_table("ops", "other")
        assert tables.includes_container("ops")

    def test_signal_table_beats_system_tables(self) -> None:
        tables = pg_filter({}, always_include=(("public", "spatial_ref_sys"),))
        assert tables.includes_table("public", "spatial_ref_sys")


class TestProblems:
    @pytest.mark.parametrize(
        ("options", "path"),
        [
            ({"schema.include.list": "a", "schema.exclude.list": "b"}, "schema.exclude.list"),
            ({"table.include.list": "a", "table.exclude.list": "b"}, "table.exclude.list"),
            ({"table.include.list": "", "table.exclude.list": "b"}, "table.exclude.list"),
        ],
    )
    def test_include_and_exclude_of_a_level_are_exclusive(self, options: dict[str, str], path: str) -> None:
        _, problems = DataCollectionFilter.from_options(options, container_lists=SCHEMA_LISTS, builtin=PG_BUILTIN)
        assert [p.path for p in problems] == [path]
        assert "cannot be used together with" in problems[0].message

    def test_every_problem_is_reported_at_once(self) -> None:
        _, problems = DataCollectionFilter.from_options(
            {
                "schema.include.list": "a(",
                "table.include.list": "x",
                "table.exclude.list": "[",
                "table.ignore.builtin": "yes",
            },
            container_lists=SCHEMA_LISTS,
            builtin=PG_BUILTIN,
        )
        assert sorted(p.path for p in problems) == [
            "schema.include.list",
            "table.exclude.list",
            "table.exclude.list",
            "table.ignore.builtin",
        ]

    def test_database_lists_are_checked_for_mysql(self) -> None:
        _, problems = DataCollectionFilter.from_options(
            {"database.include.list": "a", "database.exclude.list": "b"},
            container_lists=DATABASE_LISTS,
            builtin=MYSQL_BUILTIN,
        )
        assert [p.path for p in problems] == ["database.exclude.list"]


class TestColumnFilter:
    def test_no_lists_keep_every_column(self) -> None:
        columns, problems = ColumnFilter.from_options({})
        assert problems == []
        assert not columns.active
        assert columns.includes("public", "t", "anything")

    def test_exclude_list(self) -> None:
        columns, _ = ColumnFilter.from_options({"column.exclude.list": "public\\.users\\.(password|ssn)"})
        assert columns.active
        assert not columns.includes("public", "users", "password")
        assert not columns.includes("PUBLIC", "Users", "SSN")
        assert columns.includes("public", "users", "name")
        assert columns.includes("public", "users", "password_hint")  # anchored

    def test_include_list(self) -> None:
        columns, _ = ColumnFilter.from_options({"column.include.list": "public\\.users\\.(id|name)"})
        assert columns.includes("public", "users", "id")
        assert not columns.includes("public", "users", "email")
        assert not columns.includes("public", "orders", "id")

    def test_exclusive(self) -> None:
        _, problems = ColumnFilter.from_options({"column.include.list": "a", "column.exclude.list": "b"})
        assert [p.path for p in problems] == ["column.exclude.list"]

    def test_blank_include_list_is_a_problem(self) -> None:
        # Debezium would drop every column from the value (checked in DebeziumProbe).
        _, problems = ColumnFilter.from_options({"column.include.list": " "})
        assert [p.path for p in problems] == ["column.include.list"]
        assert "drop every column" in problems[0].message

    def test_invalid_regex(self) -> None:
        _, problems = ColumnFilter.from_options({"column.exclude.list": "a.b.(c"})
        assert [p.path for p in problems] == ["column.exclude.list"]


class TestMessagePrefixFilter:
    def test_default_captures_all(self) -> None:
        prefixes, problems = MessagePrefixFilter.from_options({})
        assert problems == []
        assert prefixes.includes("anything")

    def test_include(self) -> None:
        prefixes, _ = MessagePrefixFilter.from_options({"message.prefix.include.list": "audit.*,Heartbeat"})
        assert prefixes.includes("audit-1")
        assert prefixes.includes("heartbeat")
        assert not prefixes.includes("heartbeat2")

    def test_exclude_everything(self) -> None:
        prefixes, _ = MessagePrefixFilter.from_options({"message.prefix.exclude.list": ".*"})
        assert not prefixes.includes("x")
        assert not prefixes.includes("")

    def test_blank_include_falls_back_to_everything(self) -> None:
        prefixes, problems = MessagePrefixFilter.from_options({"message.prefix.include.list": ""})
        assert problems == []
        assert prefixes.includes("x")

    def test_exclusive(self) -> None:
        _, problems = MessagePrefixFilter.from_options(
            {"message.prefix.include.list": "a", "message.prefix.exclude.list": "b"}
        )
        assert [p.path for p in problems] == ["message.prefix.exclude.list"]
