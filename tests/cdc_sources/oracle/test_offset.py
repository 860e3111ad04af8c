"""Oracle offsets and `source` blocks against Debezium 3.6.3's own classes (OracleOffsetProbe.java).

Offsets Debezium writes (in every form its loader reads, old ones included) load here to the
state Debezium loads, and what `OracleOffset.to_dict` writes loads in Debezium to the same
state; `source` blocks built from the same event equal Debezium's, schema and value.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from cdc_sources.oracle.offset import OffsetError, OracleOffset, RedoThreadCommit
from cdc_sources.oracle.source import OracleEvent, OracleSourceInfo, source_schema
from tests.cdc_sources.oracle.java_probe import run_probe

DEBEZIUM_OFFSETS: list[dict[str, Any]] = [
    {"scn": "1000"},
    {"scn": "1000", "commit_scn": "1000:1:0a00b2,2000:2:", "snapshot_scn": "900"},
    {"scn": "1000", "commit_scn": "1000:1:0a00b2-0a00b1-0c00ff"},
    {"scn": "1000", "snapshot": True, "snapshot_completed": False, "snapshot_scn": "1000",
     "snapshot_pending_tx": "0a00:500,0b00:600"},
    {"scn": "1000", "snapshot": "INITIAL", "snapshot_completed": False},
    {"scn": "5", "txId": "0a00", "txSeq": 3, "snapshot": "INITIAL", "snapshot_completed": True},
    {"scn": 1000, "commit_scn": 990},
    {"scn": "5", "commit_scn": "7:0:0:2"},
    {"scn": "5", "commit_scn": "7"},
    {"scn": "5", "snapshot_scn": "0"},
    {"scn": "18446744073709551615", "commit_scn": "18446744073709551614:1:"},
]
OURS = [
    OracleOffset(scn=10),
    OracleOffset(scn=10, commit_scn=(RedoThreadCommit(2, 12), RedoThreadCommit(1, 11, frozenset({"ab", "aa"})))),
    OracleOffset(scn=10, snapshot="INITIAL", snapshot_scn=10, snapshot_pending_tx={"0a": 4, "0b": 7}),
    OracleOffset(scn=10, transaction_id="0a00", transaction_sequence=9),
]


def normal(offset: dict[str, Any]) -> dict[str, Any]:
    """Debezium writes its maps in hash order: compare the lists as sets."""
    out = dict(offset)
    for key in ("snapshot_pending_tx", "commit_scn"):
        if out.get(key):
            out[key] = sorted(out[key].split(","))
    return out


@pytest.fixture(scope="module")
def answers() -> list[list[str]]:
    cases = [("offset", json.dumps(o)) for o in DEBEZIUM_OFFSETS]
    cases += [("offset", json.dumps(o.to_dict())) for o in OURS]
    cases += [("source", json.dumps(o), json.dumps(e)) for o, e in SOURCE_CASES]
    cases += [("handled", json.dumps(o), ",".join(map(str, q))) for o, q in HANDLED_CASES]
    return run_probe("OracleOffsetProbe.java", cases)


def test_debezium_offsets_load_here_as_in_debezium(answers: list[list[str]]) -> None:
    for offset, (answer,) in zip(DEBEZIUM_OFFSETS, answers, strict=False):
        assert normal(OracleOffset.from_dict(offset).to_dict()) == normal(json.loads(answer)), offset


def test_our_offsets_load_in_debezium_to_the_same_state(answers: list[list[str]]) -> None:
    for offset, (answer,) in zip(OURS, answers[len(DEBEZIUM_OFFSETS):], strict=False):
        written = offset.to_dict()
        assert normal(written) == normal(json.loads(answer)), written
        assert OracleOffset.from_dict(json.loads(answer)) == offset


SOURCE_CASES: list[tuple[dict[str, Any], dict[str, Any]]] = [
    ({"scn": "1000"}, {"scn": "1005", "commit_scn": "1010", "txId": "0a001b00c7030000", "user_name": "APP",
                       "rs_id": " 0x0003c4.0000a8e2.0010 ", "ssn": 3, "redo_thread": 1, "ts_ms": 1700000000000,
                       "schema": "DEBEZIUM", "table": "CUSTOMERS"}),
    ({"scn": "1000"}, {"scn": "7", "ts_ms": 1000, "schema": "S", "table": "T", "ssn": 4294967296,
                       "redo_thread": 2, "commit_ts_ms": 2000, "start_scn": "5", "start_ts_ms": 500, "txSeq": 7,
                       "txId": "ff"}),
    ({"scn": "1000", "snapshot": True, "snapshot_completed": False},
     {"scn": "1000", "ts_ms": 1600000000000, "schema": "S", "table": "T", "snapshot": "LAST"}),
    ({"scn": "1000"}, {"scn": "1000", "ts_ms": 0, "schema": "S", "table": "T", "user_name": "SYS"}),
]


def _event(e: dict[str, Any]) -> OracleEvent:
    def num(k: str) -> int | None:
        return None if k not in e else int(e[k])

    return OracleEvent(schema=e["schema"], table=e["table"], ts_ms=e["ts_ms"], scn=num("scn"),
                       commit_scn=num("commit_scn"), xid=e.get("txId"), tx_sequence=num("txSeq"),
                       user_name=e.get("user_name"), rs_id=e.get("rs_id"), ssn=e.get("ssn", 0),
                       redo_thread=e.get("redo_thread"), commit_ts_ms=num("commit_ts_ms"),
                       start_scn=num("start_scn"), start_ts_ms=num("start_ts_ms"),
                       snapshot=str(e.get("snapshot", "false")).lower())


def test_source_blocks_equal_debeziums(answers: list[list[str]]) -> None:
    info = OracleSourceInfo("server1", "ORCLCDB")
    start = len(DEBEZIUM_OFFSETS) + len(OURS)
    for (_, event), answer in zip(SOURCE_CASES, answers[start:start + len(SOURCE_CASES)], strict=True):
        schema, value = answer
        assert source_schema() == json.loads(schema)
        assert list(info.block(_event(event)).items()) == list(json.loads(value)["source"].items()), event


HANDLED_CASES: list[tuple[dict[str, Any], tuple[int, int, str]]] = [
    (offset, (thread, scn, xid))
    for offset in ({"scn": "90", "commit_scn": "100:1:aa-bb,200:2:"}, {"scn": "90"}, {"scn": "90", "commit_scn": 100})
    for thread in (1, 2, 3) for scn in (99, 100, 101, 200, 201) for xid in ("aa", "cc")
]


def test_handled_transactions_as_debezium_decides(answers: list[list[str]]) -> None:
    start = len(DEBEZIUM_OFFSETS) + len(OURS) + len(SOURCE_CASES)
    decided = [OracleOffset.from_dict(o).handled(*q) for o, q in HANDLED_CASES]
    assert decided == [a == ["true"] for a in answers[start:]]
    assert any(decided) and not all(decided)


def test_recording_commits() -> None:
    offset = OracleOffset(scn=90).with_commit(1, 100, "aa").with_commit(1, 100, "bb").with_commit(2, 50, "cc")
    assert offset.to_dict()["commit_scn"] == "100:1:aa-bb,50:2:cc"
    assert offset.handled(1, 100, "bb") and not offset.handled(1, 100, "dd") and offset.handled(2, 49, "x")
    assert offset.with_commit(1, 101, "dd").to_dict()["commit_scn"] == "101:1:dd,50:2:cc"


def test_malformed_offsets_name_the_key() -> None:
    with pytest.raises(OffsetError, match="scn: not an SCN"):
        OracleOffset.from_dict({"scn": "12a"})
    with pytest.raises(OffsetError, match="commit_scn: unexpected redo thread entry"):
        OracleOffset.from_dict({"scn": "1", "commit_scn": "1:2"})
    with pytest.raises(OffsetError, match="snapshot: unexpected value"):
        OracleOffset.from_dict({"scn": "1", "snapshot": "maybe"})
