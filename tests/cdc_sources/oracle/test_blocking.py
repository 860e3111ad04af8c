"""Oracle blocking snapshots through the fake connection, on a hand-written LogMiner corpus in which
the signal's transaction and another one commit at the same SCN (on two redo threads), and a later
transaction commits in the next mining window.

Expectations are written by hand from the corpus (the table's state at each SCN is the test's own
list, not the connector's): streaming pauses at the end of the window holding the signal (after
both commits sharing its SCN, never between them), the table is read as of the window's upper
SCN, every record's order key is above the previous one's, no checkpoint is passed on between the
signal and the pause, a restart from the pause reads the table again to the same records, and a
restart from before the signal acts on it again. The progress reaches the metrics."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

import orjson

from bronze.writer import BronzeWriter
from cdc_sources.common.blocking_snapshot import K_ID
from cdc_sources.oracle.mining_query import MiningQuerySettings, mining_query
from cdc_sources.spi import ChangeBlock, ChangeRecord, Checkpoint, StreamItem
from cdc_sources.spi.snapshot_progress import BlockingProgress
from pipelines.coordinator import Coordinator
from pipelines.metrics import SourceMetrics
from tests.support.oracle_capture import SOURCE, connector
from tests.support.oracle_fake import LOGMNR_COLUMNS, FakeColumn, FakeOracleDatabase, FakeTable

ITEMS = FakeTable("APP", "ITEMS", (FakeColumn("ID", "NUMBER", 22, 10, 0, nullable=False),
                                   FakeColumn("NAME", "VARCHAR2", 20)), ("ID",))
PARTS = FakeTable("APP", "PARTS", (FakeColumn("ID", "NUMBER", 22, 10, 0, nullable=False),), ("ID",))
SIGNALS = FakeTable("APP", "DEBEZIUM_SIGNAL", (FakeColumn("ID", "VARCHAR2", 42, nullable=False),
                                               FakeColumn("TYPE", "VARCHAR2", 32, nullable=False),
                                               FakeColumn("DATA", "VARCHAR2", 2048)), ("ID",))
OPTIONS = {"table.include.list": "APP\\.ITEMS,APP\\.PARTS", "signal.data.collection": "ORCLPDB1.APP.DEBEZIUM_SIGNAL"}
SIGNAL = '{"data-collections": ["ORCLPDB1.APP.ITEMS", "ORCLPDB1.APP.PARTS"], "type": "blocking"}'
X1, X2, X3, X4 = "0100020003000000", "0200030004000000", "0300040005000000", "0400050006000000"


def _row(scn: int, code: int, xid: str, operation: str, redo: str | None = None, table: str | None = None,
         thread: int = 1, row_id: str | None = None) -> dict[str, Any]:
    return {**dict.fromkeys(LOGMNR_COLUMNS), "SCN": scn, "OPERATION_CODE": code, "XID": xid, "SQL_REDO": redo,
            "TABLE_NAME": table, "SEG_OWNER": "APP" if table else None, "OPERATION": operation, "ROW_ID": row_id,
            "CSF": 0, "ROLLBACK": 0, "STATUS": 0, "SSN": 0, "THREAD#": thread, "USERNAME": "APP",
            "TIMESTAMP": datetime(2024, 5, 1, 10, 0, scn % 60)}


CONTENTS = [
    _row(100, 6, X1, "START"),
    _row(101, 1, X1, "INSERT", """insert into "APP"."ITEMS"("ID","NAME") values ('1','a');""", "ITEMS", row_id="A1"),
    _row(102, 7, X1, "COMMIT"),
    _row(103, 6, X2, "START"),
    _row(104, 1, X2, "INSERT", f"""insert into "APP"."DEBEZIUM_SIGNAL"("ID","TYPE","DATA") values """
                               f"""('b-1','execute-snapshot','{SIGNAL}');""", "DEBEZIUM_SIGNAL", row_id="S1"),
    _row(104, 6, X3, "START", thread=2),
    _row(105, 1, X3, "INSERT", """insert into "APP"."ITEMS"("ID","NAME") values ('2','b');""", "ITEMS", 2, "A2"),
    _row(106, 7, X2, "COMMIT"),
    _row(106, 7, X3, "COMMIT", thread=2),  # the same commit SCN, on another redo thread
    _row(107, 6, X4, "START"),
    _row(108, 3, X4, "UPDATE", """update "APP"."ITEMS" set "NAME" = 'a2' where "ID" = '1' and "NAME" = 'a';""",
         "ITEMS", row_id="A1"),
    _row(109, 7, X4, "COMMIT"),
]


def _rows_as_of(owner: str, table: str, scn: int) -> list[tuple[Any, ...]]:
    """The tables' states, written by hand from the corpus."""
    if table == "PARTS":
        return [(7,), (8,)]
    if table == "DEBEZIUM_SIGNAL":
        return [("b-1", "execute-snapshot", SIGNAL)] if scn >= 106 else []
    state = {}
    if scn >= 102:
        state[1] = (1, "a")
    if scn >= 106:
        state[2] = (2, "b")
    if scn >= 109:
        state[1] = (1, "a2")
    return [state[k] for k in sorted(state)]


