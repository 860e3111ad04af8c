"""Numeric codecs: Kafka Connect ``Decimal`` bytes and Debezium ``VariableScaleDecimal``.

A ``Decimal`` value is the base64 of the big-endian two's-complement unscaled integer; the
``scale`` parameter places the decimal point. Spark has no bytes-to-bigint function for more
than 64 bits, so the hex digits are split into 56-bit chunks (``conv`` is exact below 2^63)
and summed as DECIMAL(38,0) (a negative value as its magnitude, then negated). The scale is applied by
inserting the decimal point into the digits, which is exact (multiplying by 10^-s is not:
Spark may drop scale when the product exceeds 38 digits). A declared precision of at most 18
takes the faster ``BIGINT`` path of `silver.types.short_decimal` instead.

Values that may not fit 38 digits (``VariableScaleDecimal``, ``Decimal`` without a precision or
with one above 38) are converted by `digits_text` instead: the bytes are folded into base-10^9
limbs with array higher-order functions, exact at any length, and become decimal text. Such
columns are STRING in silver (the exact value, never rounded), or, when the user chose a
DECIMAL type for them, a value that does not fit that type exactly is a mismatch (quarantined).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from pyspark.sql import Column
from pyspark.sql import functions as sf
from pyspark.sql.types import ArrayType, DataType, DecimalType, LongType, StringType, StructField, StructType

from silver.connect_schema import ConnectSchema
from silver.types.base64_hex import hex_of_base64
from silver.types.codec import Codec, LeafCodec
from silver.types.short_decimal import MAX_SHORT_PRECISION, short_decimal

__all__ = ["decimal_codec", "variable_scale_decimal_codec"]

_CHUNK_HEX = 14  # 7 bytes = 56 bits per chunk
_CHUNK_BASE = 1 << 56
_MAX_PRECISION = 38
_MAX_UNSCALED = 10**_MAX_PRECISION - 1
_HEX = "0123456789ABCDEF"
_MAX_SCALE = 16383  # PostgreSQL's largest NUMERIC display scale; a larger one is not a decimal


def _chunks_for(precision: int | None) -> int:
    """How many 56-bit chunks hold a two's-complement value of ``precision`` digits."""
    if precision is not None and precision <= 16:
        return 1
    if precision is not None and precision <= 33:
        return 2
    return 3


def _limit_hex(limit: int, width: int) -> str:
    return f"{min(limit, 16**width - 1):0{width}X}"


def unscaled(b64: Column, chunks: int) -> Column:
    """The signed unscaled integer of base64 big-endian two's-complement bytes, DECIMAL(38,0).

    Null if the text is not base64, holds more bytes than ``chunks`` can carry, or its value
    has more than 38 digits. A negative value is summed as its magnitude, ``unsigned(~bytes) +
    1`` (the hex digits complemented), so no partial sum exceeds the result: summing the
    two's-complement chunks passes through values beyond 38 digits near -10^38.
    """
    hx = hex_of_base64(b64)
    width = chunks * _CHUNK_HEX
    negative = sf.substring(hx, 1, 1).isin(*"89ABCDEF")
    digits = sf.lpad(sf.when(negative, sf.translate(hx, _HEX, _HEX[::-1])).otherwise(hx), width, "0")
    parts = [sf.conv(sf.substring(digits, i * _CHUNK_HEX + 1, _CHUNK_HEX), 16, 10).cast(DecimalType(38, 0))
             for i in range(chunks)]
    value = parts[0]
    for part in parts[1:]:
        value = value * sf.lit(_CHUNK_BASE).cast(DecimalType(38, 0)) + part
    # fixed-width hex digits compare as their numbers do: at most 38 digits once signed
    limit = sf.when(negative, sf.lit(_limit_hex(_MAX_UNSCALED - 1, width))).otherwise(
        sf.lit(_limit_hex(_MAX_UNSCALED, width)))
    fits = (sf.length(hx) > 0) & (sf.length(hx) <= width) & (digits <= limit)
    sign = sf.when(negative, sf.lit(-1)).otherwise(sf.lit(1))
    return sf.when(fits, ((value + negative.cast("int")) * sign).cast(DecimalType(38, 0)))


_LIMB = 1_000_000_000  # base of the limbs `long_digits_text` folds bytes into (limb * 256 + 255 < 2^63)


