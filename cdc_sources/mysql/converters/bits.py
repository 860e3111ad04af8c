"""BIT(n): ``boolean`` for BIT(1), else ``io.debezium.data.Bits`` bytes.

The Bits bytes are LITTLE-endian and always ``ceil(n/8)`` long (Debezium pads them). The binlog
library delivers a string of ``'0'``/``'1'`` (most significant bit first); the snapshot delivers
MySQL's big-endian bytes. A default ``b'101'`` arrives as the digits ``101``.
"""

from __future__ import annotations

from typing import Any

from cdc_sources.common import kschema as ks
from cdc_sources.common.javacompat import b64
from cdc_sources.mysql.converters.model import ColumnFacts, Convert, TypeMapping, ValueConversionError, fixed


def _bit_text(value: str) -> bool:
    return value[-1:] == "1"


def _bit_bytes(value: bytes) -> bool:
    return value[-1:] != b"\x00" and value != b""


def _bool_default(literal: Any) -> Any:
    """Debezium's ``convertToBit``: ``Short.parseShort(text) != 0``, else ``Boolean.parseBoolean``."""
    text = str(literal)
    try:
        if text.lstrip("+-").isdigit() and -(2**15) <= int(text) < 2**15:
            return int(text) != 0
    except ValueError:
        pass
    return text.lower() == "true"


def _bits_text(size: int) -> Convert:
    def convert(value: str) -> str:
        return b64(int(value, 2).to_bytes(size, "little")) if value else b64(bytes(size))
    return convert


def _bits_bytes(size: int) -> Convert:
    def convert(value: bytes) -> str:
        data = value[::-1]
        return b64(data.ljust(size, b"\x00") if len(data) < size else data)
    return convert


def _bits_default(size: int) -> Any:
    def default_of(literal: Any) -> Any:
        text = str(literal)
        if isinstance(literal, int) or not text or any(c not in "01" for c in text):
            raise ValueConversionError(f"the BIT default {literal!r} is not a bit string; Debezium fails on it",
                                       kind="default")
        number = int(text, 2)
        big_endian = number.to_bytes((len(text) + 7) // 8, "big")
        data = big_endian[::-1]
        return b64(data.ljust(size, b"\x00") if len(data) < size else data)
    return default_of


def bit_mapping(facts: ColumnFacts) -> TypeMapping:
    """BIT and BIT(n)."""
    length = facts.column.length if facts.column.length is not None else 1
    text = facts.origin == "binlog"
    if length <= 1:
        return TypeMapping(ks.primitive("boolean"), fixed(_bit_text if text else _bit_bytes), False, _bool_default)
    size = length // 8 + (1 if length % 8 else 0)
    schema = ks.logical("bytes", "io.debezium.data.Bits", params={"length": str(length)})
    return TypeMapping(schema, fixed(_bits_text(size) if text else _bits_bytes(size)), "", _bits_default(size))
