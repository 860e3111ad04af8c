"""Kafka Connect schemas as Debezium's JSON converter writes them (``schemas.enable=true``).

The schema history stores the key and value (envelope) schemas of every topic version as JSON
text; this module turns that text into immutable `ConnectSchema` trees the type codecs read.

Example:
    >>> s = parse_connect_schema('{"type":"int64","optional":true,'
    ...                          '"name":"io.debezium.time.MicroTimestamp","version":1}')
    >>> (s.type, s.name, s.optional)
    ('int64', 'io.debezium.time.MicroTimestamp', True)
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

import orjson

from silver.errors import SchemaHistoryError

__all__ = ["ConnectField", "ConnectSchema", "envelope_row", "parse_connect_schema"]

_PRIMITIVES = {"int8", "int16", "int32", "int64", "float32", "float64", "boolean", "string", "bytes"}
# JsonConverter writes FLOAT32/FLOAT64 as "float"/"double" in its schema JSON
_ALIASES = {"float": "float32", "double": "float64"}


@dataclass(frozen=True)
class ConnectField:
    """One field of a struct schema."""

    name: str
    schema: ConnectSchema


@dataclass(frozen=True)
class ConnectSchema:
    """One Kafka Connect schema node.

    Attributes:
        type: ``int8 int16 int32 int64 float32 float64 boolean string bytes array map struct``.
        optional: whether the value may be null.
        name: the logical (semantic) type name, e.g. ``org.apache.kafka.connect.data.Decimal``.
        parameters: schema parameters, e.g. ``scale`` and ``connect.decimal.precision``.
        fields: struct fields, in order.
        items: the element schema of an array.
        keys: the key schema of a map.
        values: the value schema of a map.
    """

    type: str
    optional: bool = True
    name: str | None = None
    parameters: tuple[tuple[str, str], ...] = ()
    fields: tuple[ConnectField, ...] = ()
    items: ConnectSchema | None = None
    keys: ConnectSchema | None = None
    values: ConnectSchema | None = None

    def param(self, key: str) -> str | None:
        """A schema parameter, or None."""
        return dict(self.parameters).get(key)

    def field(self, name: str) -> ConnectField | None:
        """The struct field called ``name``, or None."""
        for f in self.fields:
            if f.name == name:
                return f
        return None


def parse_connect_schema(text: str | Mapping[str, Any]) -> ConnectSchema:
    """Parse a Kafka Connect JSON schema (text or already-decoded mapping).

    Raises:
        SchemaHistoryError: the text is not a Kafka Connect schema.
    """
    try:
        data = orjson.loads(text) if isinstance(text, str) else text
        return _node(data, "$")
    except (orjson.JSONDecodeError, TypeError, KeyError, ValueError) as exc:
        raise SchemaHistoryError(
            f"schema history holds a value that is not a Kafka Connect schema ({exc}); "
            "check the capture connector that wrote it", detail=str(exc)
        ) from exc


def _node(data: Any, where: str) -> ConnectSchema:
    if not isinstance(data, Mapping) or "type" not in data:
        raise ValueError(f"{where}: expected an object with 'type'")
    kind = str(data["type"]).lower()
    kind = _ALIASES.get(kind, kind)
    params = tuple(sorted((str(k), str(v)) for k, v in (data.get("parameters") or {}).items()))
    name = data.get("name")
    base = ConnectSchema(kind, bool(data.get("optional", True)), None if name is None else str(name), params)
    if kind == "struct":
        fields = tuple(ConnectField(str(f["field"]), _node(f, f"{where}.{f['field']}")) for f in data["fields"])
        return replace(base, fields=fields)
    if kind == "array":
        return replace(base, items=_node(data["items"], f"{where}[]"))
    if kind == "map":
        return replace(base, keys=_node(data["keys"], f"{where}.keys"),
                       values=_node(data["values"], f"{where}.values"))
    if kind not in _PRIMITIVES:
        raise ValueError(f"{where}: unknown type {kind!r}")
    return base


def envelope_row(envelope: ConnectSchema) -> ConnectSchema:
    """The row struct (``after``/``before``) of a Debezium envelope schema.

    Raises:
        SchemaHistoryError: the envelope has neither ``after`` nor ``before`` struct.
    """
    for name in ("after", "before"):
        f = envelope.field(name)
        if f is not None and f.schema.type == "struct":
            return f.schema
    raise SchemaHistoryError(
        f"envelope schema {envelope.name!r} has no 'after'/'before' struct; is it a table topic?",
        schema=envelope.name,
    )