def _fold(limbs: Column, carry: Column, multiplier: int) -> Column:
    """``limbs`` (little-endian base-10^9 digits) * ``multiplier`` + ``carry``, as limbs."""
    empty = sf.array().cast(ArrayType(LongType()))

    def nullable(value: Column) -> Column:  # the same nullability in the start and every step (Sail checks)
        return sf.nullif(value.cast(LongType()), sf.lit(-1).cast(LongType()))

    def step(state: Column, limb: Column) -> Column:
        total = limb * multiplier + state["carry"]
        return sf.struct(sf.array_append(state["out"], total % _LIMB).alias("out"),
                         nullable((total - total % _LIMB) / _LIMB).alias("carry"))

    def finish(state: Column) -> Column:
        return sf.when(state["carry"] > 0, sf.array_append(state["out"], state["carry"])).otherwise(state["out"])

    return sf.aggregate(limbs, sf.struct(empty.alias("out"), nullable(carry).alias("carry")), step, finish)


_SHORT_B64 = 20  # base64 characters of at most 15 bytes: below 2^119 < 10^36, exact as DECIMAL(38,0)


def digits_text(b64: Column) -> Column:
    """The signed unscaled integer of base64 big-endian two's-complement bytes as decimal text,
    exact at any length (e.g. ``AQID`` -> ``66051``, ``/w==`` -> ``-1``); null if not base64.

    Values of up to 15 bytes take `unscaled` (fast); longer ones the limb fold (`long_digits_text`,
    many times slower per value).
    """
    short = sf.length(b64) <= _SHORT_B64
    # the long path sees null for short values (Sail evaluates both branches on every row)
    return sf.when(short, unscaled(b64, 3).cast(StringType())).otherwise(long_digits_text(sf.when(~short, b64)))


def long_digits_text(b64: Column) -> Column:
    """`digits_text` by folding the bytes into base-10^9 limbs: exact at any length.

    A negative value is ``-(unsigned(~bytes) + 1)``: its bytes are complemented, folded, and 1
    added, so only non-negative limb arithmetic is needed.
    """
    given = hex_of_base64(b64)
    # never fold a null array: Sail's ``aggregate`` then returns null for every row of the batch
    hx = sf.when(sf.length(given) > 0, given).otherwise(sf.lit("00"))
    negative = sf.substring(hx, 1, 1).isin("8", "9", "A", "B", "C", "D", "E", "F")
    count = (sf.length(hx) / 2).cast("int")

    def byte(i: Column) -> Column:
        value = sf.conv(hx.substr(i * 2 - 1, sf.lit(2)), 16, 10).cast("int")
        return sf.when(negative, 255 - value).otherwise(value)

    start = sf.array(sf.lit(0).cast(LongType()))
    limbs = sf.aggregate(sf.transform(sf.sequence(sf.lit(1), count), byte), start,
                         lambda acc, b: _fold(acc, b, 256))
    limbs = _fold(limbs, sf.when(negative, 1).otherwise(0), 1)
    padded = sf.array_join(sf.reverse(sf.transform(limbs, lambda limb: sf.lpad(limb.cast("string"), 9, "0"))), "")
    stripped = sf.regexp_replace(padded, "^0+", "")
    magnitude = sf.when(stripped == "", sf.lit("0")).otherwise(stripped)
    return sf.when(sf.length(given) > 0,
                   sf.concat(sf.when(negative, sf.lit("-")).otherwise(sf.lit("")), magnitude))


def scale_digits(unscaled_value: Column, scale: Column | int) -> Column:
    """Decimal text of ``unscaled * 10^-scale`` (exact), e.g. (-12345, 2) -> ``-123.45``."""
    return point_text(unscaled_value.cast(StringType()), scale)


def point_text(text: Column, scale: Column | int) -> Column:
    """Decimal text of the integer text ``text`` times 10^-scale (exact): the point inserted,
    or zeros appended for a negative scale; e.g. (``-12345``, 2) -> ``-123.45``."""
    scale_col = sf.lit(scale) if isinstance(scale, int) else scale
    digits = sf.regexp_replace(text, "^-", "")
    short = sf.greatest(scale_col + 1 - sf.length(digits), sf.lit(0))
    padded = sf.concat(sf.repeat(sf.lit("0"), short), digits)
    sign = sf.when(text.startswith("-"), sf.lit("-")).otherwise(sf.lit(""))
    int_part = sf.left(padded, sf.length(padded) - scale_col)
    frac = sf.right(padded, scale_col)
    with_point = sf.concat(sign, int_part, sf.lit("."), frac)
    zeros = sf.when(digits == "0", text).otherwise(sf.concat(text, sf.repeat(sf.lit("0"), -scale_col)))
    return sf.when(scale_col > 0, with_point).when(scale_col < 0, zeros).otherwise(text)


