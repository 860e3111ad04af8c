"""Every gateway statement parses as Oracle SQL (sqlglot) with its declared binds, and puts
identifiers, however odd, where they belong."""

from __future__ import annotations

import pytest
import sqlglot
from sqlglot import exp

from cdc_sources.oracle import gateway as gw
from cdc_sources.oracle.converters import OracleType
from cdc_sources.oracle.mining_query import MiningQuerySettings, mining_query
from cdc_sources.oracle.tables import UnsupportedColumnError, column_of, table_of

NAMES = ["CUSTOMERS", 'we"ird', "a b", "Straße", "x'; DROP TABLE t; --", "?", "MLOG$_X"]


def _parse(statement: gw.Statement) -> exp.Expr:
    # sqlglot's Oracle grammar takes ROLLBACK for the statement; Oracle accepts it as a column name
    sql = statement.oracle_sql.replace(", ROLLBACK,", ', "ROLLBACK",')
    parsed = sqlglot.parse(sql, read="oracle", error_level=sqlglot.ErrorLevel.RAISE)
    assert len(parsed) == 1 and parsed[0] is not None, sql
    binds = [p for p in parsed[0].find_all(exp.Placeholder)]
    assert sorted(b.name for b in binds) == [f"b{i}" for i in range(1, statement.parameters + 1)], sql
    return parsed[0]


def _built() -> list[gw.Statement]:
    out = [gw.minable_logs(0), gw.minable_logs(123456789012),
           gw.mining(mining_query(MiningQuerySettings())),
           gw.mining(mining_query(MiningQuerySettings(filter_mode="in", schema_include=("INVENTORY",),
                                                      username_exclude=("X",))))]
    out += [gw.snapshot_select(n, n, ["ID", n], 42) for n in NAMES]
    return out


@pytest.mark.parametrize("statement", [*gw.CATALOGUE.values(), *_built()], ids=lambda s: s.kind.name)
def test_every_statement_parses_as_oracle_sql(statement: gw.Statement) -> None:
    if statement.kind in (gw.StatementKind.NLS_SESSION, gw.StatementKind.UTC_SESSION):
        # ALTER SESSION is outside sqlglot's grammar: it keeps it as a whole command
        (parsed,) = sqlglot.parse(statement.oracle_sql, read="oracle")
        assert isinstance(parsed, exp.Command) and parsed.name.upper() == "ALTER"
        return
    _parse(statement)


@pytest.mark.parametrize("name", NAMES)
def test_identifiers_land_where_they_belong(name: str) -> None:
    select = _parse(gw.snapshot_select("S" + name, name, ["ID", name], 42))
    (table,) = select.find_all(exp.Table)
    assert (table.db, table.name) == ("S" + name, name)
    assert [c.name for c in select.find_all(exp.Column)] == ["ID", name]


def test_binds_outside_literals_only_and_bad_values_refused() -> None:
    s = gw.Statement(gw.StatementKind.TABLE_COLUMNS, "SELECT '?' FROM T WHERE A = ? AND B = '??' AND C = ?", 2)
    assert s.oracle_sql == "SELECT '?' FROM T WHERE A = :b1 AND B = '??' AND C = :b2"
    with pytest.raises(ValueError, match="not an SCN"):
        gw.snapshot_select("S", "T", ["ID"], -1)
    with pytest.raises(ValueError, match="not an SCN"):
        gw.start_logmnr(True, 5)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="ends"):
        gw.start_logmnr(10, 5)
    with pytest.raises(ValueError, match="not a LogMiner mining query"):
        gw.mining("SELECT * FROM DUAL")
    with pytest.raises(ValueError, match="no columns"):
        gw.snapshot_select("S", "T", [], 1)


def test_dictionary_rows_to_columns() -> None:
    t = table_of("APP", "T", [("ID", "NUMBER", 22, 10, 0, "N"), ("N", "NUMBER", 22, None, None, "Y"),
                              ("I", "NUMBER", 22, None, 0, "Y"), ("TS", "TIMESTAMP(3)", 11, None, 3, "Y"),
                              ("TZ", "TIMESTAMP(9) WITH TIME ZONE", 13, None, 9, "Y"),
                              ("LTZ", "TIMESTAMP(6) WITH LOCAL TIME ZONE", 11, None, 6, "Y"),
                              ("D", "DATE", 7, None, None, "Y"), ("S", "VARCHAR2", 30, None, None, "Y"),
                              ("DS", "INTERVAL DAY(2) TO SECOND(4)", 11, 2, 4, "Y")], ["ID"])
    got = [(c.name, c.type, c.length, c.scale, c.optional) for c in t.columns]
    assert got == [("ID", OracleType.NUMBER, 10, 0, False), ("N", OracleType.NUMBER, 0, None, True),
                   ("I", OracleType.NUMBER, 38, 0, True), ("TS", OracleType.TIMESTAMP, 3, None, True),
                   ("TZ", OracleType.TIMESTAMP_TZ, 9, None, True), ("LTZ", OracleType.TIMESTAMP_LTZ, 6, None, True),
                   ("D", OracleType.DATE, 0, None, True), ("S", OracleType.VARCHAR2, 30, None, True),
                   ("DS", OracleType.INTERVAL_DS, 0, 4, True)]
    with pytest.raises(UnsupportedColumnError, match=r"table APP\.T: column G has type SDO_GEOMETRY"):
        column_of("APP.T", "G", "SDO_GEOMETRY", 1, None, None, "Y")
    with pytest.raises(UnsupportedColumnError, match=r"APP\.GONE does not exist"):
        table_of("APP", "GONE", [], [])
