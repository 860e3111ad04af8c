"""BYTEA, and unknown types kept as opaque bytes (``include.unknown.datatypes=true``).

``binary.handling.mode``: ``bytes`` (a BYTES schema; JsonConverter writes base64), ``base64``,
``base64-url-safe`` (padded, like ``java.util.Base64``) or ``hex`` (lower case). Requires
``bytea_output=hex``, as Debezium does.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from cdc_sources.common.connect_values import BINARY_ENCODERS as ENCODERS
from cdc_sources.common.connect_values import binary_schema
from cdc_sources.common.javacompat import b64
from cdc_sources.postgres.converters.model import (
    ColumnType,
    Convert,
    TypeFactory,
    TypeMapping,
    ValueConversionError,
)
from cdc_sources.postgres.converters.settings import ConverterSettings


def binary_placeholder(settings: ConverterSettings) -> Any:
    """The unchanged-TOAST value of a binary column.

    ``bytes``: the placeholder bytes; ``hex``: the placeholder text itself (not hex-encoded);
    ``base64`` modes: null (Debezium's converters do not recognise the marker there).
    """
    mode = settings.binary_handling_mode
    if mode == "bytes":
        return b64(settings.placeholder_bytes)
    if mode == "hex":
        return settings.placeholder_text
    return None


def parse_bytea(text: str) -> bytes:
    """Bytes of a ``bytea_output=hex`` value (``\\x0a1b``)."""
    if text[:2] != "\\x":
        raise _not_hex(text)
    return bytes.fromhex(text[2:])


def bytea_mapping(col: ColumnType, settings: ConverterSettings) -> TypeMapping:
    """BYTEA."""
    mode = settings.binary_handling_mode
    convert: Convert
    if mode == "hex":
        convert = _hex_text
    else:
        encode = ENCODERS[mode]

        def convert(text: str) -> str:
            return encode(parse_bytea(text))
    return TypeMapping(binary_schema(mode), convert, "", binary_placeholder(settings))


def _hex_text(text: str) -> str:
    if text[:2] != "\\x":
        raise _not_hex(text)
    return text[2:]


def _not_hex(text: str) -> ValueConversionError:
    return ValueConversionError(
        f"bytea value does not start with \\x ({text[:10]!r}...); set bytea_output=hex on the "
        "capture sessions", kind="bytea")


def opaque_mapping(render: Callable[[str], str] | None = None) -> TypeFactory:
    """A factory for an unknown type: the UTF-8 bytes of its text (optionally re-rendered first)."""
    def factory(col: ColumnType, settings: ConverterSettings) -> TypeMapping:
        encode = ENCODERS[settings.binary_handling_mode]
        if render is None:
            def convert(text: str) -> str:
                return encode(text.encode())
        else:
            def convert(text: str) -> str:
                return encode(render(text).encode())
        return TypeMapping(binary_schema(settings.binary_handling_mode), convert, "",
                           binary_placeholder(settings))
    return factory
