"""A column added between concurrent transactions, in the shape real LogMiner gives it, captured
into bronze with the mining windows split at every SCN.

Oracle commits implicitly before and after a DDL statement, so LogMiner shows the DDL in a
transaction of its own (``START``, Oracle's own dictionary rows under ``SYS``, the ``DDL`` row,
``COMMIT``). ``ALTER TABLE`` waits for the transactions holding the table's lock, so the table's
changes before it are below it and those after above it; a transaction on another table may span
it. Rows share SCNs: here the DDL row, its commit and the next transaction's first update of the
new column all carry SCN 107. Expected events are written by hand from the rows below."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any

import orjson
import pytest

from bronze.schema import history_path
from cdc_sources.oracle.mining_query import MiningQuerySettings, mining_query
from tests.support.bronze_rows import read_table, read_topic
from tests.support.oracle_capture import SOURCE, capture_once
from tests.support.oracle_fake import LOGMNR_COLUMNS, FakeColumn, FakeOracleDatabase, FakeTable

pytestmark = [pytest.mark.integration]

_ID = FakeColumn("ID", "NUMBER", 22, 10, 0, nullable=False)
_NAME = FakeColumn("NAME", "VARCHAR2", 50)
CUSTOMERS = FakeTable("INVENTORY", "CUSTOMERS", (_ID, _NAME), ("ID",))
WITH_EMAIL = FakeTable("INVENTORY", "CUSTOMERS", (_ID, _NAME, FakeColumn("EMAIL", "VARCHAR2", 100)), ("ID",))
ORDERS = FakeTable("INVENTORY", "ORDERS", (_ID, FakeColumn("QTY", "NUMBER", 22, 5, 0)), ("ID",))
DDL = 'ALTER TABLE "INVENTORY"."CUSTOMERS" ADD "EMAIL" VARCHAR2(100)'
FIRST, LAST = 99, 112


def _row(scn: int, code: int, xid: str, redo: str | None = None, table: str | None = None,
         owner: str = "INVENTORY", info: str | None = None) -> dict[str, Any]:
    row: dict[str, Any] = dict.fromkeys(LOGMNR_COLUMNS)
    row.update({"SCN": scn, "OPERATION_CODE": code, "XID": xid, "SQL_REDO": redo, "TABLE_NAME": table,
                "SEG_OWNER": owner if table else None, "INFO": info, "USERNAME": "APP", "CSF": 0, "ROLLBACK": 0,
                "STATUS": 0, "SSN": 0, "THREAD#": 1, "TIMESTAMP": datetime(2024, 6, 1, 9, 0, scn - 60),
                "OPERATION": {1: "INSERT", 3: "UPDATE", 5: "DDL", 6: "START", 7: "COMMIT"}[code],
                "ROW_ID": f"AAAS1AAAEAAAAD3AA{scn % 26 + 65:c}" if code in (1, 3) else None})
    return row


A, B, C, D = "0a00010001000000", "0b00010001000000", "0c00010001000000", "0d00010001000000"
ROWS = [
    _row(100, 6, A),  # A: on ORDERS, spans the DDL on CUSTOMERS
    _row(101, 1, A, 'insert into "INVENTORY"."ORDERS"("ID","QTY") values (\'1\',\'5\');', "ORDERS"),
    _row(102, 6, B),
    _row(103, 1, B, 'insert into "INVENTORY"."CUSTOMERS"("ID","NAME") values (\'1\',\'ann\');', "CUSTOMERS"),
    _row(104, 7, B),
    _row(105, 6, D),  # D: the DDL's own transaction
    _row(106, 3, D, 'update "SYS"."COL$" set "COL#" = \'3\' where "OBJ#" = \'74858\';', "COL$", owner="SYS"),
    _row(107, 5, D, DDL, "CUSTOMERS", info="USER DDL"),
    _row(107, 7, D),
    _row(107, 6, C),  # C: fills the new column, its first rows at the DDL's SCN
    _row(107, 3, C, 'update "INVENTORY"."CUSTOMERS" set "EMAIL" = \'ann@example.com\' where "ID" = \'1\' and '
                    '"NAME" = \'ann\' and "EMAIL" IS NULL;', "CUSTOMERS"),
    _row(108, 1, C, 'insert into "INVENTORY"."CUSTOMERS"("ID","NAME","EMAIL") values (\'2\',\'bob\','
                    '\'bob@example.com\');', "CUSTOMERS"),
    _row(109, 7, C),
    _row(110, 1, A, 'insert into "INVENTORY"."ORDERS"("ID","QTY") values (\'2\',\'7\');', "ORDERS"),
    _row(111, 7, A),
]
CUSTOMER_EVENTS = [
    ("c", {"ID": 1, "NAME": "ann"}),
    ("u", {"ID": 1, "NAME": "ann", "EMAIL": "ann@example.com"}),
    ("c", {"ID": 2, "NAME": "bob", "EMAIL": "bob@example.com"}),
]
ORDER_EVENTS = [("c", {"ID": 1, "QTY": 5}), ("c", {"ID": 2, "QTY": 7})]


def _database(step: int) -> FakeOracleDatabase:
    """Streaming starts at SCN 99 (the first ``SELECT CURRENT_SCN``); each later one moves ``step``
    further: windows (99, 99+step], ..., up to 112."""
    def no_snapshot(owner: str, table: str, scn: int) -> list[tuple[Any, ...]]:
        raise AssertionError(f"no snapshot is taken ({owner}.{table} at {scn})")

    return FakeOracleDatabase({("INVENTORY", "CUSTOMERS"): CUSTOMERS, ("INVENTORY", "ORDERS"): ORDERS},
                              [dict(r) for r in ROWS], no_snapshot, FIRST - step, mining_query(MiningQuerySettings()),
                              final_scn=LAST, scn_step=step,
                              dictionary_changes=[(107, ("INVENTORY", "CUSTOMERS"), WITH_EMAIL)])


def _events(root: str, table: str) -> list[tuple[str, dict[str, Any]]]:
    return [(r["op"], orjson.loads(r["value"])["after"]) for r in read_topic(root, f"ora.INVENTORY.{table}")]


@pytest.mark.parametrize("step", [1, 2, 3, LAST - FIRST])
def test_the_update_filling_a_new_column_is_captured_whatever_the_window_split(tmp_path: Path, step: int) -> None:
    root = str(tmp_path / "lake")
    db = _database(step)
    capture_once(root, db, options={"snapshot.mode": "no_data"})
    windows = [(int(kw["STARTSCN"]), int(kw["ENDSCN"])) for name, kw in db.calls if name.endswith("START_LOGMNR")]
    assert windows[0] == (FIRST, FIRST + step) and windows[-1][1] == LAST
    assert _events(root, "CUSTOMERS") == CUSTOMER_EVENTS
    assert _events(root, "ORDERS") == ORDER_EVENTS
    history = [orjson.loads(r["value"]) for r in read_table(history_path(root, SOURCE))]
    assert [h["ddl"] for h in history if h["tableChanges"][0]["type"] == "ALTER"] == [DDL]
