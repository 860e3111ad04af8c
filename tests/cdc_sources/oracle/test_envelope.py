"""Golden events: the create, update, delete and truncate examples of Debezium's Oracle connector
documentation, produced from the ``V$LOGMNR_CONTENTS`` rows they describe, through the
transaction buffer and the envelope.

The documented payloads are of Debezium 2.1 and inconsistent in places; the expected values are
corrected to Debezium 3.6.3 (the ``source`` fields as its buffered commit handler fills them, read
from the 3.6.3 jar; their order and types proved by test_offset.py):

- ``version`` is ``3.6.3.Final``; ``snapshot`` is the string ``"false"`` (the create, update and
  delete examples show the boolean ``false``);
- the create, update and delete examples leave out ``connector``, ``db``, ``sequence``,
  ``schema``, ``table`` and ``lcr_position`` (the truncate example has them); 3.6.3 also writes
  ``ts_us``, ``ts_ns``, ``redo_sql``, ``row_id``, ``commit_ts_ms``, ``start_scn``,
  ``start_ts_ms`` and ``txSeq``, and the envelope has ``transaction`` (null);
- ``txId`` is LogMiner's XID as 16 hex digits: the documented ``6.28.807`` (undo segment 6,
  slot 28, sequence 807) is ``06001c0027030000``, and ``6.9.809`` is ``0600090029030000`` (the
  truncate example already uses this form);
- ``ssn`` is 0: Debezium 3.6.3 never sets it from LogMiner's ``SSN`` (documented: 1);
- the key schema is named ``server1.INVENTORY.CUSTOMERS.Key`` but the envelope
  ``server1.DEBEZIUM.CUSTOMERS.Envelope``: one table has one owner; ``INVENTORY`` is used;
- the delete example's ``scn`` (2122184) and ``ts_ms`` precede the create's of the same row, with
  the create's ``txId``: each example is replayed as its own transaction.
The envelope's processing-time ``ts_*`` fields are the capture's clock and not compared.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from cdc_sources.oracle.converters import OracleColumn, OracleType
from cdc_sources.oracle.envelope import (
    EnvelopeSettings,
    EventKind,
    EventMaker,
    OracleSchemaChangeError,
    OracleTable,
)
from cdc_sources.oracle.source import OracleSourceInfo
from cdc_sources.oracle.transactions import LogMinerRow, Operation, TransactionBuffer

CUSTOMERS = OracleTable("INVENTORY", "CUSTOMERS", (
    OracleColumn("ID", OracleType.NUMBER, 9, 0, optional=False),
    *(OracleColumn(n, OracleType.VARCHAR2, 255, optional=False) for n in ("FIRST_NAME", "LAST_NAME", "EMAIL")),
), ("ID",))
TEST_TABLE = OracleTable("DEBEZIUM", "TEST_TABLE", (OracleColumn("ID", OracleType.NUMBER, 9, 0, optional=False),),
                         ("ID",))
RS_ID = "001234.00012345.0124"
XID = "06001c0027030000"
ANNE = {"ID": 1004, "FIRST_NAME": "Anne", "LAST_NAME": "Kretchmar", "EMAIL": "annek@noanswer.org"}
ANNE2 = {**ANNE, "EMAIL": "anne@example.com"}
INSERT = ("insert into \"INVENTORY\".\"CUSTOMERS\"(\"ID\",\"FIRST_NAME\",\"LAST_NAME\",\"EMAIL\") "
          "values ('1004','Anne','Kretchmar','annek@noanswer.org');")
UPDATE = ("update \"INVENTORY\".\"CUSTOMERS\" set \"EMAIL\" = 'anne@example.com' where \"ID\" = '1004' and "
          "\"FIRST_NAME\" = 'Anne' and \"LAST_NAME\" = 'Kretchmar' and \"EMAIL\" = 'annek@noanswer.org';")
DELETE = ("delete from \"INVENTORY\".\"CUSTOMERS\" where \"ID\" = '1004' and \"FIRST_NAME\" = 'Anne' and "
          "\"LAST_NAME\" = 'Kretchmar' and \"EMAIL\" = 'anne@example.com';")


def _local(ms: int, offset: timedelta = timedelta(0)) -> datetime:
    """LogMiner's TIMESTAMP (database local time, naive) of a documented UTC ``ts_ms``."""
    return (datetime.fromtimestamp(ms / 1000, UTC) + offset).replace(tzinfo=None)


