"""The fake Oracle connection serves only catalogue statements, each parsing as Oracle SQL, and the
rows it replays from real PostgreSQL transactions rebuild the source tables when mined."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import pytest
import sqlglot

from cdc_sources.oracle import gateway as gw
from cdc_sources.oracle.envelope import EventKind, EventMaker
from cdc_sources.oracle.mining_query import MiningQuerySettings, mining_query
from cdc_sources.oracle.source import OracleSourceInfo
from cdc_sources.oracle.tables import table_of
from cdc_sources.oracle.transactions import LogMinerRow, TransactionBuffer
from tests.support.oracle_fake import LOGMNR_COLUMNS, FakeOracleDatabase, FakeOracleError
from tests.support.oracle_workload import TABLES, OracleWorkload

QUERY = mining_query(MiningQuerySettings())


def _database(workload: OracleWorkload, rows: list[dict[str, Any]]) -> FakeOracleDatabase:
    return FakeOracleDatabase(dict(((t.owner, t.name), t) for t in TABLES.values()), rows, workload.rows_as_of,
                              max(int(r["SCN"]) for r in rows) + 1, QUERY)


def _as_row(names: tuple[str, ...], values: tuple[Any, ...]) -> LogMinerRow:
    r = dict(zip(names, values, strict=True))
    return LogMinerRow(int(r["SCN"]), int(r["OPERATION_CODE"]), r["XID"], r["SQL_REDO"], r["TIMESTAMP"],
                       bool(r["CSF"]), r["TABLE_NAME"], r["SEG_OWNER"], r["OPERATION"], r["USERNAME"], r["ROW_ID"],
                       bool(r["ROLLBACK"]), r["RS_ID"], int(r["STATUS"]), r["INFO"], int(r["SSN"]), int(r["THREAD#"]))


def _mine(gateway: gw.OracleGateway, start: int, end: int, step: int) -> Iterator[LogMinerRow]:
    """Windows of ``step`` SCNs, each in its own LogMiner session, as the connector runs them."""
    low = start
    while low < end:
        high = min(low + step, end)
        names, rows = gateway.columns(gw.minable_logs(low))
        for i, (name, *_rest) in enumerate(rows):
            gateway.call(gw.add_logfile(name, i == 0))
        gateway.call(gw.start_logmnr(low, high))
        names, found = gateway.columns(gw.mining(QUERY), (low, high))
        assert tuple(names) == LOGMNR_COLUMNS
        yield from (_as_row(LOGMNR_COLUMNS, v) for v in found)
        gateway.call(gw.end_logmnr())
        low = high


@pytest.fixture
def workload(pg_db: str) -> OracleWorkload:
    w = OracleWorkload(pg_db, csf_limit=1000)
    w.run(writers=3, transactions=6)
    w.decode()
    return w


def test_mined_replay_rebuilds_the_source_tables(workload: OracleWorkload) -> None:
    rows = workload.logminer_rows()
    db = _database(workload, rows)
    # the workload interleaves: some transaction commits after a later one started
    starts = {r["XID"]: i for i, r in enumerate(rows) if r["OPERATION_CODE"] == 6}
    commits = [r["XID"] for r in rows if r["OPERATION_CODE"] == 7 and r["XID"] in starts]
    assert commits != sorted(commits, key=lambda x: starts[x]), "no interleaving"
    assert any(r["CSF"] for r in rows) and any(r["ROLLBACK"] for r in rows)
    assert any(r["OPERATION_CODE"] == 36 for r in rows)

    buffer = TransactionBuffer()
    gateway = gw.OracleGateway(db.connect(), fetch_size=7)
    state: dict[str, dict[Any, dict[str, Any]]] = {t: {} for t in TABLES}
    tables = {(t.owner, t.name): table_of(t.owner, t.name, gateway.columns(gw.TABLE_COLUMNS, (t.owner, t.name))[1],
                                          [k for (k,) in gateway.columns(gw.PRIMARY_KEY, (t.owner, t.name))[1]])
              for t in TABLES.values()}
    maker = EventMaker(OracleSourceInfo("p", "ORCLPDB1"), tables)
    first = min(int(r["SCN"]) for r in rows) - 1
    for tx in buffer.feed_all(_mine(gateway, first, db.current_scn, (db.current_scn - first) // 40 + 1)):
        for rec in maker.transaction(tx):
            if rec.kind is EventKind.TOMBSTONE:
                continue
            assert rec.value is not None
            before, after = rec.value["before"], rec.value["after"]
            if before is not None:
                del state[rec.table.name][before["ID"]]
            if after is not None:
                state[rec.table.name][after["ID"]] = after
    assert buffer.stats.rolled_back_transactions > 0 and buffer.stats.undone_changes > 0
    assert buffer.open_transactions == {}
    for name, table in TABLES.items():
        want = workload.source_rows(name)
        got = [tuple(state[name][k][c.name] for c in table.columns) for k in sorted(state[name])]
        assert got == [tuple(_plain(v) for v in r) for r in want], name


def _plain(v: Any) -> Any:
    """A source value as Debezium writes it for these columns (written here independently):
    TIMESTAMP(6) as microseconds since the epoch, NUMBER(10,2) as the base64 of its unscaled
    value's minimal big-endian two's complement."""
    if isinstance(v, datetime):
        delta = v.replace(tzinfo=UTC) - datetime(1970, 1, 1, tzinfo=UTC)
        return (delta.days * 86400 + delta.seconds) * 1_000_000 + delta.microseconds
    if isinstance(v, Decimal):
        unscaled = int(v.scaleb(2))
        return base64.b64encode(unscaled.to_bytes(unscaled.bit_length() // 8 + 1, "big", signed=True)).decode()
    return v


def test_every_statement_served_parses_as_oracle_sql_and_others_are_refused(workload: OracleWorkload) -> None:
    rows = workload.logminer_rows()
    db = _database(workload, rows)
    gateway = gw.OracleGateway(db.connect())
    gateway.run(gw.CATALOGUE[gw.StatementKind.NLS_SESSION])
    gateway.run(gw.CATALOGUE[gw.StatementKind.UTC_SESSION])
    ((scn,),) = gateway.columns(gw.CURRENT_SCN)[1]
    for t in TABLES.values():
        gateway.columns(gw.TABLE_COLUMNS, (t.owner, t.name))
        gateway.columns(gw.PRIMARY_KEY, (t.owner, t.name))
        gateway.columns(gw.snapshot_select(t.owner, t.name, [c.name for c in t.columns], scn))
    list(_mine(gateway, scn - 1000, scn, 400))
    assert len(set(db.served)) >= 8
    for served in set(db.served):
        # sqlglot's Oracle grammar takes ROLLBACK for the statement; Oracle itself accepts the
        # column V$LOGMNR_CONTENTS.ROLLBACK unquoted (a non-reserved keyword), as Debezium writes it
        sql = served.replace(", ROLLBACK,", ', "ROLLBACK",')
        parsed = sqlglot.parse(sql, read="oracle", error_level=sqlglot.ErrorLevel.RAISE)
        assert len(parsed) == 1 and parsed[0] is not None, sql

    cursor = db.connect().cursor()
    for bad in ["SELECT * FROM V$LOGMNR_CONTENTS", "SELECT CURRENT_SCN FROM V$DATABASE ",
                'SELECT "ID" FROM "INVENTORY"."CUSTOMERS" AS OF SCN 5 WHERE 1=1',
                gw.mining(QUERY).sql]:
        with pytest.raises(FakeOracleError, match="statement not in the catalogue"):
            cursor.execute(bad)
    with pytest.raises(FakeOracleError, match="ORA-01306"):
        cursor.execute(gw.mining(QUERY).oracle_sql, [0, 10])
    with pytest.raises(FakeOracleError, match="ORA-01008"):
        cursor.execute(gw.TABLE_COLUMNS.oracle_sql, ["INVENTORY"])
    with pytest.raises(FakeOracleError, match="procedure not in the catalogue"):
        cursor.callproc("DBMS_LOGMNR.MINE_VALUE", keyword_parameters={})


def test_snapshot_as_of_scn_is_the_committed_state_at_that_scn(workload: OracleWorkload) -> None:
    rows = workload.logminer_rows()
    db = _database(workload, rows)
    gateway = gw.OracleGateway(db.connect())
    t = TABLES["CUSTOMERS"]
    cols = [c.name for c in t.columns]
    final = gateway.columns(gw.snapshot_select(t.owner, t.name, cols, db.current_scn))[1]
    assert final == workload.source_rows("CUSTOMERS")
    first_commit = min(tx.commit_lsn for tx in workload.transactions if any(c.table == "CUSTOMERS"
                                                                            for c in tx.changes))
    assert gateway.columns(gw.snapshot_select(t.owner, t.name, cols, first_commit - 1))[1] == []
    assert gateway.columns(gw.snapshot_select(t.owner, t.name, cols, first_commit))[1] != []
    with pytest.raises(FakeOracleError, match="ORA-08180"):
        gateway.columns(gw.snapshot_select(t.owner, t.name, cols, db.current_scn + 1))
