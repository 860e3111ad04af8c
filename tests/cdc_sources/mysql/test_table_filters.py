"""Filters that leave no table: when that is an error, and what the message says."""

from __future__ import annotations

from cdc_sources.mysql.model import TableId
from cdc_sources.mysql.policy import MySqlFilterPolicy
from cdc_sources.mysql.table_filters import no_match_message

TABLES = [TableId("shop", "customers"), TableId("shop", "orders"), TableId("crm", "leads")]
DATABASES = ["shop", "crm", "empty"]


def message(options: dict[str, str]) -> str | None:
    policy, problems = MySqlFilterPolicy.from_options(options)
    assert problems == []
    return no_match_message(options, DATABASES, TABLES, policy.captures_database,
                            lambda t: policy.captures(t.database, t.table))


def test_a_table_filter_that_matches_nothing_lists_the_tables_of_the_database_it_names():
    assert message({"table.include.list": "shop.nope"}) == (
        "no table matches the filters (table.include.list: shop.nope); "
        "tables in database shop: shop.customers, shop.orders")


def test_a_database_that_does_not_exist_is_named():
    assert message({"database.include.list": "nope"}) == (
        "no table matches the filters (database.include.list: nope); tables in database nope: none "
        "(there is no database nope)")


def test_a_pattern_lists_every_table():
    assert message({"table.include.list": "x.*"}) == (
        "no table matches the filters (table.include.list: x.*); tables in database x: none (there is no database x)")
    assert message({"table.include.list": "s[a-z]x\\..*"}) == (
        "no table matches the filters (table.include.list: s[a-z]x\\..*); "
        "tables: crm.leads, shop.customers, shop.orders")


def test_no_error_when_a_table_matches_or_no_filter_is_given_or_the_database_is_empty():
    assert message({"table.include.list": "shop.orders"}) is None
    assert message({}) is None
    assert message({"database.include.list": "empty"}) is None  # tables created there later are captured
    assert message({"database.include.list": "empty", "table.include.list": "empty.t"}) is not None