def _tx(xid: str, scn: int, ms: int, op: Operation, redo: str, *, owner: str = "INVENTORY",
        table: str = "CUSTOMERS", offset: timedelta = timedelta(0)) -> list[LogMinerRow]:
    t = _local(ms, offset)
    return [
        LogMinerRow(scn, Operation.START, xid, timestamp=t, username="user", rs_id=RS_ID),
        LogMinerRow(scn, op, xid, redo, t, table_name=table, seg_owner=owner, operation=op.name, username="user",
                    row_id="AAAR5wAAEAAAAJbAAA", rs_id=RS_ID, ssn=1),
        LogMinerRow(scn, Operation.COMMIT, xid, timestamp=t, username="user", rs_id=RS_ID),
    ]


def _source(name: str, db: str, schema: str, table: str, xid: str, scn: int, commit: int, ms: int) -> dict[str, Any]:
    return {"version": "3.6.3.Final", "connector": "oracle", "name": name, "ts_ms": ms, "snapshot": "false",
            "db": db, "sequence": None, "ts_us": ms * 1000, "ts_ns": ms * 10**6, "schema": schema, "table": table,
            "txId": xid, "scn": str(scn), "commit_scn": str(commit), "lcr_position": None, "rs_id": RS_ID, "ssn": 0,
            "redo_thread": 1, "user_name": "user", "redo_sql": None, "row_id": "AAAR5wAAEAAAAJbAAA",
            "commit_ts_ms": ms, "start_scn": str(scn), "start_ts_ms": ms, "txSeq": 1}


def _run(rows: list[LogMinerRow], maker: EventMaker) -> list[Any]:
    return [r for tx in TransactionBuffer().feed_all(rows) for r in maker.transaction(tx)]


def _dump(obj: Any) -> str:
    return json.dumps(obj, separators=(",", ":"))


SERVER1 = EventMaker(OracleSourceInfo("server1", "ORCLPDB1"), {("INVENTORY", "CUSTOMERS"): CUSTOMERS})


def test_documented_create_update_delete_field_by_field_in_order() -> None:
    cases = [
        (_tx(XID, 2122185, 1520085154000, Operation.INSERT, INSERT), None, ANNE, "c", 2122185, 1520085154000),
        (_tx("0600090029030000", 2125544, 1520085811000, Operation.UPDATE, UPDATE), ANNE, ANNE2, "u", 2125544,
         1520085811000),
        (_tx(XID, 2122184, 1520085153000, Operation.DELETE, DELETE), ANNE2, None, "d", 2122184, 1520085153000),
    ]
    for rows, before, after, op, scn, ms in cases:
        records = _run(rows, SERVER1)
        want = {"before": before, "after": after,
                "source": _source("server1", "ORCLPDB1", "INVENTORY", "CUSTOMERS", rows[0].xid, scn, scn, ms),
                "transaction": None, "op": op}
        assert _dump(records[0].value) == _dump(want)
        assert _dump(records[0].key) == '{"ID":1004}'
    # the delete is followed by its tombstone: the same key, a null value
    deleted = _run(cases[2][0], SERVER1)
    assert [(r.kind, r.key, r.value) for r in deleted[1:]] == [(EventKind.TOMBSTONE, {"ID": 1004}, None)]


