"""The offset map (Debezium's keys), loading Debezium-written offsets, binlog position order,
and the schema-history position comparator.

The conformance test loads the same offsets with Debezium 3.6.3's ``MySqlOffsetContext.Loader``
(OffsetProbe.java) and compares what it writes back with ours. Debezium forgets ``server_id``
and ``ts_sec`` until the next event and drops empty incremental-snapshot keys, so those are left
out of the comparison.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from cdc_sources.common.regex_list import RegexList
from cdc_sources.mysql.offset import BinlogPosition, MySqlOffset, binlog_file_number, is_position_at_or_before
from tests.cdc_sources.mysql.java_probe import run_probe

U1 = "3e11fa47-71ca-11e1-9e33-c80aa9429562"
U2 = "24bc7850-2c16-11e6-a073-0242ac110002"
PROBE = Path(__file__).with_name("OffsetProbe.java")


# -- writing ----------------------------------------------------------------------------------


def test_streaming_offset_omits_zero_and_absent_keys() -> None:
    assert MySqlOffset("mysql-bin.000003", 154).to_dict() == {"file": "mysql-bin.000003", "pos": 154}
    full = MySqlOffset("mysql-bin.000003", 154, f"{U1}:1-5", server_id=223344, event=2, row=1, ts_sec=1_700_000_000)
    assert full.to_dict() == {"server_id": 223344, "gtids": f"{U1}:1-5", "file": "mysql-bin.000003", "pos": 154,
                              "event": 2, "row": 1, "ts_sec": 1_700_000_000}
    assert list(full.to_dict()) == ["server_id", "gtids", "file", "pos", "event", "row", "ts_sec"]
    assert "gtids" not in MySqlOffset("f.000001", 4, "").to_dict()
    assert "ts_sec" in MySqlOffset("f.000001", 4, ts_sec=0).to_dict()


def test_snapshot_offsets_carry_snapshot_and_completion() -> None:
    during = MySqlOffset.for_snapshot("mysql-bin.000002", 1913, "0-1-42", ts_sec=10)
    assert during.to_dict() == {"gtids": "0-1-42", "file": "mysql-bin.000002", "pos": 1913, "ts_sec": 10,
                                "snapshot": "INITIAL", "snapshot_completed": False}
    assert during.in_snapshot
    last = MySqlOffset.for_snapshot("mysql-bin.000002", 1913, None, ts_sec=10, completed=True)
    assert last.to_dict()["snapshot_completed"] is True
    assert "gtids" not in last.to_dict()
    assert not last.in_snapshot
    assert not MySqlOffset.from_dict(last.to_dict()).in_snapshot
    assert MySqlOffset.from_dict(during.to_dict()).in_snapshot


def test_extra_keys_are_kept() -> None:
    data = {"file": "mysql-bin.000001", "pos": 4, "transaction_id": "0-1-5",
            "transaction_data_collection_order_db.t": 2, "incremental_snapshot_collections": "[]"}
    offset = MySqlOffset.from_dict(data)
    assert offset.extra == {"transaction_id": "0-1-5", "transaction_data_collection_order_db.t": 2,
                            "incremental_snapshot_collections": "[]"}
    assert offset.to_dict() == data


# -- loading ----------------------------------------------------------------------------------


@pytest.mark.parametrize(("data", "expected"), [
    ({"file": "mysql-bin.000003", "pos": 154}, MySqlOffset("mysql-bin.000003", 154)),
    ({"file": "mysql-bin.000003", "pos": "154", "event": "2", "row": 1, "server_id": "223344", "ts_sec": 5,
      "gtids": "0-1-3"},
     MySqlOffset("mysql-bin.000003", 154, "0-1-3", 223344, 2, 1, 5)),
    ({"file": "mysql-bin.000003", "pos": 154, "snapshot": True},
     MySqlOffset("mysql-bin.000003", 154, snapshot="INITIAL")),
    ({"file": "mysql-bin.000003", "pos": 154, "snapshot": "true"},
     MySqlOffset("mysql-bin.000003", 154, snapshot="INITIAL")),
    ({"file": "mysql-bin.000003", "pos": 154, "snapshot": "BLOCKING", "snapshot_completed": False},
     MySqlOffset("mysql-bin.000003", 154, snapshot="BLOCKING")),
    ({"file": "mysql-bin.000003", "pos": 154, "snapshot": "INITIAL", "snapshot_completed": "true"},
     MySqlOffset("mysql-bin.000003", 154)),
    ({"file": "mysql-bin.000003", "pos": 154, "snapshot": False}, MySqlOffset("mysql-bin.000003", 154)),
    ({"file": "", "pos": 0}, MySqlOffset("", 0)),
])
def test_load(data: dict[str, Any], expected: MySqlOffset) -> None:
    assert MySqlOffset.from_dict(data) == expected


@pytest.mark.parametrize(("data", "message"), [
    ({"pos": 154}, "no 'file'"),
    ({"file": "f.000001", "pos": "abc"}, "could not be converted"),
    ({"file": "f.000001", "pos": True}, "not a number"),
    ({"file": "f.000001", "pos": 4, "snapshot": "SOMETIMES"}, "INITIAL, BLOCKING"),
])
def test_load_errors(data: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        MySqlOffset.from_dict(data)


def test_round_trip() -> None:
    for offset in (MySqlOffset("mysql-bin.000009", 77, f"{U1}:1-9", 3, 4, 5, 6),
                   MySqlOffset.for_snapshot("mysql-bin.000001", 4, "0-1-1", ts_sec=1)):
        assert MySqlOffset.from_dict(offset.to_dict()) == offset


# -- positions --------------------------------------------------------------------------------


def test_binlog_positions_order() -> None:
    ordered = [BinlogPosition("mysql-bin.000009", 900), BinlogPosition("mysql-bin.000010", 4),
               BinlogPosition("mysql-bin.000010", 154), BinlogPosition("mysql-bin.000010", 154, 1),
               BinlogPosition("mysql-bin.000010", 154, 1, 3), BinlogPosition("mysql-bin.000010", 154, 2),
               BinlogPosition("mysql-bin.1000000", 4)]
    assert sorted(reversed(ordered)) == ordered
    assert ordered[2] <= BinlogPosition("mysql-bin.000010", 154) <= ordered[2]
    assert ordered[3].sort_key() == (10, 154, 1, 0)
    assert MySqlOffset("mysql-bin.000010", 154, event=1, row=3).position == ordered[4]
    assert str(ordered[4]) == "mysql-bin.000010:154 (+1 events, +3 rows)"
    assert str(ordered[0]) == "mysql-bin.000009:900"
    with pytest.raises(ValueError, match="different binlogs"):
        _ = BinlogPosition("a-bin.000001", 4) < BinlogPosition("b-bin.000001", 4)
    assert BinlogPosition("a.000001", 4).__lt__("x") is NotImplemented


def test_binlog_file_number() -> None:
    assert binlog_file_number("mysql-bin.000042") == 42
    assert binlog_file_number("host.name-bin.7") == 7
    for bad in ("mysql-bin", "mysql-bin.log", ""):
        with pytest.raises(ValueError, match="numeric extension"):
            binlog_file_number(bad)


# -- the schema-history comparator ------------------------------------------------------------


def _o(**kw: Any) -> dict[str, Any]:
    return {"file": "mysql-bin.000003", "pos": 100, **kw}


@pytest.mark.parametrize(("recorded", "desired", "before"), [
    (_o(pos=99), _o(), True),
    (_o(), _o(), True),
    (_o(pos=101), _o(), False),
    (_o(file="mysql-bin.000002", pos=9999), _o(), True),
    (_o(event=1), _o(event=2), True),
    (_o(event=3), _o(event=2), False),
    (_o(event=2, row=1), _o(event=2, row=2), True),
    (_o(event=2, row=3), _o(event=2, row=2), False),
    (_o(event=2), _o(event=2, row=0), True),
    (_o(server_id=1, ts_sec=10), _o(server_id=2, ts_sec=11, pos=1), True),
    (_o(server_id=1, ts_sec=12), _o(server_id=2, ts_sec=11, pos=999), False),
    (_o(), _o(gtids=f"{U1}:1-5"), True),
    (_o(gtids=f"{U1}:1-5"), _o(), False),
    (_o(gtids=f"{U1}:1-3"), _o(gtids=f"{U1}:1-5"), True),
    (_o(gtids=f"{U1}:1-6"), _o(gtids=f"{U1}:1-5"), False),
    (_o(gtids=f"{U1}:1-5", event=1), _o(gtids=f"{U1}:1-5", event=2), True),
    (_o(gtids=f"{U1}:1-5", event=3), _o(gtids=f"{U1}:1-5", event=2), False),
    (_o(gtids=f"{U1}:1-5"), _o(gtids=f"{U1}:1-5", snapshot=True), False),
    (_o(gtids=f"{U1}:1-5", snapshot=True), _o(gtids=f"{U1}:1-5", snapshot=True), True),
])
def test_mysql_history_positions(recorded: dict[str, Any], desired: dict[str, Any], before: bool) -> None:
    assert is_position_at_or_before(recorded, desired, flavor="mysql") is before


def test_history_positions_with_gtid_filter_and_mariadb() -> None:
    only_u1 = RegexList(U1).matches
    recorded, desired = _o(gtids=f"{U1}:1-3,{U2}:1-9"), _o(gtids=f"{U1}:1-5,{U2}:1-2")
    assert not is_position_at_or_before(recorded, desired, flavor="mysql")
    assert is_position_at_or_before(recorded, desired, flavor="mysql", gtid_filter=only_u1)
    assert is_position_at_or_before(_o(gtids="0-1-5,1-1-2"), _o(gtids="0-1-7,1-1-2"), flavor="mariadb")
    assert not is_position_at_or_before(_o(gtids="0-1-8"), _o(gtids="0-1-7"), flavor="mariadb")
    assert is_position_at_or_before(_o(gtids="0-1-8,1-1-1"), _o(gtids="0-1-7,1-1-1"), flavor="mariadb",
                                    gtid_filter=RegexList("1-1").matches)


# -- conformance with Debezium 3.6.3 ----------------------------------------------------------

LOADED = [
    {"file": "mysql-bin.000003", "pos": 154},
    {"file": "mysql-bin.000003", "pos": "154", "event": 2, "row": 1, "gtids": f"{U1}:1-5", "server_id": 223344,
     "ts_sec": 1_700_000_000},
    {"file": "mysql-bin.000003", "pos": 154, "snapshot": True},
    {"file": "mysql-bin.000003", "pos": 154, "snapshot": "true"},
    {"file": "mysql-bin.000003", "pos": 154, "snapshot": "INITIAL", "snapshot_completed": False},
    {"file": "mysql-bin.000003", "pos": 154, "snapshot": "INITIAL", "snapshot_completed": True},
    {"file": "mysql-bin.000003", "pos": 154, "snapshot": "BLOCKING"},
    {"file": "mysql-bin.000003", "pos": 154, "transaction_id": "x"},
    {"file": "", "pos": 0},
    {"pos": 154},
    {"file": "mysql-bin.000003", "pos": "abc"},
]
_IGNORED = {"server_id", "ts_sec", "snapshot_completed"}


def _typed(data: dict[str, Any]) -> list[str]:
    def kind(v: Any) -> str:
        return "b" if isinstance(v, bool) else "l" if isinstance(v, int) else "s"

    return [f"{k}={kind(v)}:{str(v).lower() if isinstance(v, bool) else v}" for k, v in data.items()]


def _ours(data: dict[str, Any]) -> str:
    try:
        written = MySqlOffset.from_dict(data).to_dict()
    except ValueError:
        return "ERR"
    return "\t".join(f"{k}={v}" for k, v in sorted(written.items()) if k not in _IGNORED)


@pytest.mark.conformance
def test_debezium_loads_and_writes_offsets_like_us() -> None:
    answers = run_probe(PROBE, [_typed(d) for d in LOADED])
    for data, answer in zip(LOADED, answers, strict=True):
        if answer[0].startswith("ERR:"):
            theirs = "ERR"
        else:
            pairs = [f.split("=", 1) for f in answer[0].split("\t")]
            theirs = "\t".join(f"{k}={v.split(':', 1)[1]}" for k, v in pairs if k not in _IGNORED)
        assert _ours(data) == theirs, data
