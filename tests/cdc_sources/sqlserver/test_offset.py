"""Stored offsets against Debezium 3.6.3's ``SqlServerOffsetContext.Loader`` and ``getOffset``:
offsets written by Debezium load here to the same position and are written back as Debezium
writes them, and offsets written here load in Debezium to the same position."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from cdc_sources.sqlserver.lsn import Lsn
from cdc_sources.sqlserver.offset import OffsetError, SnapshotType, SqlServerOffset
from tests.cdc_sources.sqlserver.dbz_offsets import ask

C, X = "00000027:00000758:0005", "00000027:00000758:0003"
Typed = dict[str, list[str]]
CASES: list[tuple[Typed, bool]] = [
    ({"commit_lsn": ["s", C], "change_lsn": ["s", X], "event_serial_no": ["l", "2"]}, False),
    ({"commit_lsn": ["s", C], "change_lsn": ["s", X], "event_serial_no": ["i", "7"]}, False),
    ({"commit_lsn": ["s", C], "change_lsn": ["s", "NULL"], "event_serial_no": ["l", "0"]}, False),
    ({"commit_lsn": ["s", C], "snapshot": ["s", "INITIAL"], "snapshot_completed": ["b", "false"]}, False),
    ({"commit_lsn": ["s", C], "snapshot": ["s", "INITIAL"], "snapshot_completed": ["b", "true"]}, False),
    ({"commit_lsn": ["s", C], "snapshot": ["s", "BLOCKING"], "snapshot_completed": ["b", "false"]}, False),
    ({"commit_lsn": ["s", C], "snapshot": ["b", "true"], "snapshot_completed": ["b", "false"]}, False),
    ({"commit_lsn": ["s", C], "snapshot": ["b", "true"], "snapshot_completed": ["b", "true"]}, False),
    ({"commit_lsn": ["s", C], "snapshot": ["s", "INITIAL"]}, False),
    ({"commit_lsn": ["s", C]}, False),
    ({"commit_lsn": ["s", C], "change_lsn": ["s", X]}, False),
    ({"commit_lsn": ["s", "ffffffff:ffffffff:ffff"], "change_lsn": ["s", "FFFFFFFF:00000000:0001"],
      "event_serial_no": ["l", "9223372036854775807"]}, False),
    ({"commit_lsn": ["s", C], "change_lsn": ["s", X], "event_serial_no": ["l", "4"],
      "transaction_id": ["s", C], "transaction_data_collection_order_testDB.dbo.a": ["l", "3"]}, True),
    ({"commit_lsn": ["s", "not-an-lsn"]}, False),
    ({"commit_lsn": ["s", C], "event_serial_no": ["s", "3"]}, False),
    ({"commit_lsn": ["s", C], "snapshot": ["s", "initial"], "snapshot_completed": ["b", "false"]}, False),
    ({"commit_lsn": ["s", C], "snapshot": ["s", "SOMETIMES"], "snapshot_completed": ["b", "false"]}, False),
]


def value(typed: list[str]) -> Any:
    kind, text = typed
    parse: dict[str, Callable[[str], Any]] = {"l": int, "i": int, "b": lambda t: t == "true", "s": str}
    return parse[kind](text)


def typed(offset: dict[str, Any]) -> Typed:
    def kind(v: Any) -> str:
        return "b" if isinstance(v, bool) else "l" if isinstance(v, int) else "n" if v is None else "s"
    return {k: [kind(v), str(v).lower() if isinstance(v, bool) else str(v)] for k, v in sorted(offset.items())}


KNOWN_DIFFERENCES = {
    1: "event_serial_no as a 32-bit Integer: Debezium fails with ClassCastException, read here as the number",
    13: "an LSN text that is no LSN: Debezium reads garbage bytes from it, rejected here",
}


OURS = [
    SqlServerOffset(Lsn.parse(C), Lsn.parse(X), 2),
    SqlServerOffset(Lsn.parse(C), Lsn.NULL, 0, SnapshotType.INITIAL, False),
    SqlServerOffset(Lsn.parse(C), Lsn.NULL, 0, SnapshotType.BLOCKING, False),
    SqlServerOffset(Lsn.parse(C)),
    SqlServerOffset(Lsn.parse("80000000:00000001:fffe"), Lsn.parse("80000000:00000001:0000"), 123456789012),
]
"""Offsets written here, for Debezium to load."""


@pytest.fixture(scope="module")
def answers() -> list[dict[str, Any]]:
    """Debezium's answers to both tests' questions, in one JVM."""
    return ask([{"cmd": "load", "offset": offset, "txmeta": txmeta} for offset, txmeta in CASES]
               + [{"cmd": "load", "offset": typed(o.to_map()), "txmeta": False} for o in OURS])


@pytest.fixture(scope="module")
def debezium(answers: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return answers[:len(CASES)]


@pytest.mark.conformance
def test_debezium_offsets_load_here(debezium: list[dict[str, Any]]) -> None:
    for index, ((offset, _), answer) in enumerate(zip(CASES, debezium, strict=True)):
        stored = {k: value(v) for k, v in offset.items()}
        if index in KNOWN_DIFFERENCES:
            assert ("error" in answer) == (index == 1)
            if index == 1:
                assert SqlServerOffset.load(stored).event_serial_no == 7
            else:
                with pytest.raises(OffsetError, match="not a SQL Server LSN"):
                    SqlServerOffset.load(stored)
            continue
        if "error" in answer:
            with pytest.raises(OffsetError, match="stored SQL Server offset"):
                SqlServerOffset.load(stored)
            continue
        ours = SqlServerOffset.load(stored)
        assert str(ours.commit_lsn) == answer["commit"], offset
        assert str(ours.change_lsn) == answer["change"], offset
        assert ours.event_serial_no == answer["serial"], offset
        assert ours.snapshot_completed == answer["completed"], offset
        assert (ours.snapshot.value if ours.snapshot else None) == answer["snapshot"], offset
        assert ours.snapshot_running == answer["initialRunning"], offset
        assert typed(ours.to_map()) == answer["offset"], offset
    assert sum("error" in a for a in debezium) == 4


@pytest.mark.conformance
def test_offsets_written_here_load_in_debezium(answers: list[dict[str, Any]]) -> None:
    for offset, answer in zip(OURS, answers[len(CASES):], strict=True):
        assert "error" not in answer
        assert typed(offset.to_map()) == answer["offset"]
        assert answer["commit"] == str(offset.commit_lsn) and answer["change"] == str(offset.change_lsn)
        assert answer["serial"] == offset.event_serial_no
        assert answer["initialRunning"] == offset.snapshot_running


def test_bad_offsets_name_the_key() -> None:
    with pytest.raises(OffsetError, match="snapshot_completed must be true or false"):
        SqlServerOffset.load({"commit_lsn": C, "snapshot": "INITIAL", "snapshot_completed": "no"})
    with pytest.raises(OffsetError, match="commit_lsn must be an LSN text"):
        SqlServerOffset.load({"commit_lsn": 12})