def test_documented_truncate_with_truncates_not_skipped() -> None:
    maker = EventMaker(OracleSourceInfo("oracle_server", "ORCLPDB1"), {("DEBEZIUM", "TEST_TABLE"): TEST_TABLE},
                       EnvelopeSettings(skipped_operations=frozenset()))
    t = _local(1638974535000)
    rows = [LogMinerRow(13234397, Operation.DDL, "02000a0037030000", 'truncate table "DEBEZIUM"."TEST_TABLE";', t,
                        table_name="TEST_TABLE", seg_owner="DEBEZIUM", operation="DDL", username="user",
                        row_id="AAAR5wAAEAAAAJbAAA", rs_id=RS_ID, ssn=1)]
    records = _run(rows, maker)
    assert len(records) == 1 and records[0].key is None
    source = _source("oracle_server", "ORCLPDB1", "DEBEZIUM", "TEST_TABLE", "02000a0037030000", 13234397,
                     13234397, 1638974535000)
    # a DDL is committed by itself: its commit SCN is its own (the documented 13271102 is not reachable
    # from one LogMiner DDL row); the documented envelope otherwise
    assert _dump(records[0].value) == _dump({"before": None, "after": None, "source": source, "transaction": None,
                                             "op": "t"})
    # Debezium's default skipped.operations=t: no record
    assert _run(rows, EventMaker(OracleSourceInfo("oracle_server", "ORCLPDB1"),
                                 {("DEBEZIUM", "TEST_TABLE"): TEST_TABLE})) == []


def test_documented_key_schema_and_value_fields() -> None:
    version = SERVER1.schema_version(CUSTOMERS)
    assert version.key_schema == ('{"type":"struct","fields":[{"type":"int32","optional":false,"field":"ID"}],'
                                  '"optional":false,"name":"server1.INVENTORY.CUSTOMERS.Key"}')
    value = json.loads(version.value_schema)
    assert value["name"] == "server1.INVENTORY.CUSTOMERS.Envelope"
    assert [f["field"] for f in value["fields"]] == ["before", "after", "source", "transaction", "op", "ts_ms",
                                                     "ts_us", "ts_ns"]
    before = value["fields"][0]
    assert before["name"] == "server1.INVENTORY.CUSTOMERS.Value"
    assert before["fields"] == [{"type": "int32", "optional": False, "field": "ID"},
                                *({"type": "string", "optional": False, "field": n}
                                  for n in ("FIRST_NAME", "LAST_NAME", "EMAIL"))]
    assert value["fields"][2]["name"] == "io.debezium.connector.oracle.Source"


def test_key_change_is_delete_tombstone_create_with_key_headers() -> None:
    redo = ("update \"INVENTORY\".\"CUSTOMERS\" set \"ID\" = '1005' where \"ID\" = '1004' and "
            "\"FIRST_NAME\" = 'Anne' and \"LAST_NAME\" = 'Kretchmar' and \"EMAIL\" = 'annek@noanswer.org';")
    records = _run(_tx(XID, 3000, 1520085154000, Operation.UPDATE, redo), SERVER1)
    assert [(r.kind, r.key) for r in records] == [(EventKind.DELETE, {"ID": 1004}), (EventKind.TOMBSTONE, {"ID": 1004}),
                                                  (EventKind.CREATE, {"ID": 1005})]
    assert records[0].headers == (("__debezium.newkey", '{"ID":1005}'),)
    assert records[2].headers == (("__debezium.oldkey", '{"ID":1004}'),)
    assert records[0].value is not None and records[0].value["before"] == ANNE
    assert records[2].value is not None and records[2].value["after"] == {**ANNE, "ID": 1005}
    # without tombstones: delete and create only
    quiet = EventMaker(OracleSourceInfo("server1", "ORCLPDB1"), {("INVENTORY", "CUSTOMERS"): CUSTOMERS},
                       EnvelopeSettings(tombstones_on_delete=False))
    assert [r.kind for r in _run(_tx(XID, 3000, 1520085154000, Operation.UPDATE, redo), quiet)] == [
        EventKind.DELETE, EventKind.CREATE]


