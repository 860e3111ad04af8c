"""Schema history records and schema change events of the Oracle connector, and the table model
rebuilt from the history on restart.

Each captured table's structure is recorded in the connector's private history (`HISTORY_TOPIC`,
stored by the bronze writer under ``_cdc/<source>/history``) in Debezium's ``HistoryRecord``
layout (``source``, ``position``, ``ts_ms``, ``databaseName``, ``schemaName``, ``ddl``,
``tableChanges``):

- when capture starts without an offset (snapshot or ``no_data``): one ``CREATE`` record per
  captured table, its ``ddl`` a ``CREATE TABLE`` written from the dictionary's columns;
- for each DDL statement on a captured table: the statement and the table after it (``ALTER``,
  ``CREATE``, or ``DROP`` without a table).

With ``include.schema.changes`` (default true) each record is also published as a schema change
event on the topic ``<topic.prefix>`` with key ``{"databaseName"}``.

On restart `restore_tables` rebuilds the tables from the history: the last record of each table
whose DDL transaction the stored offset has handled (later ones are mined again), so rows mined
again before a DDL decode with the columns they were written with, not the dictionary's current
ones.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import orjson

from cdc_sources.common.envelope import dumps
from cdc_sources.oracle.converters import OracleColumn, OracleType
from cdc_sources.oracle.envelope import OracleTable
from cdc_sources.oracle.offset import OracleOffset
from cdc_sources.oracle.source import OracleEvent, OracleSourceInfo
from cdc_sources.spi import HISTORY_TOPIC, ChangeRecord, HistoryEntry

__all__ = ["SchemaChangeRecords", "create_table_ddl", "restore_tables", "table_change", "table_of_change"]

_JDBC = {
    OracleType.NUMBER: 2, OracleType.FLOAT: 6, OracleType.BINARY_FLOAT: 100, OracleType.BINARY_DOUBLE: 101,
    OracleType.CHAR: 1, OracleType.NCHAR: -15, OracleType.VARCHAR2: 12, OracleType.NVARCHAR2: -9,
    OracleType.CLOB: 2005, OracleType.NCLOB: 2011, OracleType.ROWID: -8, OracleType.RAW: -3, OracleType.BLOB: 2004,
    OracleType.DATE: 93, OracleType.TIMESTAMP: 93, OracleType.TIMESTAMP_TZ: -101, OracleType.TIMESTAMP_LTZ: -102,
    OracleType.INTERVAL_YM: -103, OracleType.INTERVAL_DS: -104,
}
"""``java.sql.Types`` / Oracle JDBC type codes Debezium's Oracle table model gives each family."""


def _table_id(db: str, owner: str, name: str) -> str:
    return ".".join('"' + p.replace('"', '""') + '"' for p in (db, owner, name))


def _column(c: OracleColumn, position: int) -> dict[str, Any]:
    return {"name": c.name, "jdbcType": _JDBC[c.type], "typeName": c.type.value, "typeExpression": c.type.value,
            "charsetName": None, "length": c.length, "scale": c.scale, "position": position,
            "optional": c.optional, "autoIncremented": False, "generated": False, "comment": None,
            "hasDefaultValue": False, "enumValues": []}


def table_change(kind: str, db: str, owner: str, name: str, table: OracleTable | None) -> dict[str, Any]:
    """One ``tableChanges`` entry (history form): ``type``, ``id``, and the table unless dropped."""
    out: dict[str, Any] = {"type": kind, "id": _table_id(db, owner, name)}
    if table is not None:
        out["table"] = {"defaultCharsetName": None, "primaryKeyColumnNames": list(table.key),
                        "columns": [_column(c, i) for i, c in enumerate(table.columns, start=1)], "attributes": []}
        out["comment"] = None
    return out


def _connect_change(change: dict[str, Any]) -> dict[str, Any]:
    """The schema change event's form of a history entry (every field, no ``attributes``)."""
    table = change.get("table")
    return {"type": change["type"], "id": change["id"], "table": None if table is None else {
        "defaultCharsetName": None, "primaryKeyColumnNames": table["primaryKeyColumnNames"],
        "columns": [{**{k: v for k, v in c.items() if k != "hasDefaultValue"}, "nativeType": None,
                     "defaultValueExpression": None, "enumValues": None} for c in table["columns"]],
        "comment": None}}


def table_of_change(owner: str, name: str, change: Mapping[str, Any]) -> OracleTable:
    """The table a history entry's ``tableChanges`` item describes (the inverse of `table_change`)."""
    table = change["table"]
    columns = tuple(OracleColumn(str(c["name"]), OracleType(c["typeName"]), int(c["length"] or 0),
                                 None if c["scale"] is None else int(c["scale"]), bool(c["optional"]))
                    for c in table["columns"])
    return OracleTable(owner, name, columns, tuple(table["primaryKeyColumnNames"]))


