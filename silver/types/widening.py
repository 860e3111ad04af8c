"""Which type changes silver can absorb without rewriting history wrongly.

Safe widenings (every old value is exactly representable in the new type): integers to wider
integers, FLOAT to DOUBLE, integers up to INT to DOUBLE, integers to decimals with enough
integer digits, DECIMAL(p,s) to DECIMAL(p',s') when neither the integer digits nor the scale
shrink, DATE to TIMESTAMP, and element-wise for arrays, maps and structs (fields added).
"""

from __future__ import annotations

from pyspark.sql import Column
from pyspark.sql import functions as sf
from pyspark.sql.types import (
    ArrayType,
    ByteType,
    DataType,
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    IntegerType,
    LongType,
    MapType,
    ShortType,
    StructField,
    StructType,
    TimestampType,
)

__all__ = ["can_widen", "convert", "widen"]

_INT_RANK: dict[type[DataType], int] = {ByteType: 1, ShortType: 2, IntegerType: 3, LongType: 4}
_INT_DIGITS = {1: 3, 2: 5, 3: 10, 4: 20}
_MAX_PRECISION = 38


def can_widen(old: DataType, new: DataType) -> bool:
    """True if every value of ``old`` fits ``new`` exactly (equal types included)."""
    return widen(old, new) == new


def widen(a: DataType, b: DataType) -> DataType | None:
    """The narrowest type both ``a`` and ``b`` widen to, or None if there is none."""
    if a == b:
        return a
    result = _widen_scalar(a, b)
    if result is None:
        result = _widen_scalar(b, a)
    if result is None:
        result = _widen_nested(a, b)
    return result


def _widen_scalar(a: DataType, b: DataType) -> DataType | None:
    rank_a, rank_b = _INT_RANK.get(type(a)), _INT_RANK.get(type(b))
    if rank_a and rank_b:
        return a if rank_a >= rank_b else b
    if isinstance(a, DoubleType) and (isinstance(b, FloatType) or (rank_b and rank_b <= 3)):
        return a
    if isinstance(a, DecimalType) and rank_b:
        return _widen_decimal(a, DecimalType(_INT_DIGITS[rank_b], 0))
    if isinstance(a, DecimalType) and isinstance(b, DecimalType):
        return _widen_decimal(a, b)
    if isinstance(a, TimestampType) and isinstance(b, DateType):
        return a
    return None


def _widen_decimal(a: DecimalType, b: DecimalType) -> DecimalType | None:
    scale = max(a.scale, b.scale)
    digits = max(a.precision - a.scale, b.precision - b.scale)
    if digits + scale > _MAX_PRECISION:
        return None
    return DecimalType(digits + scale, scale)


def _widen_nested(a: DataType, b: DataType) -> DataType | None:
    if isinstance(a, ArrayType) and isinstance(b, ArrayType):
        item = widen(a.elementType, b.elementType)
        return None if item is None else ArrayType(item)
    if isinstance(a, MapType) and isinstance(b, MapType):
        key, value = widen(a.keyType, b.keyType), widen(a.valueType, b.valueType)
        return None if key is None or value is None else MapType(key, value)
    if isinstance(a, StructType) and isinstance(b, StructType):
        return _widen_struct(a, b)
    return None


def _widen_struct(a: StructType, b: StructType) -> DataType | None:
    by_name = {f.name: f for f in b.fields}
    fields = []
    for f in a.fields:
        other = by_name.pop(f.name, None)
        t = f.dataType if other is None else widen(f.dataType, other.dataType)
        if t is None:
            return None
        fields.append(StructField(f.name, t))
    fields += [StructField(f.name, f.dataType) for f in b.fields if f.name in by_name]
    return StructType(fields)


def convert(value: Column, old: DataType, new: DataType) -> Column:
    """``value``, of type ``old``, as the wider type ``new`` (see `widen`).

    Structs are rebuilt field by field, by name (fields ``old`` lacks read null), arrays and
    maps element by element; anything else is a plain cast. Classic Spark cannot cast a struct
    to one with more fields (``struct<x>`` to ``struct<x,y>``); Sail can; this works on both.
    """
    if old == new:
        return value
    if isinstance(old, StructType) and isinstance(new, StructType):
        have = {f.name: f.dataType for f in old.fields}
        fields = [(convert(value.getField(f.name), have[f.name], f.dataType) if f.name in have
                   else sf.lit(None).cast(f.dataType)).alias(f.name) for f in new.fields]
        return sf.when(value.isNull(), sf.lit(None).cast(new)).otherwise(sf.struct(*fields))
    if isinstance(old, ArrayType) and isinstance(new, ArrayType) and _nests_struct(new.elementType):
        return sf.transform(value, lambda item: convert(item, old.elementType, new.elementType))
    if isinstance(old, MapType) and isinstance(new, MapType) and _nests_struct(new.valueType):
        keyed = value if old.keyType == new.keyType else sf.transform_keys(value, lambda k, _v: k.cast(new.keyType))
        return sf.transform_values(keyed, lambda _k, v: convert(v, old.valueType, new.valueType))
    return value.cast(new)


def _nests_struct(t: DataType) -> bool:
    if isinstance(t, StructType):
        return True
    if isinstance(t, ArrayType):
        return _nests_struct(t.elementType)
    if isinstance(t, MapType):
        return _nests_struct(t.valueType)
    return False
