"""DECIMAL/NUMERIC (and DEC, FIXED) under ``decimal.handling.mode``.

``precise``: ``org.apache.kafka.connect.data.Decimal`` with the column's scale and a
``connect.decimal.precision`` parameter; JsonConverter writes the unscaled value's
``BigInteger.toByteArray`` bytes as base64. ``double``: a JSON number. ``string``: the plain
text (``BigDecimal.toPlainString``, trailing zeros of the scale kept).

The binlog delivers ``decimal.Decimal`` values at the column's scale; the snapshot delivers the
server's text (see `SNAPSHOT_CONVERSIONS`), also at the column's scale, which converts without
``Decimal`` arithmetic. Defaults are rounded half up to the scale, as Debezium does.
"""

from __future__ import annotations

from binascii import b2a_base64
from decimal import ROUND_HALF_UP, Context, Decimal, InvalidOperation
from typing import Any

from cdc_sources.common import kschema as ks
from cdc_sources.common.connect_values import decimal_bytes
from cdc_sources.mysql.converters.model import ColumnFacts, Convert, TypeMapping, ValueConversionError, fixed

_EXACT = Context(prec=200, rounding=ROUND_HALF_UP)
"""Room for any MySQL DECIMAL (65 digits) and its default, so no operation rounds."""


def _unscaled_decimal(scale: int) -> Convert:
    """``decimal_bytes`` of the unscaled value, written out in one function: it runs for every
    DECIMAL value streamed, where each call saved counts."""
    def convert(value: Decimal) -> str:
        # the binlog's Decimal is built from exactly `scale` fraction digits, so this is exact
        n = int(value.scaleb(scale, _EXACT))
        size = ((n if n >= 0 else ~n).bit_length() >> 3) + 1
        return b2a_base64(n.to_bytes(size, "big", signed=True), newline=False).decode("ascii")
    return convert


def _unscaled_text(scale: int) -> Convert:
    def convert(text: str) -> str:
        dot = text.find(".")
        if dot < 0:
            return decimal_bytes(int(text) * 10**scale)
        fraction = len(text) - dot - 1
        digits = int(text[:dot] + text[dot + 1:])
        if fraction == scale:
            return decimal_bytes(digits)
        if fraction < scale:
            return decimal_bytes(digits * 10 ** (scale - fraction))
        raise ValueConversionError(f"{text!r} has more than {scale} fraction digits", kind="decimal")
    return convert


def _plain(value: Decimal) -> str:
    return format(value, "f")


def _same(value: Any) -> Any:
    return value


def _rounded(literal: Any, scale: int) -> Decimal:
    """Debezium's ``new BigDecimal(text).setScale(scale, HALF_UP)``."""
    try:
        value = Decimal(str(literal))
        if not value.is_finite():
            raise InvalidOperation
    except InvalidOperation:
        raise ValueConversionError(f"cannot parse the decimal default {literal!r} (Debezium fails too)",
                                   kind="default") from None
    return _EXACT.quantize(value, Decimal(1).scaleb(-scale))


def decimal_mapping(facts: ColumnFacts) -> TypeMapping:
    """DECIMAL and NUMERIC columns (any JDBC DECIMAL/NUMERIC type)."""
    column = facts.column
    scale = column.scale or 0
    precision = column.length if column.length is not None else -1
    mode = facts.settings.decimal_handling_mode
    text = facts.origin == "snapshot"
    zero = Decimal(0).scaleb(-scale)
    if mode == "double":
        return TypeMapping(ks.primitive("double"), fixed(float), 0.0,
                           lambda literal: float(_rounded(literal, scale)))
    if mode == "string":
        return TypeMapping(ks.primitive("string"), fixed(_same if text else _plain), _plain(zero),
                           lambda literal: _plain(_rounded(literal, scale)), identity=text)
    schema = ks.logical("bytes", ks.DECIMAL, params={"scale": str(scale), ks.PRECISION_PARAM: str(precision)})
    convert = _unscaled_text(scale) if text else _unscaled_decimal(scale)
    return TypeMapping(schema, fixed(convert), decimal_bytes(0),
                       lambda literal: decimal_bytes(int(_rounded(literal, scale).scaleb(scale, _EXACT))),
                       may_fail=text)
