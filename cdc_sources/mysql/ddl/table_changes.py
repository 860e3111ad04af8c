"""``tableChanges``: how a table change is written in schema history records and in schema change
events, and read back.

Two forms, as Debezium 3.6.3 writes them:

* `history_table_change`: the JSON of ``JsonTableChangeSerializer`` (schema history records).
  Key order ``type, id, [previousId], [table, comment]``; a table is ``defaultCharsetName,
  primaryKeyColumnNames, columns, attributes``; a column is ``name, jdbcType, [nativeType],
  typeName, typeExpression, charsetName, [length], [scale], position, optional, autoIncremented,
  generated, comment, hasDefaultValue, [defaultValueExpression], enumValues``. Bracketed keys are
  left out when unset (``nativeType`` -1, no length/scale/default expression, no rename); the
  others are written even when null. The table comment sits beside ``table``, not in it. A DROP
  has no ``table``.
* `schema_change_table_change`: the ``io.debezium.connector.schema.Change`` Connect struct of
  schema change events (``ConnectTableChangeSerializer``) as the JSON converter writes its value:
  every field of `CONNECT_SCHEMA` in schema order, null when unset; no ``previousId``,
  ``hasDefaultValue`` or ``attributes``; ``enumValues`` null when empty; ``table`` null for DROP.

`table_change_from_history` reads the history form back (for replaying a history from its
``tableChanges`` instead of its DDL). Unlike Debezium's deserializer it keeps the table comment
(Debezium looks for it inside ``table``, where its own serializer never puts it).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from cdc_sources.mysql.ddl.outcome import ChangeType, TableChange
from cdc_sources.mysql.ddl.table_editor import TableEditor
from cdc_sources.mysql.ddl.types import enum_literal, enum_member
from cdc_sources.mysql.model import ColumnDef, TableDef, TableId

__all__ = [
    "CONNECT_SCHEMA",
    "format_table_id",
    "history_table_change",
    "parse_table_id",
    "schema_change_table_change",
    "table_change_from_history",
]


# -- ids -----------------------------------------------------------------------------------------


def _quote(part: str) -> str:
    """Debezium's ``TableId.quote(part, '"', '"')``: doubles inner quotes and wraps, unless the
    part already starts or ends with a quote."""
    if not part:
        return '""'
    if part[0] != '"' and part[-1] != '"':
        return '"' + part.replace('"', '""') + '"'
    return part


def format_table_id(table_id: TableId) -> str:
    """``"db"."table"`` (Debezium's ``TableId.toDoubleQuotedString``)."""
    prefix = f"{_quote(table_id.database)}." if table_id.database else ""
    return prefix + _quote(table_id.table)


def parse_table_id(text: str) -> TableId:
    """The inverse of `format_table_id` (``"db"."t"``, also unquoted ``db.t``).

    Raises:
        ValueError: the text is not ``database.table``.
    """
    parts: list[str] = []
    current: list[str] = []
    quoted = False
    i = 0
    while i < len(text):
        c = text[i]
        if c == '"':
            if quoted and i + 1 < len(text) and text[i + 1] == '"':
                current.append('"')
                i += 2
                continue
            quoted = not quoted
        elif c == "." and not quoted:
            parts.append("".join(current))
            current = []
        else:
            current.append(c)
        i += 1
    parts.append("".join(current))
    if len(parts) != 2 or not parts[1]:
        raise ValueError(f"not a MySQL table id (\"database\".\"table\"): {text!r}")
    return TableId(parts[0], parts[1])


# -- history form ---------------------------------------------------------------------------------


def history_table_change(change: TableChange) -> dict[str, Any]:
    """The ``tableChanges`` entry of a schema history record (see the module docstring)."""
    out: dict[str, Any] = {"type": change.type.value, "id": format_table_id(change.table_id)}
    if change.previous_id is not None:
        out["previousId"] = format_table_id(change.previous_id)
    if change.table is not None:
        out["table"] = _history_table(change.table)
        out["comment"] = change.table.comment
    return out


def _history_table(table: TableDef) -> dict[str, Any]:
    return {
        "defaultCharsetName": table.default_charset,
        "primaryKeyColumnNames": list(table.primary_key),
        "columns": [_history_column(c) for c in table.columns],
        "attributes": [{"name": n, "value": v} for n, v in table.attributes],
    }


def _history_column(column: ColumnDef) -> dict[str, Any]:
    out: dict[str, Any] = {"name": column.name, "jdbcType": column.jdbc_type}
    if column.native_type != -1:
        out["nativeType"] = column.native_type
    out["typeName"] = column.type_name
    out["typeExpression"] = column.type_expression
    out["charsetName"] = column.charset
    if column.length is not None:
        out["length"] = column.length
    if column.scale is not None:
        out["scale"] = column.scale
    out["position"] = column.position
    out["optional"] = column.optional
    out["autoIncremented"] = column.auto_incremented
    out["generated"] = column.generated
    out["comment"] = column.comment
    out["hasDefaultValue"] = column.has_default
    if column.default_expression is not None:
        out["defaultValueExpression"] = column.default_expression
    out["enumValues"] = list(_enum_literals(column))
    return out


def _enum_literals(column: ColumnDef) -> tuple[str, ...]:
    return column.enum_literals or tuple(enum_literal(m) for m in column.enum_values)


def table_change_from_history(entry: Mapping[str, Any]) -> TableChange:
    """Read back a `history_table_change` entry (or one Debezium wrote).

    Raises:
        ValueError: the entry is malformed (unknown type, bad id, a primary key column missing).
    """
    try:
        change_type = ChangeType(str(entry["type"]))
        table_id = parse_table_id(str(entry["id"]))
    except (KeyError, ValueError) as exc:
        raise ValueError(f"not a tableChanges entry: {exc}") from exc
    previous = entry.get("previousId")
    previous_id = parse_table_id(str(previous)) if previous is not None else None
    document = entry.get("table")
    if change_type is ChangeType.DROP or document is None:
        return TableChange(change_type, table_id, None, previous_id)
    comment = document.get("comment", entry.get("comment"))
    return TableChange(change_type, table_id, _table_from_history(table_id, document, comment), previous_id)


def _table_from_history(table_id: TableId, document: Mapping[str, Any], comment: str | None) -> TableDef:
    editor = TableEditor(table_id, default_charset=document.get("defaultCharsetName"))
    editor.comment = comment
    for position, column in enumerate(document.get("columns") or [], start=1):
        editor.add(_column_from_history(column, position))
    editor.attributes = tuple((str(a["name"]), str(a["value"])) for a in document.get("attributes") or [])
    editor.primary_key = [str(n) for n in document.get("primaryKeyColumnNames") or []]
    missing = editor.missing_key_columns()
    if missing:
        raise ValueError(f"the primary key of {table_id} names columns the table does not have: {missing}")
    return editor.build()


def _column_from_history(document: Mapping[str, Any], position: int) -> ColumnDef:
    expression = document.get("defaultValueExpression")
    literals = tuple(str(m) for m in document.get("enumValues") or ())
    type_name = str(document["typeName"])
    native = document.get("nativeType")
    return ColumnDef(
        name=str(document["name"]), position=position, type_name=type_name,
        type_expression=str(document.get("typeExpression") or type_name), jdbc_type=int(document["jdbcType"]),
        length=document.get("length"), scale=document.get("scale"), optional=bool(document.get("optional")),
        auto_incremented=bool(document.get("autoIncremented")), generated=bool(document.get("generated")),
        charset=document.get("charsetName"), enum_values=tuple(enum_member(str(m)) for m in literals),
        enum_literals=literals,
        default_expression=expression, has_default=expression is not None or bool(document.get("hasDefaultValue")),
        comment=document.get("comment"), native_type=-1 if native is None else int(native))


# -- Connect form --------------------------------------------------------------------------------


def _field(name: str, kind: str, *, optional: bool) -> dict[str, Any]:
    return {"type": kind, "optional": optional, "field": name}


def _string_array(name: str) -> dict[str, Any]:
    return {"type": "array", "items": {"type": "string", "optional": False}, "optional": True, "field": name}


_COLUMN_SCHEMA: Final[dict[str, Any]] = {
    "type": "struct",
    "fields": [
        _field("name", "string", optional=False), _field("jdbcType", "int32", optional=False),
        _field("nativeType", "int32", optional=True), _field("typeName", "string", optional=False),
        _field("typeExpression", "string", optional=True), _field("charsetName", "string", optional=True),
        _field("length", "int32", optional=True), _field("scale", "int32", optional=True),
        _field("position", "int32", optional=False), _field("optional", "boolean", optional=True),
        _field("autoIncremented", "boolean", optional=True), _field("generated", "boolean", optional=True),
        _field("comment", "string", optional=True), _field("defaultValueExpression", "string", optional=True),
        _string_array("enumValues"),
    ],
    "optional": False, "name": "io.debezium.connector.schema.Column", "version": 1,
}
CONNECT_SCHEMA: Final[dict[str, Any]] = {
    "type": "struct",
    "fields": [
        _field("type", "string", optional=False),
        _field("id", "string", optional=False),
        {
            "type": "struct",
            "fields": [
                _field("defaultCharsetName", "string", optional=True),
                _string_array("primaryKeyColumnNames"),
                {"type": "array", "items": _COLUMN_SCHEMA, "optional": False, "field": "columns"},
                _field("comment", "string", optional=True),
            ],
            "optional": True, "name": "io.debezium.connector.schema.Table", "version": 1, "field": "table",
        },
    ],
    "optional": False, "name": "io.debezium.connector.schema.Change", "version": 1,
}
"""The Connect schema of one ``tableChanges`` entry of a schema change event (JSON converter form)."""


def schema_change_table_change(change: TableChange) -> dict[str, Any]:
    """The ``tableChanges`` entry of a schema change event (see the module docstring)."""
    table = change.table
    return {
        "type": change.type.value,
        "id": format_table_id(change.table_id),
        "table": None if table is None else {
            "defaultCharsetName": table.default_charset,
            "primaryKeyColumnNames": list(table.primary_key),
            "columns": [_connect_column(c) for c in table.columns],
            "comment": table.comment,
        },
    }


def _connect_column(column: ColumnDef) -> dict[str, Any]:
    return {
        "name": column.name,
        "jdbcType": column.jdbc_type,
        "nativeType": None if column.native_type == -1 else column.native_type,
        "typeName": column.type_name,
        "typeExpression": column.type_expression,
        "charsetName": column.charset,
        "length": column.length,
        "scale": column.scale,
        "position": column.position,
        "optional": column.optional,
        "autoIncremented": column.auto_incremented,
        "generated": column.generated,
        "comment": column.comment,
        "defaultValueExpression": column.default_expression,
        "enumValues": list(_enum_literals(column)) or None,
    }
