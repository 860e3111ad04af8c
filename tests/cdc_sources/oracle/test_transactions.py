"""The LogMiner transaction buffer on a hand-written corpus of V$LOGMNR_CONTENTS rows."""

from __future__ import annotations

from datetime import datetime

import pytest

from cdc_sources.oracle.redo import RedoTable, parse_redo
from cdc_sources.oracle.transactions import (
    ChangeKind,
    CommittedTransaction,
    LogMinerRow,
    LogMinerRowError,
    TransactionBuffer,
)

T = '"DEBEZIUM"."T"'
TABLE = RedoTable.of("ID", "NAME")
START, INS, DEL, UPD, DDL, COMMIT, ROLLBACK = 6, 1, 2, 3, 5, 7, 36


def row(scn: int, op: int, xid: str, sql: str | None = None, **kw: object) -> LogMinerRow:
    defaults: dict[str, object] = {"seg_owner": "DEBEZIUM", "table_name": "T", "username": "APP",
                                   "row_id": f"AAA{scn}", "timestamp": datetime(2026, 1, 1, 0, 0, scn % 60)}
    defaults.update(kw)
    return LogMinerRow(scn, op, xid, sql, **defaults)  # type: ignore[arg-type]


def ins(scn: int, xid: str, key: int, name: str = "n", **kw: object) -> LogMinerRow:
    return row(scn, INS, xid, f"insert into {T}(\"ID\",\"NAME\") values ('{key}','{name}');", **kw)


def run(rows: list[LogMinerRow], **kw: object) -> tuple[list[CommittedTransaction], TransactionBuffer]:
    buffer = TransactionBuffer(**kw)  # type: ignore[arg-type]
    return list(buffer.feed_all(rows)), buffer


def keys(tx: CommittedTransaction) -> list[str | None]:
    out = []
    for change in tx.changes:
        dml = parse_redo(change.row.sql_redo or "", TABLE)
        out.append(str((dml.after or dml.before)[0]))
    return out


def test_interleaved_transactions_come_out_in_commit_order_with_their_commit_scn() -> None:
    txs, buffer = run([
        row(10, START, "a1"), ins(11, "a1", 1),
        row(12, START, "b2"), ins(13, "b2", 2),
        ins(14, "a1", 3), ins(15, "b2", 4),
        row(16, COMMIT, "b2", thread=2),
        ins(17, "a1", 5),
        row(18, COMMIT, "a1"),
    ])
    assert [(t.xid, t.commit_scn, t.thread) for t in txs] == [("b2", 16, 2), ("a1", 18, 1)]
    assert [keys(t) for t in txs] == [["2", "4"], ["1", "3", "5"]]
    assert [c.row.scn for c in txs[1].changes] == [11, 14, 17]
    assert txs[0].commit_time == datetime(2026, 1, 1, 0, 0, 16)
    assert buffer.open_transactions == {}


def test_rollback_discards_the_transaction_and_rollback_rows_undo_one_change() -> None:
    txs, buffer = run([
        ins(20, "r1", 1), ins(21, "r1", 2), row(22, ROLLBACK, "r1"),
        ins(23, "p1", 3, row_id="R3"), ins(24, "p1", 4, row_id="R4"),
        row(25, DEL, "p1", f"delete from {T} where \"ID\" = '4' and \"NAME\" = 'n';", row_id="R4", rollback=True),
        ins(26, "p1", 5, row_id="R5"),
        row(27, DEL, "p1", f"delete from {T} where \"ID\" = '9';", row_id="NONE", rollback=True),
        row(28, COMMIT, "p1"),
    ])
    assert [t.xid for t in txs] == ["p1"]
    assert keys(txs[0]) == ["3", "5"]
    assert buffer.stats.rolled_back_transactions == 1
    assert (buffer.stats.undone_changes, buffer.stats.unmatched_undo) == (1, 1)


def test_continued_statements_are_joined() -> None:
    long_name = "x" * 5000
    sql = f"insert into {T}(\"ID\",\"NAME\") values ('7','{long_name}');"
    pieces = [sql[:4000], sql[4000:8000], sql[8000:]]
    txs, _ = run([
        row(30, INS, "c1", pieces[0], csf=True), ins(31, "o1", 8),
        row(30, INS, "c1", pieces[1], csf=True), row(30, INS, "c1", pieces[2]),
        row(32, COMMIT, "o1"), row(33, COMMIT, "c1"),
    ])
    assert [t.xid for t in txs] == ["o1", "c1"]
    (change,) = txs[1].changes
    assert change.row.sql_redo == sql and not change.row.csf
    assert parse_redo(change.row.sql_redo, TABLE).after == ("7", long_name)


def test_excluded_users_and_oracle_schemas_are_skipped() -> None:
    txs, buffer = run([
        ins(40, "u1", 1, username="BATCH"), ins(41, "u1", 2, seg_owner="SYS"), ins(42, "u1", 3, seg_owner="SYSTEM"),
        ins(43, "u1", 4, seg_owner="GGSHAREDCAP"), ins(44, "u1", 5), ins(45, "u1", 6, username="SYS"),
        ins(45, "u1", 7, table_name="MLOG$_T"),
        row(46, COMMIT, "u1"),
        row(47, DDL, "d1", 'create table "DEBEZIUM"."X" (id number)', username="SYS", operation="DDL"),
    ], username_exclude=["batch"])
    (tx,) = txs
    assert keys(tx) == ["5", "6"]  # DML by SYS on a user schema is captured (as Debezium does)
    assert buffer.stats.excluded == 5
    txs, _ = run([ins(50, "i1", 1, username="APP"), ins(51, "i1", 2, username="OTHER"), row(52, COMMIT, "i1")],
                 username_include=["app"])
    assert keys(txs[0]) == ["1"]


