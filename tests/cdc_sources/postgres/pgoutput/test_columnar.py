"""Column-wise TupleData decoding equals the per-message decoder, and declines what it can't do."""

from __future__ import annotations

import random
import struct

import pytest

from cdc_sources.postgres import pgoutput as pg
from cdc_sources.postgres.pgoutput.columnar import ColumnarUnsupportedError, tuple_columns

OID = 16385


def insert(values: list[str | bytes | None], *, kinds: str | None = None) -> bytes:
    """An Insert message (protocol 1) of ``values``: str/bytes as ``t``, None as ``n``."""
    out = bytearray(b"I" + struct.pack(">I", OID) + b"N" + struct.pack(">H", len(values)))
    for i, v in enumerate(values):
        kind = kinds[i] if kinds else ("n" if v is None else "t")
        out += kind.encode()
        if kind in "tb":
            data = v.encode() if isinstance(v, str) else (v or b"")
            out += struct.pack(">i", len(data)) + data
    return bytes(out)


def decoded(payloads: list[bytes]) -> list[tuple[object, ...]]:
    columns = tuple_columns(payloads, 6)
    return [tuple(c[i].as_py() for c in columns) for i in range(len(payloads))]


def test_every_value_equals_the_per_message_decoder():
    rng = random.Random(7)
    alphabet = ["a", "Z", " ", '"', "\\", "\n", "\t", "\x01", "é", "☃", "😀", "\u2028", ",", "'"]
    payloads = []
    for _ in range(500):
        row: list[str | bytes | None] = []
        for _ in range(6):
            pick = rng.random()
            row.append(None if pick < 0.2 else "" if pick < 0.3 else
                       "".join(rng.choice(alphabet) for _ in range(rng.randrange(1, 40))))
        payloads.append(insert(row))
    expected = [pg.decode(p).new for p in payloads]
    assert decoded(payloads) == expected


def test_all_null_columns_and_a_trailing_null_stay_inside_the_buffer():
    payloads = [insert([None, None]), insert(["x", None]), insert([None, ""])]
    assert decoded(payloads) == [(None, None), ("x", None), (None, "")]


def test_a_single_message_and_a_table_without_columns():
    assert decoded([insert(["only"])]) == [("only",)]
    assert tuple_columns([insert([]), insert([])], 6) == []


def test_long_values_keep_their_bytes():
    big = "x" * 100_000 + "é"
    assert decoded([insert([big, "y"]), insert(["z", big])]) == [(big, "y"), ("z", big)]


@pytest.mark.parametrize(("payloads", "reason"), [
    ([insert(["a"], kinds="u")], "unchanged-TOAST"),
    ([insert([b"\x00\x01"], kinds="b")], "binary"),
    ([insert(["a", "b"]), insert(["a"])], "different column counts"),
    ([insert(["abc"])[:-1]], "runs past the end"),
    ([insert(["abc"]) + b"extra"], "does not end"),
    ([insert(["a", "b"])[:12]], "runs past the end"),
    ([insert(["a", "b"])[:14]], "shorter than its column count"),
    ([insert([b"\xff\xfe"])], "not UTF-8"),
    ([insert(["a"])[:9] + struct.pack(">i", -5)], "negative"),
    ([insert(["a"])[:9] + struct.pack(">i", 1 << 30) + b"a", insert(["b"])], "runs past the end"),
])
def test_what_the_columnar_path_declines(payloads, reason):
    with pytest.raises(ColumnarUnsupportedError, match=reason):
        tuple_columns(payloads, 6)
