"""Every catalogue statement parses as T-SQL (sqlglot), has as many ``?`` as it declares, and
puts identifiers, however odd, where they belong."""

from __future__ import annotations

import pytest
import sqlglot
from sqlglot import exp

from cdc_sources.sqlserver.catalogue import (
    CATALOGUE,
    ISOLATION,
    PARSED_TYPES,
    Statement,
    StatementKind,
    blocking_select,
    changes_direct,
    changes_function,
    chunk_select,
    keyset_parameters,
    lock_table,
    max_key_select,
    parse_default,
    quote,
    set_lock_timeout,
    signal_delete,
    signal_insert,
    signal_watermarks,
    snapshot_select,
    use_database,
)
from cdc_sources.sqlserver.options import ISOLATION_MODES

NAMES = ["customers", "we]ird", "a b", "[x]", "Straße", "x'; DROP TABLE t; --", "__$odd"]


def parse_one(statement: Statement) -> exp.Expr:
    parsed = sqlglot.parse(statement.sql, read="tsql")
    assert len(parsed) == 1 and parsed[0] is not None, statement.sql
    assert len(list(parsed[0].find_all(exp.Placeholder))) == statement.parameters, statement.sql
    return parsed[0]


def built() -> list[Statement]:
    out = [set_lock_timeout(-1), set_lock_timeout(0), set_lock_timeout(10000),
           *(parse_default(t) for t in sorted(PARSED_TYPES))]
    for name in NAMES:
        out += [use_database(name), changes_function(f"dbo_{name}"), changes_direct(name, ["id", name]),
                lock_table("dbo", name), snapshot_select(name, name, ["id", name]),
                chunk_select("dbo", name, ["id", name], ["id", name], ["int", "nvarchar(40)"], after=True, upto=True,
                             condition="[id] % 2 = 0", limit=21),
                chunk_select("dbo", name, ["id"], [name], ["decimal(9, 2)"], after=False, upto=True, condition=None,
                             limit=None),
                max_key_select("dbo", name, ["id", name], None), max_key_select("dbo", name, [name], "id > 3"),
                signal_insert("dbo", name), signal_delete("dbo", name, name),
                signal_watermarks("dbo", name, name, "data"),
                blocking_select("dbo", name, ["id", name], None), blocking_select("dbo", name, ["id"], "[id] > 3"),
                blocking_select("dbo", name, ["id"], "SELECT * FROM [dbo].[t] WHERE [id] > 3")]
    return out


@pytest.mark.parametrize("statement", [*CATALOGUE.values(), *built()], ids=lambda s: f"{s.kind.name}:{s.sql[:40]}")
def test_every_statement_parses_as_tsql(statement: Statement) -> None:
    parse_one(statement)


def test_the_catalogue_covers_every_kind() -> None:
    kinds = set(CATALOGUE) | {s.kind for s in built()}
    assert kinds == set(StatementKind)


@pytest.mark.parametrize("name", NAMES)
def test_identifiers_land_where_they_belong(name: str) -> None:
    select = parse_one(snapshot_select("sch", name, ["id", name]))
    (table,) = select.find_all(exp.Table)
    assert (table.db, table.name) == ("sch", name)
    assert [c.name for c in select.find_all(exp.Column)] == ["id", name]
    lock = parse_one(lock_table(name, "t"))
    assert [(t.db, t.name) for t in lock.find_all(exp.Table)] == [(name, "t")]
    direct = parse_one(changes_direct(name, [name]))
    assert [(t.db, t.name) for t in direct.find_all(exp.Table)] == [("cdc", f"{name}_CT")]
    function = parse_one(changes_function(name))
    assert function.sql("tsql").upper().count("FN_CDC_GET_ALL_CHANGES_") == 1
    assert "N'all update old'" in function.sql("tsql")


def test_bad_identifiers_and_values_are_refused() -> None:
    for bad in ["", "a\x00b", "x" * 129]:
        with pytest.raises(ValueError, match="not a SQL Server identifier"):
            quote(bad)
    with pytest.raises(ValueError, match="lock timeout"):
        set_lock_timeout(-2)
    with pytest.raises(ValueError, match="needs at least one column"):
        snapshot_select("dbo", "t", [])


def test_every_isolation_mode_has_an_odbc_level() -> None:
    assert set(ISOLATION) == set(ISOLATION_MODES)


def test_a_chunk_compares_a_composite_key_column_by_column() -> None:
    # T-SQL has no row values: (a, b) > (1, 'x') is a > 1 OR (a = 1 AND b > 'x'), the values in that order
    statement = chunk_select("dbo", "t", ["a", "b", "c"], ["a", "b"], ["int", "nvarchar(10)"], after=True, upto=True,
                             condition=None, limit=5)
    assert statement.sql == (
        "SELECT TOP (5) [a], [b], [c] FROM [dbo].[t] WHERE (([a] > CAST(? AS int)) OR ([a] = CAST(? AS int) AND "
        "[b] > CAST(? AS nvarchar(10)))) AND (([a] < CAST(? AS int)) OR ([a] = CAST(? AS int) AND "
        "[b] <= CAST(? AS nvarchar(10)))) ORDER BY [a], [b]")
    assert statement.parameters == 6
    assert keyset_parameters(["1", "x"]) == ["1", "1", "x"]


@pytest.mark.parametrize("bad", ["int; DROP TABLE t", "nvarchar(40", "int)", ""])
def test_a_chunk_refuses_a_key_type_that_is_not_a_type(bad: str) -> None:
    with pytest.raises(ValueError, match="not a SQL Server column type"):
        chunk_select("dbo", "t", ["a"], ["a"], [bad], after=True, upto=False, condition=None, limit=5)


def test_only_date_and_time_defaults_are_parsed_on_the_server() -> None:
    assert {"date", "time", "datetime", "datetime2", "smalldatetime", "datetimeoffset"} == PARSED_TYPES
    with pytest.raises(ValueError, match="int"):
        parse_default("int")
    with pytest.raises(ValueError, match="does not read"):
        parse_default("date); DROP TABLE t; --")
