"""Streamed DECIMAL values under ``decimal.handling.mode=precise``: the Connect ``Decimal`` bytes of
the unscaled value, checked against an oracle written from the definition (``BigInteger.toByteArray``
of the digits, base64) at every precision and scale MySQL allows."""

from __future__ import annotations

import base64
from decimal import Decimal

import pytest

from cdc_sources.mysql.converters import MySqlConverterSettings, converter_for
from cdc_sources.mysql.model import ColumnDef


def oracle(text: str) -> str:
    """base64 of the shortest big-endian two's complement of the digits of ``text`` read as one integer."""
    unscaled = int(text.replace(".", ""))
    length = 1
    while not -(1 << (8 * length - 1)) <= unscaled < 1 << (8 * length - 1):
        length += 1
    return base64.b64encode((unscaled % (1 << 8 * length)).to_bytes(length, "big")).decode()


def texts(precision: int, scale: int) -> list[str]:
    """Values of DECIMAL(precision, scale) as the server writes them: zero, the extremes, one unit
    of the last place, and the unscaled values at every byte-length boundary that fits."""
    limit = 10**precision - 1
    unscaled = {0, 1, -1, limit, -limit}
    for bits in range(7, 8 * 28, 8):
        for n in (1 << bits, (1 << bits) - 1, -(1 << bits), -(1 << bits) - 1):
            if abs(n) <= limit:
                unscaled.add(n)
    out = []
    for n in sorted(unscaled):
        digits = str(abs(n)).rjust(scale + 1, "0")
        whole, fraction = digits[:len(digits) - scale], digits[len(digits) - scale:]
        out.append(("-" if n < 0 else "") + whole + ("." + fraction if scale else ""))
    return out


CASES = [(p, s) for p in range(1, 66) for s in sorted({0, 1, 2, p // 2, min(p, 30)}) if s <= min(p, 30)]


@pytest.mark.parametrize(("precision", "scale"), CASES, ids=[f"{p},{s}" for p, s in CASES])
def test_streamed_decimals_are_the_connect_bytes_of_their_unscaled_value(precision, scale):
    column = ColumnDef("d", 1, "DECIMAL", "DECIMAL", 3, length=precision, scale=scale)
    found = converter_for(column, MySqlConverterSettings(), origin="binlog")
    assert found is not None
    for text in texts(precision, scale):
        # the binlog reader's Decimal carries exactly `scale` fraction digits (the row decoder
        # builds it from the unscaled digits and the exponent, the library from the text)
        for value in (Decimal(text), Decimal(f"{text.replace('.', '')}E-{scale}")):
            assert found.convert(value) == oracle(text), (text, value)


def test_negative_zero_is_zero():
    column = ColumnDef("d", 1, "DECIMAL", "DECIMAL", 3, length=10, scale=2)
    found = converter_for(column, MySqlConverterSettings(), origin="binlog")
    assert found is not None
    assert found.convert(Decimal("-0.00")) == found.convert(Decimal("0.00")) == oracle("0") == "AA=="
