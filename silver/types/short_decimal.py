"""Kafka Connect ``Decimal`` values of at most 18 digits, decoded through a ``BIGINT``.

A ``Decimal`` value is the base64 of the big-endian two's-complement unscaled integer. When the
declared precision is at most 18, every value that fits is below 10^18 < 2^63: its minimal
encoding holds at most 8 bytes and the unscaled integer fits a ``BIGINT``. `short_decimal`
decodes it without the decimal text the general path (`silver.types.numeric`) builds:

1. the bytes' hex digits (at most 16), left-padded with zeros to 16, are read as two 32-bit
   halves by ``conv`` (exact below 2^63) and joined with a shift, which wraps: 8 bytes come
   out signed, fewer bytes as their unsigned value;
2. a left shift then an arithmetic right shift by ``64 - 8n`` (``n`` bytes) sign-extends it;
3. ``try_cast`` to ``DECIMAL(precision, 0)`` keeps the values of at most ``precision`` digits
   (null otherwise), and a product with the exact literal ``10^-scale`` places the point:
   ``DECIMAL(p, 0) * DECIMAL(s, s)`` is ``DECIMAL(p + s + 1, s)``, at most 37 digits, so the
   product is exact, and it fits ``DECIMAL(precision, scale)``.

Anything else (not base64, more than 8 bytes, more than ``precision`` digits) is null, which
the codec reports as a mismatch, as on the general path. Each intermediate value is used once
(or only in unconditional positions), so classic Spark's generated code computes it once.
"""

from __future__ import annotations

from decimal import Decimal

from pyspark.sql import Column
from pyspark.sql import functions as sf
from pyspark.sql.types import DecimalType

from silver.types.base64_hex import hex_of_base64

__all__ = ["MAX_SHORT_PRECISION", "short_decimal", "short_unscaled"]

MAX_SHORT_PRECISION = 18  # 10^18 < 2^63: every fitting unscaled value is a BIGINT
_MAX_HEX = 16  # hex digits of 8 bytes


def short_unscaled(b64: Column) -> Column:
    """The signed integer of base64 big-endian two's-complement bytes (1 to 8 of them), BIGINT;
    null when the text is not well-formed base64 or holds more than 8 bytes."""
    hx = sf.lpad(hex_of_base64(b64), _MAX_HEX, "0")  # a longer text is cut: the null shift discards it
    digits = sf.length(hex_of_base64(b64))
    spare = sf.when(digits.between(2, _MAX_HEX), sf.lit(64) - digits * 4)  # null: no bytes or too many
    high, low = (sf.conv(sf.substring(hx, start, 8), 16, 10).cast("bigint") for start in (1, 9))
    bits = sf.shiftleft(high, 32).bitwiseOR(low)  # the shift wraps: 8 bytes come out signed
    return sf.call_function("shiftright", sf.call_function("shiftleft", bits, spare), spare)


def short_decimal(b64: Column, precision: int, scale: int) -> Column:
    """The ``DECIMAL(precision, scale)`` of a Kafka Connect ``Decimal`` value (base64 of the
    unscaled integer), exact; null when it is not base64 or does not fit. ``precision`` is at
    most `MAX_SHORT_PRECISION`, ``0 <= scale <= precision``."""
    if not 1 <= precision <= MAX_SHORT_PRECISION or not 0 <= scale <= precision:
        raise ValueError(f"short_decimal: precision {precision} and scale {scale} are outside "
                         f"1..{MAX_SHORT_PRECISION} and 0..precision")
    whole = short_unscaled(b64).try_cast(DecimalType(precision, 0))
    if scale == 0:
        return whole
    step = sf.lit(Decimal(1).scaleb(-scale)).cast(DecimalType(scale, scale))
    return (whole * step).cast(DecimalType(precision, scale))
