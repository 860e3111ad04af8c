"""Oracle signals over the mined stream: the signal table is mined and its signals applied even when
the table filters leave it out (its changes then reach no topic); data-collection names lose their
database part."""

from __future__ import annotations

import logging
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from cdc_sources.common.signals import parse_collection
from cdc_sources.oracle.incremental_session import local_name
from cdc_sources.oracle.mining_query import MiningQuerySettings, mining_query
from tests.support.bronze_rows import read_topic
from tests.support.oracle_capture import capture_once
from tests.support.oracle_fake import LOGMNR_COLUMNS, FakeColumn, FakeOracleDatabase, FakeTable

ITEMS = FakeTable("INVENTORY", "ITEMS", (FakeColumn("ID", "NUMBER", 22, 10, 0, nullable=False),
                                         FakeColumn("NAME", "VARCHAR2", 50)), ("ID",))
SIGNALS = FakeTable("INVENTORY", "DBZ_SIGNAL", (FakeColumn("ID", "VARCHAR2", 42, nullable=False),
                                                FakeColumn("TYPE", "VARCHAR2", 32, nullable=False),
                                                FakeColumn("DATA", "VARCHAR2", 2048)), ("ID",))


def _row(scn: int, code: int, op: str, xid: str, redo: str | None = None, table: str | None = None) -> dict[str, Any]:
    return {**dict.fromkeys(LOGMNR_COLUMNS), "SCN": scn, "OPERATION_CODE": code, "OPERATION": op, "XID": xid,
            "SQL_REDO": redo, "TABLE_NAME": table, "SEG_OWNER": "INVENTORY" if table else None, "ROW_ID": "R1",
            "CSF": 0, "ROLLBACK": 0, "STATUS": 0, "SSN": 0, "THREAD#": 1, "USERNAME": "APP"}


def test_signals_are_read_from_a_signal_table_the_filters_leave_out(tmp_path: Path,
                                                                    caplog: pytest.LogCaptureFixture) -> None:
    x, y = "0a000b000c000000", "0a000b000d000000"
    sig = '"INVENTORY"."DBZ_SIGNAL"'
    contents = [
        _row(3000, 6, "START", x),
        _row(3001, 1, "INSERT", x, f"insert into {sig}(\"ID\",\"TYPE\",\"DATA\") values "
             "('s1','log','{\"message\": \"hello from the signal table\"}');", "DBZ_SIGNAL"),
        _row(3002, 7, "COMMIT", x),
        _row(3010, 6, "START", y),
        _row(3011, 1, "INSERT", y, "insert into \"INVENTORY\".\"ITEMS\"(\"ID\",\"NAME\") values ('7','seven');",
             "ITEMS"),
        _row(3012, 7, "COMMIT", y),
    ]
    db = FakeOracleDatabase({("INVENTORY", "ITEMS"): ITEMS, ("INVENTORY", "DBZ_SIGNAL"): SIGNALS}, contents,
                            lambda o, t, s: [(Decimal(1), "one")] if t == "ITEMS" else [], 2000,
                            mining_query(MiningQuerySettings()), final_scn=3100, scn_step=50)
    root = str(tmp_path / "lake")
    options = {"table.include.list": "INVENTORY\\.ITEMS", "signal.data.collection": "ORCLPDB1.INVENTORY.DBZ_SIGNAL"}
    with caplog.at_level(logging.INFO, logger="cdc_sources.common.incremental_snapshot"):
        capture_once(root, db, options=options)
    assert any("hello from the signal table" in r.getMessage() for r in caplog.records), caplog.text
    assert [r["op"] for r in read_topic(root, "ora.INVENTORY.ITEMS")] == ["r", "c"]
    assert read_topic(root, "ora.INVENTORY.DBZ_SIGNAL") == []


def test_data_collection_names_lose_their_database_part() -> None:
    for text in ("ORCLPDB1.INVENTORY.ITEMS", "orclpdb1.INVENTORY.ITEMS", "INVENTORY.ITEMS",
                 '"ORCLPDB1"."INVENTORY"."ITEMS"', "ORCLPDB1\\.INVENTORY\\.IT.*"):
        assert local_name(parse_collection(text), "ORCLPDB1").matches("INVENTORY", "ITEMS"), text
    assert not local_name(parse_collection("CDB.INVENTORY.ITEMS"), "ORCLPDB1").matches("INVENTORY", "ITEMS")


def test_signals_are_read_from_the_signal_file(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    signals = tmp_path / "signals.jsonl"
    signals.write_text('{"id": "f1", "type": "log", "data": {"message": "hello from the file"}}\n')
    db = FakeOracleDatabase({("INVENTORY", "ITEMS"): ITEMS}, [], lambda o, t, s: [(Decimal(1), "one")], 2000,
                            mining_query(MiningQuerySettings()), final_scn=2100, scn_step=50)
    options = {"table.include.list": "INVENTORY\\.ITEMS", "signal.enabled.channels": "file",
               "signal.file": str(signals)}
    with caplog.at_level(logging.INFO, logger="cdc_sources.common.incremental_snapshot"):
        capture_once(str(tmp_path / "lake"), db, options=options)
    assert any("hello from the file" in r.getMessage() for r in caplog.records), caplog.text
    assert not signals.exists()  # taken as read