def test_transaction_fields_sequence_start_user_and_database_offset() -> None:
    """Two changes in one transaction: txSeq counts them, start_* are the first change's, ts_ms is
    LogMiner's local TIMESTAMP shifted by the database's offset, commit_ts_ms the commit's."""
    offset = timedelta(hours=2)
    t0, t1, t2 = _local(1_700_000_000_000, offset), _local(1_700_000_001_000, offset), _local(1_700_000_005_000,
                                                                                              offset)
    redo2 = INSERT.replace("1004", "1010")
    rows = [LogMinerRow(10, Operation.START, XID, timestamp=t0, username="APP"),
            LogMinerRow(11, Operation.INSERT, XID, INSERT, t0, table_name="CUSTOMERS", seg_owner="INVENTORY",
                        username="APP"),
            LogMinerRow(12, Operation.INSERT, "0700010001000000", redo2, t1, table_name="OTHER",
                        seg_owner="INVENTORY", username="X"),
            LogMinerRow(13, Operation.INSERT, XID, redo2, t1, table_name="CUSTOMERS", seg_owner="INVENTORY",
                        username="APP"),
            LogMinerRow(20, Operation.COMMIT, XID, timestamp=t2, username="APP")]
    maker = EventMaker(OracleSourceInfo("p", "DB"), {("INVENTORY", "CUSTOMERS"): CUSTOMERS},
                       EnvelopeSettings(database_offset=offset, include_redo_sql=True))
    records = _run(rows, maker)
    sources = [r.value["source"] for r in records if r.value is not None]
    assert [(s["scn"], s["txSeq"], s["start_scn"], s["start_ts_ms"], s["ts_ms"], s["commit_ts_ms"], s["user_name"])
            for s in sources] == [("11", 1, "11", 1_700_000_000_000, 1_700_000_000_000, 1_700_000_005_000, "APP"),
                                  ("13", 2, "11", 1_700_000_000_000, 1_700_000_001_000, 1_700_000_005_000, "APP")]
    assert [s["redo_sql"] for s in sources] == [INSERT, redo2]
    assert [r.commit_scn for r in records] == [20, 20]


def test_keyless_table_has_null_keys_and_ddl_is_refused_by_name() -> None:
    keyless = OracleTable("INVENTORY", "CUSTOMERS", CUSTOMERS.columns)
    maker = EventMaker(OracleSourceInfo("p", "DB"), {("INVENTORY", "CUSTOMERS"): keyless})
    records = _run(_tx(XID, 5, 1520085154000, Operation.DELETE, DELETE), maker)
    assert [(r.kind, r.key) for r in records] == [(EventKind.DELETE, None), (EventKind.TOMBSTONE, None)]
    assert maker.schema_version(keyless).key_schema == "null"
    ddl = [LogMinerRow(7, Operation.DDL, XID, 'alter table "INVENTORY"."CUSTOMERS" add "PHONE" varchar2(20);',
                       _local(0), table_name="CUSTOMERS", seg_owner="INVENTORY", username="APP")]
    with pytest.raises(OracleSchemaChangeError, match=r"SCN 7 .*INVENTORY\.CUSTOMERS.*add \\?\"PHONE"):
        _run(ddl, maker)


def test_ddl_of_other_tables_is_ignored_and_an_unknown_captured_table_is_an_error() -> None:
    maker = EventMaker(OracleSourceInfo("p", "DB"), {("INVENTORY", "CUSTOMERS"): CUSTOMERS},
                       captures=lambda owner, name: owner == "INVENTORY")
    other = [LogMinerRow(7, Operation.DDL, XID, 'alter table "HR"."EMP" add "X" number;', _local(0),
                         table_name="EMP", seg_owner="HR", username="APP")]
    assert _run(other, maker) == []
    created = _tx(XID, 9, 1520085154000, Operation.INSERT, INSERT.replace('"CUSTOMERS"', '"NEWTAB"'),
                  table="NEWTAB")
    with pytest.raises(OracleSchemaChangeError, match=r"INVENTORY\.NEWTAB is captured .* restart the capture"):
        _run(created, maker)
