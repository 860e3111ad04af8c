"""LSNs and change positions against Debezium 3.6.3's ``Lsn`` and ``TxLogPosition``."""

from __future__ import annotations

import itertools
import random
from typing import Any

import pytest

from cdc_sources.sqlserver.lsn import Lsn, LsnError, TxLogPosition
from tests.cdc_sources.sqlserver.dbz_offsets import ask

LSNS = ["NULL", "00000000:00000000:0000", "00000027:00000758:0003", "00000027:00000758:0005",
        "00000027:00000759:0000", "0000002A:00000758:0003", "7fffffff:ffffffff:ffff", "80000000:00000000:0000",
        "ffffffff:ffffffff:fffe", "FFFFFFFF:FFFFFFFF:FFFF", "00000001:80000000:8000"]


def _positions() -> list[tuple[list[Any], list[Any]]]:
    rng = random.Random(7)
    lsns = ["NULL", "00000027:00000758:0003", "00000027:00000758:0005", "80000000:00000000:0001"]
    positions = [[rng.choice(lsns), rng.choice(lsns), rng.choice([0, 1, 2, 3, 4])] for _ in range(60)]
    return [(a, b) for a in positions[:30] for b in positions[30:]] + [(p, p) for p in positions]


PAIRS = list(itertools.product(LSNS, LSNS))
POSITIONS = _positions()


@pytest.fixture(scope="module")
def debezium() -> list[dict[str, Any]]:
    """Debezium's answers to every LSN and position question of this module, in one JVM."""
    return ask([{"cmd": "lsn", "a": a, "b": b} for a, b in PAIRS]
               + [{"cmd": "position", "a": a, "b": b} for a, b in POSITIONS])


@pytest.mark.conformance
def test_lsn_text_bytes_and_order_are_debeziums(debezium: list[dict[str, Any]]) -> None:
    pairs, answers = PAIRS, debezium[:len(PAIRS)]
    for (a, b), answer in zip(pairs, answers, strict=True):
        ours, other = Lsn.parse(a), Lsn.parse(b)
        assert str(ours) == answer["a"]
        assert (ours.binary.hex() if ours.binary else None) == answer["hex"]
        assert ours.available == answer["available"]
        assert (ours > other) - (ours < other) == answer["cmp"], (a, b)
    assert len(pairs) == 121


@pytest.mark.conformance
def test_position_order_is_debeziums(debezium: list[dict[str, Any]]) -> None:
    for (a, b), answer in zip(POSITIONS, debezium[len(PAIRS):], strict=True):
        pa = TxLogPosition(Lsn.parse(str(a[0])), Lsn.parse(str(a[1])), int(a[2]))
        pb = TxLogPosition(Lsn.parse(str(b[0])), Lsn.parse(str(b[1])), int(b[2]))
        assert (pb < pa) - (pa < pb) == answer["cmp"], (a, b)


@pytest.mark.parametrize("text", ["27:758:3", "00000027-00000758-0003", "0000002g:00000758:0003", "null", ""])
def test_bad_lsn_text_is_named(text: str) -> None:
    with pytest.raises(LsnError, match="not a SQL Server LSN"):
        Lsn.parse(text)


def test_driver_bytes() -> None:
    assert str(Lsn.of(bytes.fromhex("00000027000007580003"))) == "00000027:00000758:0003"
    assert Lsn.of(None) is Lsn.NULL
    with pytest.raises(LsnError, match="10 bytes, got 3"):
        Lsn.of(b"\x00\x01\x02")