def _database(scn: int = 100) -> FakeOracleDatabase:
    # from 100: windows (99, 106] then (106, 110], each SELECT CURRENT_SCN moving the SCN 6 further, up to 110
    return FakeOracleDatabase({("APP", "ITEMS"): ITEMS, ("APP", "PARTS"): PARTS, ("APP", "DEBEZIUM_SIGNAL"): SIGNALS},
                              [dict(r) for r in CONTENTS], _rows_as_of, scn, mining_query(MiningQuerySettings()),
                              final_scn=110, scn_step=6)


def _stream(offset: dict[str, Any], scn: int = 100) -> list[StreamItem]:
    session = connector(_database(scn), OPTIONS).open(offset)
    try:
        return list(session.stream(until_idle=True))
    finally:
        session.close()


def _records(items: Sequence[StreamItem]) -> list[tuple[str, str | None, str | None, tuple[int, ...], Any]]:
    """(topic, op, key, order key, value) of every record, in stream order."""
    out = []
    for item in items:
        if isinstance(item, ChangeBlock):
            for i in range(len(item)):
                key = None if item.keys is None else item.keys[i].as_py()
                out.append((item.topic, item.op, key, item.order_key(i), orjson.loads(item.values[i].as_py())))
        for r in item if isinstance(item, list) else [item] if isinstance(item, ChangeRecord) else []:
            out.append((r.topic, r.op, r.key, r.order_key, None if r.value is None else orjson.loads(r.value)))
    return out


def _snapshot(records: list[Any]) -> list[tuple[str, str, dict[str, Any], str, str]]:
    return sorted((t, k, v["after"], v["source"]["snapshot"], v["source"]["scn"]) for t, op, k, _, v in records
                  if op == "r")


EXPECTED = sorted([("ora.APP.ITEMS", '{"ID":1}', {"ID": 1, "NAME": "a"}, "first", "106"),
                   ("ora.APP.ITEMS", '{"ID":2}', {"ID": 2, "NAME": "b"}, "last_in_data_collection", "106"),
                   ("ora.APP.PARTS", '{"ID":7}', {"ID": 7}, "first_in_data_collection", "106"),
                   ("ora.APP.PARTS", '{"ID":8}', {"ID": 8}, "last", "106")])


