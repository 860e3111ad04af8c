"""Spark types of the ``casts:`` entries that `silver.declarations` validates.

Kept apart from the declarations so that the YAML models import no pyspark: capture and
validation run in an install without the Spark extras.
"""

from __future__ import annotations

from pyspark.sql.types import (
    BinaryType,
    BooleanType,
    ByteType,
    DataType,
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    IntegerType,
    LongType,
    ShortType,
    StringType,
    TimestampNTZType,
    TimestampType,
)

from silver.declarations import DECIMAL_CAST, PRIMITIVE_CASTS, is_supported_cast

__all__ = ["parse_cast_type"]

_SPARK_TYPES: dict[str, DataType] = dict(zip(PRIMITIVE_CASTS, (
    BooleanType(), ByteType(), ShortType(), IntegerType(), IntegerType(), LongType(), FloatType(), DoubleType(),
    StringType(), BinaryType(), DateType(), TimestampType(), TimestampNTZType(),
), strict=True))


def parse_cast_type(type_text: str) -> DataType:
    """The Spark type of a `casts:` entry (see `silver.declarations.is_supported_cast`).

    Raises:
        ValueError: the type is not supported.
    """
    text = type_text.strip().lower()
    if text in _SPARK_TYPES:
        return _SPARK_TYPES[text]
    match = DECIMAL_CAST.match(text)
    if match is None or not is_supported_cast(text):
        raise ValueError(f"unsupported cast type {type_text!r}")
    return DecimalType(int(match.group(1)), int(match.group(2)))
