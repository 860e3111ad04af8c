"""HSTORE under ``hstore.handling.mode``: a JSON string (``io.debezium.data.Json``) or a map.

Debezium parses the text into a ``java.util.HashMap`` and writes it with Jackson, so keys come
out in HashMap bucket order and the JSON is compact (``{"a":"1","b":null}``), not in the order
PostgreSQL printed them; both are reproduced.
"""

from __future__ import annotations

from typing import Any

from cdc_sources.common import kschema as ks
from cdc_sources.common.javacompat import hashmap_order, jackson_object, string_hash
from cdc_sources.postgres.converters.model import ColumnType, TypeMapping, ValueConversionError
from cdc_sources.postgres.converters.settings import ConverterSettings

Pairs = list[tuple[str, str | None]]

JSON_SCHEMA = ks.logical("string", "io.debezium.data.Json")
MAP_SCHEMA = ks.map_of(ks.primitive("string"), ks.primitive("string"), values_optional=True)


def _quoted(text: str, pos: int) -> tuple[str, int]:
    """The string starting at the quote at ``pos``; returns it and the index after its end quote."""
    out: list[str] = []
    i = pos + 1
    while i < len(text):
        ch = text[i]
        if ch == '"':
            return "".join(out), i + 1
        if ch == "\\":
            i += 1
            ch = text[i]
        out.append(ch)
        i += 1
    raise ValueConversionError(f"unterminated string in hstore value {text[:40]!r}", kind="hstore")


def parse_hstore(text: str) -> Pairs:
    """``"a"=>"1", "b"=>NULL`` -> [("a", "1"), ("b", None)], in PostgreSQL's order."""
    pairs: Pairs = []
    pos = text.find('"')
    while pos >= 0:
        key, pos = _quoted(text, pos)
        arrow = text.find("=>", pos)
        if arrow < 0:
            raise ValueConversionError(f"malformed hstore value {text[:40]!r}", kind="hstore")
        pos = arrow + 2
        while text[pos] == " ":
            pos += 1
        value: str | None
        if text[pos] == '"':
            value, pos = _quoted(text, pos)
        else:
            value, pos = None, pos + 4  # NULL
        pairs.append((key, value))
        pos = text.find('"', pos)
    return pairs


def java_order(pairs: Pairs) -> Pairs:
    """The pairs in the iteration order of a ``HashMap`` they were put into."""
    order = hashmap_order([string_hash(k) for k, _ in pairs])
    return [pairs[i] for i in order]


def hstore_mapping(col: ColumnType, settings: ConverterSettings) -> TypeMapping:
    """HSTORE."""
    ph = settings.placeholder_text
    if settings.hstore_handling_mode == "map":
        def to_map(text: str) -> dict[str, Any]:
            return dict(java_order(parse_hstore(text)))
        return TypeMapping(MAP_SCHEMA, to_map, {}, {ph: ph})

    def to_json(text: str) -> str:
        return jackson_object(java_order(parse_hstore(text)))
    return TypeMapping(JSON_SCHEMA, to_json, "{}", jackson_object([(ph, ph)]))
