"""Compiled JSON renderers: one specialised function per table version for the hot path.

`compile_row_renderer` turns a table's field codecs into a function that writes a row tuple's
JSON object text directly, as the JSON converter would, without building a dict first:
integers pass their PostgreSQL text through, plain text columns are JSON-escaped in C, every
other column goes through its converter and ``orjson``. The generated source names no user
data: field names enter it only through ``repr`` of their JSON-encoded form.

The result is the same JSON text as ``orjson.dumps(codec.row(values, old))``; tests compare
the two for every type.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from json.encoder import encode_basestring
from typing import Any

import orjson

from cdc_sources.postgres.pgoutput import UNCHANGED_TOAST

RowRenderer = Callable[[Sequence[Any], Sequence[Any] | None], str]
KeyRenderer = Callable[[Sequence[Any]], str]

_INT_TYPES = frozenset({"int16", "int32", "int64"})
_INT_PROBES = ("0", "-32768", "2147483647", "-9223372036854775808")
_TEXT_PROBES = ("", "a b ", "héllo \"q\" \\ \n", "\x01")


def json_text(value: Any) -> str:
    return orjson.dumps(value).decode()


def _number(value: Any) -> str:
    """An int converter's result (None: ``null``)."""
    return "null" if value is None else str(value)


def _quoted(value: Any) -> str:
    """A string that needs no escaping as a JSON string (None: ``null``)."""
    return "null" if value is None else f'"{value}"'


# Logical types whose converters return strings that never need JSON escaping.
_PLAIN_STRING_NAMES = frozenset({
    "io.debezium.time.ZonedTimestamp", "io.debezium.time.ZonedTime", "io.debezium.data.Uuid",
    "io.debezium.time.IsoDate", "io.debezium.time.IsoTime", "io.debezium.time.IsoTimestamp",
})


def _kind(convert: Callable[[str], Any], schema: dict[str, Any], has_transform: bool) -> str:
    """How a field is rendered.

    ``int``: the PostgreSQL text is the JSON number; ``text``: the text JSON-escaped;
    ``number``: the converter returns an int (``str`` of it); ``quoted``: the converter
    returns a string that needs no escaping (base64 bytes, ISO times, UUIDs); ``value``: the
    converter's result through ``orjson``.
    """
    if has_transform:
        return "value"
    kind = schema.get("type")
    if "name" in schema:
        if kind == "bytes" or (kind == "string" and schema["name"] in _PLAIN_STRING_NAMES):
            return "quoted"
        if kind in _INT_TYPES:
            return "number"
        return "value"
    if kind == "bytes":
        return "quoted"
    try:
        if schema.get("type") in _INT_TYPES and all(convert(p) == int(p) for p in _INT_PROBES):
            return "int"
        if schema.get("type") == "string" and all(convert(p) == p for p in _TEXT_PROBES):
            return "text"
    except (ValueError, TypeError, ArithmeticError):
        return "value"
    return "value"


def compile_row_renderer(fields: Sequence[Any]) -> RowRenderer:
    """A function ``(values, old) -> JSON object text`` for the value fields of a codec.

    Args:
        fields: `schema.FieldCodec`s (name, index, convert, unavailable, fallback, transformed).
    """
    env: dict[str, Any] = {"_T": UNCHANGED_TOAST, "_esc": encode_basestring, "_j": json_text, "_q": _quoted,
                           "_num": _number}
    parts: list[str] = []
    for n, f in enumerate(fields):
        env[f"_c{n}"] = f.convert
        env[f"_fb{n}"] = json_text(f.fallback)
        env[f"_un{n}"] = json_text(f.unavailable)
        kind = _kind(f.convert, f.schema, f.transformed)
        if kind == "int":
            present = f"v{n}"
        elif kind == "text":
            present = f"_esc(v{n})"
        elif kind == "number":
            present = f"_num(_c{n}(v{n}))"
        elif kind == "quoted":
            present = f"_q(_c{n}(v{n}))"
        else:
            present = f"_j(_c{n}(v{n}))"
        missing = f"(_fb{n} if v{n} is None else _toast{n}(old))"
        env[f"_toast{n}"] = _toast(f, present, kind)
        head = ("{" if n == 0 else ",") + encode_basestring(f.name) + ":"
        parts.append(f"{head!r} + ({present} if v{n}.__class__ is str else {missing})")
    if not parts:
        return _empty
    unpack = "".join(f"    v{n} = values[{f.index}]\n" for n, f in enumerate(fields))
    body = " + ".join(parts) + " + '}'"
    source = f"def render(values, old=None):\n{unpack}    return {body}\n"
    exec(compile(source, "<row renderer>", "exec"), env)  # generated from field positions only
    return env["render"]  # type: ignore[no-any-return]


def _empty(values: Sequence[Any], old: Sequence[Any] | None = None) -> str:
    return "{}"


def _toast(field: Any, present: str, kind: str) -> Callable[[Sequence[Any] | None], str]:
    """Unchanged TOAST: the old tuple's value (REPLICA IDENTITY FULL) or the placeholder."""
    index, convert, unavailable = field.index, field.convert, json_text(field.unavailable)

    def render(old: Sequence[Any] | None) -> str:
        prior = old[index] if old is not None else None
        if not isinstance(prior, str):
            return unavailable
        if kind == "int":
            return prior
        if kind == "text":
            return encode_basestring(prior)
        return json_text(convert(prior))  # the slow path is fine: TOAST copies are rare

    return render


def compile_key_renderer(fields: Sequence[Any]) -> KeyRenderer | None:
    """A function ``values -> key JSON text``, or None for a keyless table."""
    if not fields:
        return None
    row = compile_row_renderer(fields)
    return lambda values: row(values, None)