def test_truncate_and_ddl_are_emitted_at_once_outside_transactions() -> None:
    txs, _ = run([
        ins(60, "t1", 1),
        row(61, DDL, "d1", 'truncate table "DEBEZIUM"."T";', operation="DDL"),
        row(62, DDL, "d2", 'alter table "DEBEZIUM"."T" add "C" number;', operation="DDL"),
        row(63, COMMIT, "t1"),
        row(64, COMMIT, "empty"),
    ])
    assert [(t.xid, t.commit_scn, [c.kind for c in t.changes]) for t in txs] == [
        ("d1", 61, [ChangeKind.TRUNCATE]), ("d2", 62, [ChangeKind.DDL]), ("t1", 63, [ChangeKind.INSERT])]


def test_primary_key_change_is_one_update_with_both_keys() -> None:
    sql = f"update {T} set \"ID\" = '2' where \"ID\" = '1' and \"NAME\" = 'n';"
    txs, _ = run([row(70, UPD, "k1", sql), row(71, COMMIT, "k1")])
    (change,) = txs[0].changes
    assert change.kind is ChangeKind.UPDATE
    dml = parse_redo(change.row.sql_redo or "", TABLE)
    assert (dml.before, dml.after) == (("1", "n"), ("2", "n"))


def test_rows_below_the_snapshot_scn_are_skipped_unless_in_flight() -> None:
    txs, buffer = run([
        ins(80, "old", 1), ins(81, "pending", 2), ins(90, "old", 3), row(91, COMMIT, "old"),
        row(92, COMMIT, "pending"),
    ], snapshot_scn=85, snapshot_pending=["pending"])
    assert [(t.xid, keys(t)) for t in txs] == [("old", ["3"]), ("pending", ["2"])]
    assert buffer.stats.below_snapshot == 1


def test_missing_scn_unsupported_and_lob_rows() -> None:
    txs, buffer = run([row(100, 34, "m"), row(101, 255, "m", "Unsupported"), ins(102, "m", 1), row(103, COMMIT, "m")])
    assert keys(txs[0]) == ["1"]
    assert (buffer.stats.missing_scn, buffer.stats.unsupported) == (1, 1)
    for code in (9, 10, 11, 29, 68, 70, 71, 91, 92, 93):
        with pytest.raises(LogMinerRowError, match=r"lob\.enabled"):
            run([row(110, code, "l")])
    with pytest.raises(LogMinerRowError, match="OPERATION_CODE 99 at SCN 111"):
        run([row(111, 99, "l")])
    with pytest.raises(LogMinerRowError, match="inside a continued"):
        run([row(112, INS, "c", "insert", csf=True), row(113, COMMIT, "c")])


def test_open_transactions_report_their_first_scn() -> None:
    buffer = TransactionBuffer()
    for r in [row(120, START, "x"), ins(121, "x", 1), ins(122, "y", 2)]:
        assert buffer.feed(r) == []
    assert buffer.open_transactions == {"x": 120, "y": 122}


def test_a_replication_marker_discards_its_transaction() -> None:
    txs, buffer = run([ins(130, "g", 1), row(131, 27, "g"), ins(132, "h", 2), row(133, COMMIT, "g"),
                       row(134, COMMIT, "h")])
    assert [(t.xid, keys(t)) for t in txs] == [("h", ["2"])]
    assert buffer.stats.replication_markers == 1


def test_undo_rows_open_no_transaction_and_match_by_xid_prefix_without_sequence() -> None:
    undo = f"delete from {T} where \"ID\" = '1';"
    txs, buffer = run([
        ins(140, "0a001b00c7030000", 1, row_id="R1"), ins(141, "0a001b00c7030000", 2, row_id="R2"),
        row(142, DEL, "0a001b00ffffffff", undo, row_id="R1", rollback=True),
        row(143, DEL, "0b00aa00ffffffff", undo, row_id="R9", rollback=True),
        row(144, DEL, "0c00aa0001000000", undo, row_id="R9", rollback=True),
    ])
    assert txs == []
    assert buffer.open_transactions == {"0a001b00c7030000": 140}
    assert (buffer.stats.undone_changes, buffer.stats.unmatched_undo) == (1, 2)
    assert [c.row.row_id for c in buffer.feed(row(145, COMMIT, "0a001b00c7030000"))[0].changes] == ["R2"]


def test_with_lob_enabled_lob_operations_are_buffered_trims_skipped_xml_refused() -> None:
    rows = [ins(140, "b", 1), row(141, 9, "b", "sel", csf=True), row(141, 9, "b", "ect"), row(142, 10, "b", "write"),
            row(143, 11, "b", "trim"), row(144, 29, "b", "erase"), row(145, COMMIT, "b")]
    txs, buffer = run(rows, lob_enabled=True)
    assert [(c.kind, c.row.sql_redo) for c in txs[0].changes][1:] == [
        (ChangeKind.SELECT_LOB_LOCATOR, "select"), (ChangeKind.LOB_WRITE, "write"), (ChangeKind.LOB_ERASE, "erase")]
    assert buffer.stats.lob_trims == 1
    assert txs[0].start_time == datetime(2026, 1, 1, 0, 0, 140 % 60)
    for code in (68, 70, 71, 91, 92, 93):
        with pytest.raises(LogMinerRowError, match="XML and extended-string operations are not supported"):
            run([row(150, code, "x")], lob_enabled=True)
