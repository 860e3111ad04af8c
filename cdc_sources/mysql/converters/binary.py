"""BINARY, VARBINARY and the BLOB types under ``binary.handling.mode``.

A BINARY(n) value shorter than n is right-padded with zero bytes (DBZ-254: the binlog drops
them). The text modes render the bytes as base64, URL-safe base64 or lower-case hex strings.
A string default is written as its UTF-8 bytes, without padding, as Debezium does.
"""

from __future__ import annotations

from typing import Any

from cdc_sources.common.connect_values import BINARY_ENCODERS, binary_schema
from cdc_sources.mysql.converters import typenames as jdbc
from cdc_sources.mysql.converters.model import ColumnFacts, Convert, TypeMapping, fixed


def _encoder(encode: Any, pad_to: int) -> Convert:
    if pad_to <= 0:
        def convert(value: bytes | str) -> str:
            return encode(value if type(value) is bytes else _as_bytes(value))  # type: ignore[no-any-return]
        return convert

    def padded(value: bytes | str) -> str:
        data = value if type(value) is bytes else _as_bytes(value)
        if len(data) < pad_to:
            data = data.ljust(pad_to, b"\x00")
        return encode(data)  # type: ignore[no-any-return]
    return padded


def _as_bytes(value: bytes | bytearray | str) -> bytes:
    """Bytes of a value that is not ``bytes``: a ``str`` (Debezium takes its UTF-8 bytes)."""
    return value.encode("utf-8") if isinstance(value, str) else bytes(value)


def binary_mapping(facts: ColumnFacts) -> TypeMapping:
    """BINARY(n), VARBINARY(n), TINYBLOB... LONGBLOB."""
    mode = facts.settings.binary_handling_mode
    encode = BINARY_ENCODERS[mode]
    pad_to = (facts.column.length or 0) if facts.column.jdbc_type == jdbc.BINARY else 0
    convert = _encoder(encode, pad_to)
    return TypeMapping(binary_schema(mode), fixed(convert), "", lambda literal: encode(str(literal).encode()))
