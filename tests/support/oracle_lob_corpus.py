"""A fake database whose redo holds LOB operations (``lob.enabled``), hand-written in the shapes of
Debezium's own parser tests and its commit consumer's documentation: ``INVENTORY.DOCS`` (``ID``
key, ``NAME``, ``BODY CLOB``, ``IMG BLOB``), empty at the snapshot (SCN 1000), then four
transactions:

1. (SCN 1010-1019) insert row 1 with ``EMPTY_CLOB()``/``EMPTY_BLOB()``, its ``BODY`` written in two
   ``LOB_WRITE`` pieces (the second split over two ``CSF`` rows) and its ``IMG`` in one; insert row 2,
   whose small ``BODY`` LogMiner gives as an ``update`` (its ``IMG`` stays ``EMPTY_BLOB()``);
2. (1020-1022) update row 1's ``NAME`` only: its LOBs are not in the redo;
3. (1030-1033) update row 1's ``BODY`` through a ``SELECT_LOB_LOCATOR`` and a ``LOB_WRITE``;
4. (1040-1042) delete row 2.

The expected events are written by hand from Debezium's rules (see ``tests/pipelines/test_oracle_lobs.py``).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from cdc_sources.oracle.mining_query import MiningQuerySettings, mining_query
from tests.support.oracle_fake import LOGMNR_COLUMNS, FakeColumn, FakeOracleDatabase, FakeTable

__all__ = ["DOCS", "database", "rows"]

DOCS = FakeTable("INVENTORY", "DOCS", (
    FakeColumn("ID", "NUMBER", 22, 10, 0, nullable=False), FakeColumn("NAME", "VARCHAR2", 20),
    FakeColumn("BODY", "CLOB", 4000), FakeColumn("IMG", "BLOB", 4000)), ("ID",))
_DECLARE = ("DECLARE \n loc_c CLOB; \n buf_c VARCHAR2(6174); \n loc_b BLOB; \n buf_b RAW(6174); \n loc_nc NCLOB; \n"
            " buf_nc NVARCHAR2(6174); \nBEGIN\n")
_T = '"INVENTORY"."DOCS"'
_OPS = {1: "INSERT", 2: "DELETE", 3: "UPDATE", 6: "START", 7: "COMMIT", 9: "SEL_LOB_LOCATOR", 10: "LOB_WRITE"}
R1, R2 = "AAAS1AAAEAAAAD3AAA", "AAAS1AAAEAAAAD3AAB"


def _locator(column: str, where: str, into: str) -> str:
    return f'{_DECLARE} select "{column}" into {into} from {_T} where {where} for update;'


def _write(data: str, length: int, offset: int, buf: str, loc: str) -> str:
    return f"{_DECLARE} {buf} := {data};\n  dbms_lob.write({loc}, {length}, {offset}, {buf});\nEND;"


def _row(scn: int, code: int, xid: str, sql: str | None = None, row_id: str | None = None,
         csf: int = 0) -> dict[str, Any]:
    dml = code not in (6, 7)
    return {**dict.fromkeys(LOGMNR_COLUMNS), "SCN": scn, "OPERATION_CODE": code, "XID": xid, "SQL_REDO": sql,
            "TABLE_NAME": "DOCS" if dml else None, "SEG_OWNER": "INVENTORY" if dml else None,
            "OPERATION": _OPS[code], "ROW_ID": row_id, "USERNAME": "INVENTORY", "CSF": csf, "ROLLBACK": 0,
            "STATUS": 0, "SSN": 0, "THREAD#": 1, "RS_ID": f" 0x000001.{scn:08x}.0010 ",
            "TIMESTAMP": datetime(2024, 6, 1, 9, 0, scn % 60)}


def rows() -> list[dict[str, Any]]:
    """The ``V$LOGMNR_CONTENTS`` rows of the four transactions."""
    a, b, c, d = "0a00010001000000", "0b00010001000000", "0c00010001000000", "0d00010001000000"
    w1 = "\"ID\" = '1' and \"NAME\" = 'first'"
    second = _write("'world'", 5, 7, "buf_c", "loc_c")
    cut = second.index("dbms_lob")
    return [
        _row(1010, 6, a),
        _row(1011, 1, a, f"insert into {_T}(\"ID\",\"NAME\",\"BODY\",\"IMG\") values "
                         "('1','first',EMPTY_CLOB(),EMPTY_BLOB());", R1),
        _row(1012, 9, a, _locator("BODY", w1, "loc_c"), R1),
        _row(1013, 10, a, _write("'hello '", 6, 1, "buf_c", "loc_c"), R1),
        _row(1014, 10, a, second[:cut], R1, csf=1),
        _row(1014, 10, a, second[cut:], R1),
        _row(1015, 9, a, _locator("IMG", w1, "loc_b"), R1),
        _row(1016, 10, a, _write("HEXTORAW('0102ff')", 3, 1, "buf_b", "loc_b"), R1),
        _row(1017, 1, a, f"insert into {_T}(\"ID\",\"NAME\",\"BODY\",\"IMG\") values "
                         "('2','second',EMPTY_CLOB(),EMPTY_BLOB());", R2),
        _row(1018, 3, a, f"update {_T} set \"BODY\" = 'short' where \"ID\" = '2' and \"NAME\" = 'second';", R2),
        _row(1019, 7, a),
        _row(1020, 6, b),
        _row(1021, 3, b, f"update {_T} set \"NAME\" = 'renamed' where \"ID\" = '1' and \"NAME\" = 'first';", R1),
        _row(1022, 7, b),
        _row(1030, 6, c),
        _row(1031, 9, c, _locator("BODY", "\"ID\" = '1' and \"NAME\" = 'renamed'", "loc_c"), R1),
        _row(1032, 10, c, _write("'new body'", 8, 1, "buf_c", "loc_c"), R1),
        _row(1033, 7, c),
        _row(1040, 6, d),
        _row(1041, 2, d, f"delete from {_T} where \"ID\" = '2' and \"NAME\" = 'second';", R2),
        _row(1042, 7, d),
    ]


def database(*, lob_enabled: bool = True) -> FakeOracleDatabase:
    """The database, live from SCN 995 to 1050 (the snapshot at SCN 1000 finds the table empty)."""
    return FakeOracleDatabase({("INVENTORY", "DOCS"): DOCS}, rows(), lambda owner, table, scn: [], 995,
                              mining_query(MiningQuerySettings(lob_enabled=lob_enabled)), final_scn=1050, scn_step=5)
