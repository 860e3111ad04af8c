"""BOOLEAN, BIT(n) and BIT VARYING(n).

A bit string of length 1 is a boolean. Longer ones become ``io.debezium.data.Bits`` bytes in
LITTLE-endian order (bit 0 is the rightmost character), sized by the highest set bit: Debezium
recomputes the byte count from the content, so ``B'0000'`` is zero bytes and ``B'00000001'`` one.
"""

from __future__ import annotations

from cdc_sources.common import kschema as ks
from cdc_sources.common.javacompat import b64
from cdc_sources.postgres.converters.model import ColumnType, TypeMapping
from cdc_sources.postgres.converters.settings import ConverterSettings

_TRUE = frozenset({"t", "T"})


def parse_bool(text: str) -> bool:
    """pgoutput's boolean text: ``t`` or ``f``."""
    return text in _TRUE


def bits_to_bool(text: str) -> bool:
    """A one-bit string: true when any bit is set."""
    return "1" in text


def bits_to_bytes(text: str) -> str:
    """A bit string as little-endian bytes, base64-encoded (JsonConverter's BYTES)."""
    value = int(text, 2) if text else 0
    return b64(value.to_bytes((value.bit_length() + 7) // 8, "little"))


def bool_mapping(col: ColumnType, settings: ConverterSettings) -> TypeMapping:
    """BOOLEAN -> ``boolean``."""
    return TypeMapping(ks.primitive("boolean"), parse_bool, False)


def bit_mapping(col: ColumnType, settings: ConverterSettings) -> TypeMapping:
    """BIT(n) and VARBIT(n): ``boolean`` when n is 1, else ``io.debezium.data.Bits``."""
    if col.length <= 1:
        return TypeMapping(ks.primitive("boolean"), bits_to_bool, False)
    schema = ks.logical("bytes", "io.debezium.data.Bits", params={"length": str(col.length)})
    return TypeMapping(schema, bits_to_bytes, "")
