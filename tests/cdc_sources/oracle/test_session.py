"""Capture through the fake Oracle connection into bronze: a snapshot at an SCN taken while
transactions are in flight, streaming in mining windows of a live database, and a restart from
the stored offset; bronze then holds every change of the PostgreSQL source exactly once.

The oracle is PostgreSQL itself (the tables and its own logical decoding of them), never the
connector's code."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from cdc_sources.oracle.mining_query import MiningQuerySettings, mining_query
from cdc_sources.oracle.session import OracleStreamError
from cdc_sources.spi import ChangeRecord, Checkpoint
from tests.support.oracle_capture import capture_once, connector
from tests.support.oracle_checks import bronze_events, bronze_state, database, expected_events, plain, snapshot_scn
from tests.support.oracle_fake import FakeColumn, FakeOracleDatabase, FakeTable, load_contents
from tests.support.oracle_workload import TABLES, OracleWorkload


@pytest.fixture
def workload(pg_db: str) -> OracleWorkload:
    return OracleWorkload(pg_db, csf_limit=1000)


def test_snapshot_in_flight_then_stream_then_restart_exactly_once(workload: OracleWorkload, tmp_path: Any) -> None:
    root = str(tmp_path / "lake")
    workload.run(writers=2, transactions=5)
    workload.decode()
    scns = [int(r["SCN"]) for r in workload.logminer_rows()]
    middle = scns[len(scns) // 2]
    # the first run ends while the long transaction is open, after others committed inside it
    long_tx = max(workload.transactions, key=lambda t: t.commit_lsn - t.first_lsn)
    assert any(long_tx.first_lsn < t.commit_lsn < long_tx.commit_lsn for t in workload.transactions)
    cut = long_tx.commit_lsn - 1
    db = database(workload, start=min(middle, long_tx.first_lsn + 1), end=cut)
    # the snapshot is taken with transactions in flight (started below its SCN, committed above)
    assert db.open_transactions(db.current_scn + db.scn_step), "no transaction in flight at the snapshot"
    first = capture_once(root, db)
    assert first.snapshot_rows > 0 and first.streamed_records > 0
    scn = snapshot_scn(root)
    assert scn < cut
    for name in TABLES:
        assert bronze_events(root, name) == expected_events([t for t in workload.transactions
                                                             if t.commit_lsn <= cut], scn, name), name

    # more transactions; the capture resumes from its stored offset (before the open transaction)
    workload.run(writers=2, transactions=4, base_id=10_000)
    workload.decode()
    again = database(workload, start=cut, end=max(int(r["SCN"]) for r in workload.logminer_rows()) + 1)
    second = capture_once(root, again)
    assert second.snapshot_rows == 0 and second.streamed_records > 0
    for name in TABLES:
        assert bronze_events(root, name) == expected_events(workload.transactions, scn, name), name
        assert bronze_state(root, name) == [tuple(plain(v) for v in r) for r in workload.source_rows(name)], name
    # nothing new: an idle run adds nothing
    assert capture_once(root, again).streamed_records == 0


def _records(items: Any) -> Iterator[tuple[str, Any]]:
    """("rec", (topic, key, op, order key)) and ("ckpt", offset dict) in stream order."""
    for item in items:
        if isinstance(item, list):
            for r in item:
                yield "rec", (r.topic, r.key, r.op, r.order_key)
        elif isinstance(item, ChangeRecord):
            yield "rec", (item.topic, item.key, item.op, item.order_key)
        elif isinstance(item, Checkpoint):
            yield "ckpt", item.offset.to_dict()


def test_restart_from_every_checkpoint_emits_exactly_the_rest(workload: OracleWorkload) -> None:
    """Debezium's contract at every checkpoint: a session resumed from its offset emits exactly
    the records the uninterrupted stream emitted after it (long transactions open across
    commits and windows included)."""
    workload.run(writers=2, transactions=4)
    workload.decode()
    scns = [int(r["SCN"]) for r in workload.logminer_rows()]
    begin = {"scn": str(scns[0] - 1)}

    def run(offset: dict[str, Any]) -> list[tuple[str, Any]]:
        # the database has moved on to the offset at least (its current SCN is never behind it)
        db = database(workload, start=max(scns[0], int(offset["scn"])), end=scns[-1] + 1, windows=12)
        session = connector(db).open(offset)
        try:
            return list(_records(session.stream(until_idle=True)))
        finally:
            session.close()

    full = run(begin)
    records = [v for kind, v in full if kind == "rec"]
    assert len(records) > 20
    checkpoints = [(i, v) for i, (kind, v) in enumerate(full) if kind == "ckpt"]
    long_open = [c for i, c in checkpoints if any(t.first_lsn <= int(c["scn"]) + 1 < t.commit_lsn
                                                  for t in workload.transactions)]
    assert long_open, "no checkpoint while a transaction was open"
    for offset in [c for _, c in checkpoints[::max(1, len(checkpoints) // 12)]] + long_open[:3]:
        position = next(j for j, (kind, v) in enumerate(full) if kind == "ckpt" and v == offset)
        rest = [v for kind, v in full[position + 1:] if kind == "rec"]
        assert [v for kind, v in run(offset) if kind == "rec"] == rest, offset


ITEMS = FakeTable("APP", "ITEMS", (FakeColumn("ID", "NUMBER", 22, 10, 0, nullable=False),
                                  FakeColumn("NAME", "VARCHAR2", 50)), ("ID",))


def test_fixture_corpus_of_edge_cases() -> None:
    """The hand-written corpus (fixtures/logminer_edge_cases.jsonl): transactions committed out of
    start order, a statement undone by a ROLLBACK=1 row, a CSF-split insert, a rolled-back
    transaction, rows of SYS and of a materialized view log, MISSING_SCN and UNSUPPORTED rows, a
    key change, a truncate and an internal DDL, a second redo thread."""
    rows = load_contents(Path(__file__).parent / "fixtures" / "logminer_edge_cases.jsonl")
    db = FakeOracleDatabase({("APP", "ITEMS"): ITEMS}, rows, lambda o, t, s: [], 121, mining_query(
        MiningQuerySettings()))
    session = connector(db, {"table.include.list": "APP\\.ITEMS", "skipped.operations": "none"}).open({"scn": "99"})
    try:
        items = list(session.stream(until_idle=True))
    finally:
        session.close()
    records = [r for item in items if isinstance(item, list) for r in item]
    got = [(r.op, r.key, None if r.value is None else orjson.loads(r.value)["after"]) for r in records]
    assert got == [
        ("c", '{"ID":2}', {"ID": 2, "NAME": "b's"}),
        ("c", '{"ID":3}', {"ID": 3, "NAME": "L" * 40}),
        ("c", '{"ID":1}', {"ID": 1, "NAME": "a"}),
        ("d", '{"ID":1}', None), (None, '{"ID":1}', None), ("c", '{"ID":10}', {"ID": 10, "NAME": "a"}),
        ("t", None, None),
        ("c", '{"ID":20}', {"ID": 20, "NAME": "t"}), ("d", '{"ID":20}', None), (None, '{"ID":20}', None),
    ]
    assert records[3].headers == {"__debezium.newkey": '{"ID":10}'}
    sources = [orjson.loads(r.value)["source"] for r in records if r.value is not None]
    assert [(s["txId"], s["commit_scn"], s["redo_thread"]) for s in sources] == [
        ("0200030004000000", "106", 1), ("0200030004000000", "106", 1), *[("0100020003000000", "114", 1)] * 3,
        ("0400050006000000", "115", 2), *[("0500060007000000", "120", 2)] * 2]
    last = [i.offset.to_dict() for i in items if isinstance(i, Checkpoint)][-1]
    assert last["scn"] == "121" and last["commit_scn"] == "114:1:0100020003000000,120:2:0500060007000000"


def test_an_unparseable_row_stops_the_capture_naming_it() -> None:
    rows = load_contents(Path(__file__).parent / "fixtures" / "logminer_edge_cases.jsonl")
    for r in rows:
        if r["SCN"] == 103:
            r["SQL_REDO"] = 'insert into "APP"."ITEMS"("ID","NAME") values (\'2\');'  # one value for two columns
    db = FakeOracleDatabase({("APP", "ITEMS"): ITEMS}, rows, lambda o, t, s: [], 121,
                            mining_query(MiningQuerySettings()))
    session = connector(db, {"table.include.list": "APP\\.ITEMS"}).open({"scn": "99"})
    try:
        with pytest.raises(OracleStreamError, match=r"source ora: transaction 0200030004000000 committed at SCN 106"):
            list(session.stream(until_idle=True))
    finally:
        session.close()
