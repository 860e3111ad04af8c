"""Debezium / Kafka Connect types to Spark types.

`codec_for` resolves a codec once per column from the column's Kafka Connect schema: first by
logical type name (``io.debezium.time.MicroTimestamp``, ``org.apache.kafka.connect.data.Decimal``
...), then by the physical type. The codecs live in small modules by family: `temporal`,
`numeric`, `text`, `composite`. See ``docs/silver.md`` for the full mapping table.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pyspark.sql.types import DecimalType, StringType

from silver.connect_schema import ConnectSchema
from silver.types.codec import Codec, LeafCodec, Placeholder, json_member
from silver.types.composite import ArrayCodec, MapCodec, StructCodec
from silver.types.numeric import decimal_codec, variable_scale_decimal_codec
from silver.types.temporal import TEMPORAL_CODECS
from silver.types.text import TEXT_CODECS, bits_codec, primitive_codec
from silver.types.widening import can_widen, widen

__all__ = ["Codec", "LeafCodec", "Placeholder", "TypeOptions", "can_widen", "codec_for", "json_member", "widen"]

_DECIMAL = "org.apache.kafka.connect.data.Decimal"
_VARIABLE_SCALE = "io.debezium.data.VariableScaleDecimal"
_BITS = "io.debezium.data.Bits"


@dataclass(frozen=True)
class TypeOptions:
    """Choices the type mapping leaves to the user.

    Attributes:
        variable_scale_decimal: silver type of ``VariableScaleDecimal`` (NUMERIC w/o precision):
            STRING (the exact value) or a DECIMAL (values that do not fit are mismatches).
    """

    variable_scale_decimal: DecimalType | StringType = field(default_factory=StringType)


def codec_for(schema: ConnectSchema, options: TypeOptions | None = None) -> Codec:
    """The codec that decodes values of ``schema`` into silver.

    Unknown logical names fall back to their physical type, as Kafka Connect consumers do.
    """
    opts = options or TypeOptions()
    name = schema.name or ""
    if name == _DECIMAL:
        return decimal_codec(schema)
    if name == _VARIABLE_SCALE:
        return variable_scale_decimal_codec(opts.variable_scale_decimal)
    if name == _BITS and schema.type == "bytes":
        return bits_codec(schema)
    if name in TEMPORAL_CODECS and schema.type != "struct":
        return TEMPORAL_CODECS[name]
    if name in TEXT_CODECS and schema.type == "string":
        return TEXT_CODECS[name]
    if schema.type == "array":
        assert schema.items is not None
        return ArrayCodec(codec_for(schema.items, opts))
    if schema.type == "map":
        assert schema.keys is not None and schema.values is not None
        return MapCodec(codec_for(schema.keys, opts), codec_for(schema.values, opts))
    if schema.type == "struct":
        fields = tuple((f.name, codec_for(f.schema, opts)) for f in schema.fields)
        return StructCodec(fields, schema.name)
    return primitive_codec(schema.type)