def let(value: Column, fn: Callable[[Column], Column]) -> Column:
    """``fn(value)`` with ``value`` bound to a lambda variable: an expression that refers to its
    argument several times then repeats ``value`` no more (Sail does not share subexpressions,
    and the folded `digits_text` is costly)."""
    return sf.element_at(sf.transform(sf.array(value), fn), 1)


def fits(text: Column, target: DecimalType) -> Column:
    """True where the decimal text ``text`` (as `point_text` writes it) fits ``target`` exactly:
    at most ``scale`` fraction digits and ``precision - scale`` integer digits."""
    digits = sf.regexp_replace(text, "^-", "")
    has_point = sf.instr(digits, ".") > 0
    frac = sf.when(has_point, sf.length(digits) - sf.instr(digits, ".")).otherwise(sf.lit(0))
    whole = sf.regexp_replace(sf.when(has_point, sf.substring_index(digits, ".", 1)).otherwise(digits), "^0+", "")
    return (frac <= target.scale) & (sf.length(whole) <= target.precision - target.scale)


def exact_decimal(text: Column, target: DataType) -> Column:
    """Decimal text as ``target``: the text itself (STRING), or the DECIMAL when it fits exactly
    (null otherwise: a mismatch, never a rounded value)."""
    if not isinstance(target, DecimalType):
        return text
    return let(text, lambda t: sf.when(fits(t, target), t.try_cast(target)))


def decimal_codec(schema: ConnectSchema) -> Codec:
    """``org.apache.kafka.connect.data.Decimal`` -> DECIMAL(precision, scale).

    A precision or scale above 38 (MySQL ``DECIMAL(65,30)``, PostgreSQL ``NUMERIC(50,20)``) is a
    STRING of the exact value. Without ``connect.decimal.precision`` the type is
    DECIMAL(38, scale); values that do not fit are mismatches (quarantined), never truncated.
    """
    scale = int(schema.param("scale") or 0)
    precision_text = schema.param("connect.decimal.precision")
    precision = int(precision_text) if precision_text else None
    if (precision or 0) > _MAX_PRECISION or scale > _MAX_PRECISION or scale < 0:
        return LeafCodec(StringType(), f"decimal({precision},{scale})",
                         lambda raw: let(digits_text(raw), lambda t: point_text(t, scale)))
    p = max(precision or _MAX_PRECISION, scale)
    target = DecimalType(p, scale)
    if precision is None:  # any length: the exact text, then the type if it fits
        return LeafCodec(target, f"decimal({precision},{scale})",
                         lambda raw: exact_decimal(let(digits_text(raw), lambda t: point_text(t, scale)), target))
    if p <= MAX_SHORT_PRECISION:  # a BIGINT holds every fitting unscaled value
        return LeafCodec(target, f"decimal({precision},{scale})", lambda raw: short_decimal(raw, p, scale))
    chunks = _chunks_for(precision)

    def fn(raw: Column) -> Column:
        return scale_digits(unscaled(raw, chunks), scale).try_cast(target)

    return LeafCodec(target, f"decimal({precision},{scale})", fn)


@dataclass(frozen=True, eq=False)
class _VariableScaleDecimal(Codec):
    target: DecimalType | StringType

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
        text = let(digits_text(raw["value"]), lambda t: point_text(t, scale))
        return sf.when(scale.between(-_MAX_SCALE, _MAX_SCALE), exact_decimal(text, self.target))


def variable_scale_decimal_codec(target: DecimalType | StringType) -> Codec:
    """``io.debezium.data.VariableScaleDecimal`` ``{scale, value}`` -> ``target``: STRING, the
    exact decimal text; or a DECIMAL, where a value that does not fit it exactly (more fraction
    or integer digits) is a mismatch, quarantined rather than rounded."""
    return _VariableScaleDecimal(target)