def test_blocking_snapshot_pauses_at_the_end_of_the_mining_window() -> None:
    items = _stream({"scn": "99"})
    records = _records(items)
    keys = [r[3] for r in records]
    assert keys == sorted(keys) and len(set(keys)) == len(keys)  # bronze's order: each above the one before
    ops = [(r[1], r[2]) for r in records]
    # X1; X3, committed at 106 with the signal's X2 (whose table is not captured); the snapshot; X4 (next window)
    assert ops[:2] == [("c", '{"ID":1}'), ("c", '{"ID":2}')] and ops[-1] == ("u", '{"ID":1}')
    assert [op for op, _ in ops[2:-1]] == ["r"] * 4
    assert _snapshot(records) == EXPECTED  # the tables as of 106: X3 in, X4 not

    # no checkpoint between the signal's transaction and the pause: a crash there reads the signal again
    checkpoints = [i.offset.to_dict() for i in items if isinstance(i, Checkpoint)]
    x1 = next(n for n, o in enumerate(checkpoints) if o.get("commit_scn") == f"102:1:{X1}")
    pause = checkpoints[x1 + 1]
    assert pause.get(K_ID) and pause["commit_scn"] == f"106:1:{X2},106:2:{X3}", checkpoints

    # a restart from the pause reads the tables again: the same records, then only X4
    again = _records(_stream(pause, 106))  # the database's SCN is past the pause
    assert [(r[1], r[2]) for r in again if r[1] != "r"] == [("u", '{"ID":1}')]
    assert [(r[0], r[2], r[3]) for r in again if r[1] == "r"] == [(r[0], r[2], r[3]) for r in records if r[1] == "r"]
    assert _snapshot(again) == EXPECTED

    # a restart from X1's checkpoint (the last one stored before the signal) acts on the signal again
    replay = _records(_stream(checkpoints[x1]))
    assert [r[3] for r in replay] == keys[1:] and _snapshot(replay) == EXPECTED


class _Recording(SourceMetrics):
    def __init__(self) -> None:
        super().__init__(SOURCE, "oracle")
        self.seen: list[tuple[bool, bool, int, int, dict[str, int]]] = []

    def blocking_snapshot(self, progress: BlockingProgress) -> None:
        super().blocking_snapshot(progress)
        self.seen.append((self.snapshot_running, self.snapshot_completed, self.total_table_count,
                          self.remaining_table_count, dict(self.rows_scanned)))


def test_blocking_snapshot_progress_reaches_the_metrics(tmp_path: Path) -> None:
    metrics = _Recording()
    writer = BronzeWriter(str(tmp_path / "lake"), SOURCE, None)
    try:
        session = connector(_database(), OPTIONS).open({"scn": "99"})
        try:
            Coordinator(session, writer, None, commit_interval_ms=50, commit_max_records=50,
                        metrics=metrics).run(until_idle=True)
        finally:
            session.close()
    finally:
        writer.close()
    assert metrics.seen == [(True, False, 2, 2, {}), (True, False, 2, 1, {"APP.ITEMS": 2}),
                            (True, False, 2, 0, {"APP.ITEMS": 2, "APP.PARTS": 2}),
                            (False, True, 2, 0, {"APP.ITEMS": 2, "APP.PARTS": 2})]


def test_filtered_blocking_selects_parse_as_oracle_sql() -> None:
    """A signal's filter: a condition is the flashback select's ``WHERE``; a full ``SELECT`` is read
    as written, its rows' captured columns taken from it (sqlglot's Oracle grammar is the judge)."""
    import sqlglot
    from sqlglot import exp

    from cdc_sources.oracle.blocking import blocking_select

    plain = blocking_select("APP", "ITEMS", ["ID", "NAME"], 42, None)
    assert plain.oracle_sql == 'SELECT "ID", "NAME" FROM "APP"."ITEMS" AS OF SCN 42'
    where = blocking_select("APP", "ITEMS", ["ID", "NAME"], 42, "\"NAME\" LIKE 'a%'")
    assert where.oracle_sql == 'SELECT "ID", "NAME" FROM "APP"."ITEMS" AS OF SCN 42 WHERE ("NAME" LIKE \'a%\')'
    parsed = sqlglot.parse_one(where.oracle_sql, read="oracle")
    assert parsed.find(exp.Where) is not None and [t.name for t in parsed.find_all(exp.Table)] == ["ITEMS"]
    full = blocking_select("APP", "ITEMS", ["ID", "NAME"], 42, 'select * from "APP"."ITEMS" where "ID" > 1;')
    assert full.oracle_sql == 'SELECT T."ID", T."NAME" FROM (select * from "APP"."ITEMS" where "ID" > 1) T'
    outer = sqlglot.parse_one(full.oracle_sql, read="oracle")
    assert isinstance(outer, exp.Select) and [c.table for c in outer.expressions] == ["T", "T"]
