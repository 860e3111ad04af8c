"""Primitive, text-like and binary codecs.

* ``int8/16/32/64`` -> TINYINT/SMALLINT/INT/BIGINT, ``float32/64`` -> FLOAT/DOUBLE (read from
  the number's own digits, see `Codec.exact`; ``"NaN"``, ``"Infinity"``, ``"-Infinity"`` as
  JsonConverter writes them), ``boolean``;
* ``string`` and the string logical types (``Json``, ``Xml``, ``Uuid``, ``Enum``, ``Ltree``,
  ranges, network types...) -> STRING, unchanged;
* ``EnumSet`` (comma-separated) -> ARRAY<STRING>;
* ``bytes`` (``binary.handling.mode=bytes``, base64 in JSON) -> BINARY;
* ``io.debezium.data.Bits`` (little-endian bytes, ``length`` bits) -> STRING of ``0``/``1``,
  most significant bit first, as PostgreSQL prints ``B'101'``.
"""

from __future__ import annotations

from pyspark.sql import Column
from pyspark.sql import functions as sf
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    BooleanType,
    ByteType,
    DataType,
    DoubleType,
    FloatType,
    IntegerType,
    LongType,
    ShortType,
    StringType,
)

from silver.connect_schema import ConnectSchema
from silver.types.codec import Codec, LeafCodec, Placeholder

__all__ = ["STRING_CODEC", "TEXT_CODECS", "bits_codec", "primitive_codec"]

_NUMERIC: dict[str, DataType] = {
    "int8": ByteType(), "int16": ShortType(), "int32": IntegerType(), "int64": LongType(),
    "float32": FloatType(), "float64": DoubleType(), "boolean": BooleanType(),
}
_VARBIT_UNBOUNDED = 2**31 - 1


def _cast_to(target: DataType) -> LeafCodec:
    floating = isinstance(target, (FloatType, DoubleType))
    return LeafCodec(target, target.simpleString(), lambda raw: raw.try_cast(target), floating=floating)


STRING_CODEC = LeafCodec(StringType(), "string", None, toastable=True)


class _BytesCodec(LeafCodec):
    def unavailable(self, raw: Column, ph: Placeholder) -> Column | None:
        return ph.is_text(raw)


def primitive_codec(kind: str) -> Codec:
    """The codec of a primitive Kafka Connect type without a logical name."""
    if kind == "string":
        return STRING_CODEC
    if kind == "bytes":
        return _BytesCodec(BinaryType(), "bytes", lambda raw: sf.try_to_binary(raw, sf.lit("base64")))
    return _cast_to(_NUMERIC[kind])


def _enum_set(raw: Column) -> Column:
    return sf.when(raw == "", sf.array().cast(ArrayType(StringType()))).otherwise(sf.split(raw, ","))


def bits_codec(schema: ConnectSchema) -> Codec:
    """``io.debezium.data.Bits`` -> STRING of bits (``length`` of them when known)."""
    length_text = schema.param("length")
    length = int(length_text) if length_text else None

    def fn(raw: Column) -> Column:
        hx = sf.hex(sf.try_to_binary(raw, sf.lit("base64")))
        pairs = sf.regexp_extract_all(hx, sf.lit("(..)"), 1)
        bits = sf.array_join(sf.transform(sf.reverse(pairs), lambda b: sf.lpad(sf.conv(b, 16, 2), 8, "0")), "")
        if length is None or length >= _VARBIT_UNBOUNDED:
            return sf.when(hx.isNotNull(), bits)
        return (sf.when(hx.isNull(), sf.lit(None))
                .when(sf.length(bits) >= length, sf.right(bits, sf.lit(length)))
                .otherwise(sf.lpad(bits, length, "0")))

    return LeafCodec(StringType(), f"bits({length})", fn)


TEXT_CODECS: dict[str, Codec] = {
    "io.debezium.data.Json": STRING_CODEC,
    "io.debezium.data.Xml": STRING_CODEC,
    "io.debezium.data.Uuid": STRING_CODEC,
    "io.debezium.data.Enum": STRING_CODEC,
    "io.debezium.data.Ltree": STRING_CODEC,
    "io.debezium.data.EnumSet": LeafCodec(ArrayType(StringType()), "enum_set", _enum_set),
}
"""Codecs keyed by logical type name, for string-based logical types."""
