"""Numeric codecs: Kafka Connect ``Decimal`` bytes and Debezium ``VariableScaleDecimal``.

A ``Decimal`` value is the base64 of the big-endian two's-complement unscaled integer; the
``scale`` parameter places the decimal point. Spark has no bytes-to-bigint function for more
than 64 bits, so the hex digits are split into 56-bit chunks (``conv`` is exact below 2^63),
the top chunk sign-adjusted, and the chunks summed as DECIMAL(38,0). The scale is applied by
inserting the decimal point into the digits, which is exact (multiplying by 10^-s is not:
Spark may drop scale when the product exceeds 38 digits).
"""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import Column
from pyspark.sql import functions as sf
from pyspark.sql.types import DataType, DecimalType, StringType, StructField, StructType

from silver.connect_schema import ConnectSchema
from silver.types.codec import Codec, LeafCodec

__all__ = ["decimal_codec", "variable_scale_decimal_codec"]

_CHUNK_HEX = 14  # 7 bytes = 56 bits per chunk
_CHUNK_BASE = 1 << 56
_MAX_PRECISION = 38


def _chunks_for(precision: int | None) -> int:
    """How many 56-bit chunks hold a two's-complement value of ``precision`` digits."""
    if precision is not None and precision <= 16:
        return 1
    if precision is not None and precision <= 33:
        return 2
    return 3


def unscaled(b64: Column, chunks: int) -> Column:
    """The signed unscaled integer of base64 big-endian two's-complement bytes, DECIMAL(38,0).

    Null if the text is not base64 or holds more bytes than ``chunks`` can carry.
    """
    hx = sf.hex(sf.try_to_binary(b64, sf.lit("base64")))
    width = chunks * _CHUNK_HEX
    negative = sf.substring(hx, 1, 1).isin("8", "9", "A", "B", "C", "D", "E", "F")
    padded = sf.when(negative, sf.lpad(hx, width, "F")).otherwise(sf.lpad(hx, width, "0"))
    parts = [sf.conv(sf.substring(padded, i * _CHUNK_HEX + 1, _CHUNK_HEX), 16, 10).cast("bigint")
             for i in range(chunks)]
    top = parts[0] - sf.when(parts[0] >= _CHUNK_BASE // 2, sf.lit(_CHUNK_BASE)).otherwise(sf.lit(0))
    value = top.cast(DecimalType(38, 0))
    for part in parts[1:]:
        value = value * sf.lit(_CHUNK_BASE).cast(DecimalType(38, 0)) + part.cast(DecimalType(38, 0))
    fits = (sf.length(hx) > 0) & (sf.length(hx) <= width)
    return sf.when(fits, value)


def scale_digits(unscaled_value: Column, scale: Column | int) -> Column:
    """Decimal text of ``unscaled * 10^-scale`` (exact), e.g. (-12345, 2) -> ``-123.45``."""
    scale_col = sf.lit(scale) if isinstance(scale, int) else scale
    text = unscaled_value.cast(StringType())
    digits = sf.regexp_replace(text, "^-", "")
    short = sf.greatest(scale_col + 1 - sf.length(digits), sf.lit(0))
    padded = sf.concat(sf.repeat(sf.lit("0"), short), digits)
    sign = sf.when(text.startswith("-"), sf.lit("-")).otherwise(sf.lit(""))
    int_part = sf.left(padded, sf.length(padded) - scale_col)
    frac = sf.right(padded, scale_col)
    with_point = sf.concat(sign, int_part, sf.lit("."), frac)
    return sf.when(scale_col > 0, with_point).otherwise(text)


def decimal_codec(schema: ConnectSchema) -> Codec:
    """``org.apache.kafka.connect.data.Decimal`` -> DECIMAL(precision, scale).

    Without ``connect.decimal.precision`` (or above 38) the type is DECIMAL(38, scale); values
    that do not fit are reported as mismatches (quarantined), never truncated.
    """
    scale = int(schema.param("scale") or 0)
    precision_text = schema.param("connect.decimal.precision")
    precision = int(precision_text) if precision_text else None
    p = min(precision or _MAX_PRECISION, _MAX_PRECISION)
    p = max(p, scale) if scale <= _MAX_PRECISION else _MAX_PRECISION
    target = DecimalType(p, min(scale, p))
    chunks = _chunks_for(precision)

    def fn(raw: Column) -> Column:
        return scale_digits(unscaled(raw, chunks), scale).try_cast(target)

    return LeafCodec(target, f"decimal({precision},{scale})", fn)


@dataclass(frozen=True, eq=False)
class _VariableScaleDecimal(Codec):
    target: DecimalType

    @property
    def raw_type(self) -> DataType:
        return StructType([StructField("scale", StringType()), StructField("value", StringType())])

    @property
    def target_type(self) -> DataType:
        return self.target

    @property
    def signature(self) -> str:
        return f"variable_scale_decimal:{self.target.simpleString()}"

    def decode(self, raw: Column) -> Column:
        scale = raw["scale"].try_cast("int")
        text = scale_digits(unscaled(raw["value"], 3), scale)
        return sf.when(scale.between(0, 1000), text.try_cast(self.target))


def variable_scale_decimal_codec(target: DecimalType) -> Codec:
    """``io.debezium.data.VariableScaleDecimal`` ``{scale, value}`` -> ``target`` (rounded)."""
    return _VariableScaleDecimal(target)
