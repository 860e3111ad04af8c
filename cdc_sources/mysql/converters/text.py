"""Character types, ENUM, SET and JSON: ``string`` fields.

* CHAR, VARCHAR and the TEXT types: the text. Both libraries already decode it; binlog values
  of character sets Python cannot decode arrive as bytes and are decoded as Debezium does.
* ENUM: ``io.debezium.data.Enum`` with an ``allowed`` parameter (the members, commas inside a
  member escaped as ``\\,``). The binlog gives the member; Debezium looks it up in the escaped
  list, so a member with a comma comes out escaped when streamed and verbatim when
  snapshotted. An invalid value (index 0) is ``""``.
* SET: ``io.debezium.data.EnumSet``; the members, comma-joined in definition order. The
  binlog library delivers a Python set (and None for the empty set: see `binlog_rows`).
* JSON: ``io.debezium.data.Json``. MariaDB's JSON is text and passes through; MySQL's binary
  JSON arrives decoded and is re-rendered (see `json_binary`).
"""

from __future__ import annotations

from typing import Any

from cdc_sources.common import kschema as ks
from cdc_sources.mysql.converters.charsets import binlog_library_decodes, python_codec
from cdc_sources.mysql.converters.json_binary import render_binary_json
from cdc_sources.mysql.converters.model import ColumnFacts, Convert, TypeMapping, fixed


def identity(value: Any) -> Any:
    """The value unchanged."""
    return value


def _decoding(codec: str) -> Convert:
    def convert(value: str | bytes) -> str:
        return value if isinstance(value, str) else value.decode(codec, "replace")
    return convert


def _literal(literal: Any) -> Any:
    return str(literal)


def string_mapping(facts: ColumnFacts) -> TypeMapping:
    """CHAR, VARCHAR, TEXT... (JDBC character types)."""
    charset = facts.column.charset
    if facts.origin == "snapshot" or binlog_library_decodes(charset):
        return TypeMapping(ks.primitive("string"), fixed(identity), "", _literal, identity=True)
    return TypeMapping(ks.primitive("string"), fixed(_decoding(python_codec(charset))), "", _literal)


def escaped_members(facts: ColumnFacts) -> list[str]:
    """Debezium's ENUM/SET options: the members with ``,`` escaped as ``\\,``."""
    return [member.replace(",", "\\,") for member in facts.column.enum_values]


def enum_mapping(facts: ColumnFacts) -> TypeMapping:
    """ENUM."""
    members = escaped_members(facts)
    schema = ks.logical("string", "io.debezium.data.Enum", params={"allowed": ",".join(members)})
    renamed = {raw: out for raw, out in zip(facts.column.enum_values, members, strict=True) if raw != out}
    if facts.origin == "snapshot" or not renamed:
        return TypeMapping(schema, fixed(identity), "", _literal, identity=True)

    def convert(value: str) -> str:
        return renamed.get(value, value)
    return TypeMapping(schema, fixed(convert), "", _literal)


def set_mapping(facts: ColumnFacts) -> TypeMapping:
    """SET."""
    members = list(facts.column.enum_values)
    schema = ks.logical("string", "io.debezium.data.EnumSet", params={"allowed": ",".join(escaped_members(facts))})
    if facts.origin == "snapshot":
        return TypeMapping(schema, fixed(identity), "", _literal, identity=True)

    def convert(value: set[str] | frozenset[str] | str) -> str:
        if type(value) is str:
            return value
        return ",".join([m for m in members if m in value])
    return TypeMapping(schema, fixed(convert), "", _literal)


def _json(value: Any) -> str:
    return value if type(value) is str else render_binary_json(value)


JSON_SCHEMA = ks.logical("string", "io.debezium.data.Json")


def json_mapping(facts: ColumnFacts) -> TypeMapping:
    """JSON: the document's text."""
    if facts.origin == "snapshot":
        return TypeMapping(JSON_SCHEMA, fixed(identity), "{}", _literal, identity=True)
    return TypeMapping(JSON_SCHEMA, fixed(_json), "{}", _literal)