def _type_text(c: OracleColumn) -> str:
    t = c.type
    if t is OracleType.NUMBER:
        if c.scale is None:
            return "NUMBER"
        return f"NUMBER({c.length},{c.scale})" if c.length else f"NUMBER(*,{c.scale})"
    if t is OracleType.FLOAT:
        return f"FLOAT({c.length})"
    if t in (OracleType.TIMESTAMP, OracleType.TIMESTAMP_TZ, OracleType.TIMESTAMP_LTZ):
        return f"TIMESTAMP({c.length}){t.value[len('TIMESTAMP'):]}"
    if t is OracleType.INTERVAL_DS:
        return f"INTERVAL DAY TO SECOND({c.scale if c.scale is not None else 6})"
    if t in (OracleType.CHAR, OracleType.NCHAR, OracleType.VARCHAR2, OracleType.NVARCHAR2, OracleType.RAW):
        return f"{t.value}({c.length})"
    return str(t.value)


def create_table_ddl(table: OracleTable) -> str:
    """A ``CREATE TABLE`` statement for the table's columns and primary key."""

    def q(name: str) -> str:
        return '"' + name.replace('"', '""') + '"'

    parts = [f"{q(c.name)} {_type_text(c)}{'' if c.optional else ' NOT NULL'}" for c in table.columns]
    if table.key:
        parts.append(f"PRIMARY KEY ({', '.join(q(k) for k in table.key)})")
    return f"CREATE TABLE {q(table.schema)}.{q(table.name)} ({', '.join(parts)})"


@dataclass(frozen=True)
class SchemaChangeRecords:
    """Makes the history records and schema change events of one connector run.

    Attributes:
        source: the run's fixed ``source`` fields (``name`` is ``topic.prefix``, the schema change topic).
        include_schema_changes: ``include.schema.changes``.
    """

    source: OracleSourceInfo
    include_schema_changes: bool = True

    def records(self, ddl: str, kind: str, owner: str, name: str, table: OracleTable | None, *,
                position: Mapping[str, Any], order_key: tuple[int, ...], event: OracleEvent) -> list[ChangeRecord]:
        """The history record and (``include.schema.changes``) schema change event of one change."""
        db = self.source.db
        change = table_change(kind, db, owner, name, table)
        now = time.time_ns() // 1_000_000
        key = dumps({"databaseName": db})
        history = {"source": {"server": self.source.name}, "position": dict(position), "ts_ms": now,
                   "databaseName": db, "schemaName": owner, "ddl": ddl, "tableChanges": [change]}
        text = dumps(position)
        out = [ChangeRecord(HISTORY_TOPIC, key, dumps(history), None, text, order_key)]
        if self.include_schema_changes:
            value = {"source": self.source.block(event), "ts_ms": now, "databaseName": db, "schemaName": owner,
                     "ddl": ddl, "tableChanges": [_connect_change(change)]}
            out.append(ChangeRecord(self.source.name, key, dumps(value), None, text, order_key))
        return out


def _handled_by(position: Mapping[str, Any], offset: OracleOffset) -> bool:
    """Whether the DDL transaction of a history record's position was handled by ``offset``."""
    if position.get("snapshot") is not None:
        return True  # recorded at the start: always in force
    xid = str(position.get("txId") or "")
    for entry in OracleOffset.from_dict(position).commit_scn:
        if xid in entry.xids:
            return offset.handled(entry.thread, entry.scn, xid)
    return False


def restore_tables(history: Iterable[HistoryEntry], offset: OracleOffset) -> dict[tuple[str, str], OracleTable | None]:
    """Each recorded table as of ``offset`` (None: dropped), from the history in write order."""
    out: dict[tuple[str, str], OracleTable | None] = {}
    for entry in history:
        record: dict[str, Any] = orjson.loads(entry.value)
        if not _handled_by(record.get("position") or {}, offset):
            continue
        owner = str(record.get("schemaName") or "")
        for change in record.get("tableChanges") or ():
            name = _name_of(str(change["id"]))
            out[(owner, name)] = table_of_change(owner, name, change) if change.get("table") else None
    return out


def _name_of(table_id: str) -> str:
    """The table part of ``"db"."owner"."table"``."""
    parts: list[str] = []
    current: list[str] = []
    quoted = False
    i = 0
    while i < len(table_id):
        ch = table_id[i]
        if ch == '"':
            if quoted and table_id[i + 1:i + 2] == '"':
                current.append('"')
                i += 2
                continue
            quoted = not quoted
        elif ch == "." and not quoted:
            parts.append("".join(current))
            current = []
        else:
            current.append(ch)
        i += 1
    parts.append("".join(current))
    return parts[-1]
