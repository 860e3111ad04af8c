"""Arrays: PostgreSQL's array text (``{1,2,NULL}``, ``{"a b","c\\"d"}``) and their Debezium rendering.

Each element goes through the element type's own converter. Debezium handles one-dimensional
arrays only: the elements of a multi-dimensional array are sub-arrays its element converters
cannot read, which it renders as null (non-string types) or as Java object names (string types);
both become null here. Explicit lower bounds (``[0:2]={...}``) are ignored, as pgjdbc does.
"""

from __future__ import annotations

import hashlib
import uuid
from typing import Any

from cdc_sources.common import kschema as ks
from cdc_sources.common.javacompat import b64
from cdc_sources.postgres.converters.model import Convert, TypeMapping, ValueConversionError
from cdc_sources.postgres.converters.settings import ConverterSettings
from cdc_sources.postgres.types import PgType

_WHITESPACE = " \t\n\r\v\f"
_INT_ARRAYS = frozenset({"int4", "date", "int8"})


def parse_array(text: str, delimiter: str = ",") -> list[Any]:
    """The elements of an array text: str, None for NULL, or nested lists."""
    if text[:1] == "[":
        text = text[text.index("=") + 1:]
    if len(text) < 2 or text[0] != "{" or text[-1] != "}":
        raise ValueConversionError(f"cannot parse {text[:40]!r} as a PostgreSQL array", kind="array")
    if text == "{}":
        return []
    if '"' not in text and text[1] != "{":
        return [None if e == "NULL" else e for e in text[1:-1].split(delimiter)]
    return _parse_nested(text, delimiter)


def _parse_nested(text: str, delimiter: str) -> list[Any]:
    root: list[Any] = []
    stack: list[list[Any]] = []
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch == "{":
            new: list[Any] = []
            (stack[-1] if stack else root).append(new)
            stack.append(new)
            i += 1
        elif ch == "}":
            stack.pop()
            i += 1
        elif ch == delimiter or ch in _WHITESPACE:
            i += 1
        elif ch == '"':
            value, i = _quoted(text, i)
            stack[-1].append(value)
        else:
            end = i
            while end < n and text[end] != delimiter and text[end] != "}":
                end += 1
            token = text[i:end].strip(_WHITESPACE)
            stack[-1].append(None if token == "NULL" else token)
            i = end
    return root[0] if root else []


def _quoted(text: str, pos: int) -> tuple[str, int]:
    out: list[str] = []
    i = pos + 1
    while text[i] != '"':
        if text[i] == "\\":
            i += 1
        out.append(text[i])
        i += 1
    return "".join(out), i + 1


def array_convert(element: Convert, delimiter: str = ",") -> Convert:
    """Converts an array text element by element (NULL and sub-array elements become None)."""
    def convert(text: str) -> list[Any]:
        return [None if e is None or e.__class__ is list else element(e)
                for e in parse_array(text, delimiter)]
    return convert


def array_placeholder(element: PgType, settings: ConverterSettings) -> Any:
    """The unchanged-TOAST value of an array column (Debezium's typed placeholders).

    Text-like arrays hold the placeholder string; INTEGER/DATE/BIGINT arrays hold the
    placeholder's bytes as signed numbers; BYTEA arrays its bytes; UUID arrays the name-based
    (version 3) UUID of its bytes. Debezium has no placeholder for other array types (it fails
    on such a value); they get a one-element array of the placeholder string here.
    """
    raw = settings.placeholder_bytes
    if element.name in _INT_ARRAYS:
        return [b - 256 if b > 127 else b for b in raw]
    if element.name == "bytea":
        return [b64(raw)]
    if element.name == "uuid":
        digest = bytearray(hashlib.md5(raw, usedforsecurity=False).digest())  # UUID.nameUUIDFromBytes
        digest[6] = (digest[6] & 0x0F) | 0x30
        digest[8] = (digest[8] & 0x3F) | 0x80
        return [str(uuid.UUID(bytes=bytes(digest)))]
    return [settings.placeholder_text]


def array_mapping(element_type: PgType, element: TypeMapping, settings: ConverterSettings, *,
                  items_optional: bool) -> TypeMapping:
    """The array of an element mapping."""
    schema = ks.array(element.schema, items_optional=items_optional or element.always_optional)
    delimiter = ";" if element_type.oid == 603 else ","  # box is the one built-in with ';'
    return TypeMapping(schema, array_convert(element.convert, delimiter), [],
                       array_placeholder(element_type, settings))
