"""Kafka Connect schemas as JsonConverter writes them (``schemas.enable=true``).

A *core* schema is a dict holding ``type`` plus whatever the type needs (``fields``, ``items``,
``keys``/``values``, ``name``, ``version``, ``doc``, ``parameters``) but no ``optional``; `complete`
adds the column-level keys. Key order matters because schemas are compared as text: JsonConverter
writes ``type``, the nested schemas, ``optional``, ``name``, ``version``, ``doc``, ``parameters``,
``default`` and finally ``field``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

Schema = dict[str, Any]

DECIMAL: Final = "org.apache.kafka.connect.data.Decimal"
CONNECT_DATE: Final = "org.apache.kafka.connect.data.Date"
CONNECT_TIME: Final = "org.apache.kafka.connect.data.Time"
CONNECT_TIMESTAMP: Final = "org.apache.kafka.connect.data.Timestamp"
PRECISION_PARAM: Final = "connect.decimal.precision"

_HEAD = ("type", "fields", "items", "keys", "values")
_TAIL = ("name", "version", "doc")


class _NoDefault:
    def __repr__(self) -> str:
        return "NO_DEFAULT"


NO_DEFAULT: Final = _NoDefault()
"""Marks "the schema has no default" (None is a legitimate JSON value)."""


def primitive(kind: str) -> Schema:
    """A plain schema: ``int32``, ``string``, ``bytes``, ``double``..."""
    return {"type": kind}


def logical(kind: str, name: str, *, doc: str | None = None, params: dict[str, str] | None = None,
            version: int | None = 1) -> Schema:
    """A named schema such as ``io.debezium.time.MicroTimestamp`` (version 1 unless told)."""
    out: Schema = {"type": kind, "name": name}
    if version is not None:
        out["version"] = version
    if doc is not None:
        out["doc"] = doc
    if params:
        out["parameters"] = dict(params)
    return out


def struct(name: str, fields: list[tuple[str, Schema, bool]], *, doc: str | None = None) -> Schema:
    """A named struct; ``fields`` are (field name, core schema, optional) in order."""
    out: Schema = {"type": "struct",
                   "fields": [complete(s, optional=o, field=f) for f, s, o in fields],
                   "name": name, "version": 1}
    if doc is not None:
        out["doc"] = doc
    return out


def array(items: Schema, *, items_optional: bool) -> Schema:
    """An array of ``items``."""
    return {"type": "array", "items": complete(items, optional=items_optional)}


def map_of(keys: Schema, values: Schema, *, values_optional: bool) -> Schema:
    """A map; keys are never optional."""
    return {"type": "map", "keys": complete(keys, optional=False),
            "values": complete(values, optional=values_optional)}


def complete(core: Schema, *, optional: bool, default: Any = NO_DEFAULT, field: str | None = None,
             params: dict[str, str] | None = None) -> Schema:
    """The schema with ``optional``, extra ``parameters``, ``default`` and ``field`` in place."""
    out: Schema = {k: core[k] for k in _HEAD if k in core}
    out["optional"] = optional
    out.update((k, core[k]) for k in _TAIL if k in core)
    parameters = dict(core.get("parameters") or {})
    if params:
        parameters.update(params)
    if parameters:
        out["parameters"] = parameters
    if default is not NO_DEFAULT:
        out["default"] = default
    if field is not None:
        out["field"] = field
    return out


def with_parameters(schema: dict[str, Any], params: Mapping[str, str]) -> dict[str, Any]:
    """A field schema with extra parameters (masks, source-type propagation), keeping
    JsonConverter's key order (``field`` last)."""
    if not params:
        return schema
    out = {k: v for k, v in schema.items() if k != "field"}
    out["parameters"] = {**schema.get("parameters", {}), **params}
    out["field"] = schema["field"]
    return out
