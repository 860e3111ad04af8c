"""The SQL Server connector's schema history: which tables it has described, kept in bronze.

Debezium keeps a schema history for SQL Server (the structure of every captured table, restored
at each start) and, while streaming, emits a ``CREATE`` schema change event for a capture
instance whose table is not in it yet ("Table ... is new to be monitored"). A table whose change
data capture was enabled while the connector was stopped is such a table at the next start.
Debezium emits no event when a table's capture is disabled: the table stays in the history, so
enabling it again later brings no ``CREATE`` either.

Here each schema change the connector makes (the snapshot's ``CREATE``, a ``CREATE`` for a
table new to the capture, the ``ALTER`` of a capture-instance switch) is also sent to the
connector's private history (`HISTORY_TOPIC`), whether or not ``include.schema.changes``
publishes it, in Debezium's ``HistoryRecord`` layout: ``source`` (``{"server"}``),
``position`` (the offset at which it applies), ``ts_ms``, ``databaseName``, ``schemaName``,
``ddl`` (null) and ``tableChanges``; a ``CREATE`` made at a start also carries the connector's
own ``startIndex`` (its place among the ``CREATE`` events of that start).

On restart `recorded_tables` reads the history back, as of the stored offset:

- a table recorded before the offset (or by the snapshot) is known: no event;
- a table recorded by a start at exactly the offset is *replayed*: its ``CREATE`` is made again
  with the same order key (the offset's, and its ``startIndex``), as the run that made it may
  have crashed after bronze committed the history and before it committed the event topic (or
  the other way round); bronze drops the copy a topic already holds;
- records after the offset (a run that crashed before its offset was stored) do not count: the
  events come again with the same order keys.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import orjson

from cdc_sources.common.envelope import dumps
from cdc_sources.spi import HISTORY_TOPIC, ChangeRecord, HistoryEntry
from cdc_sources.sqlserver.changes import TableId
from cdc_sources.sqlserver.offset import SqlServerOffset

__all__ = ["RecordedTables", "history_record", "parse_table_id", "recorded_tables"]

_PART = re.compile(r'"((?:[^"]|"")*)"')


@dataclass(frozen=True, slots=True)
class RecordedTables:
    """The tables of one database the history describes as of a stored offset.

    Attributes:
        tables: the tables known at the offset (see the module doc).
        replayed: the tables a start at exactly the offset recorded, with their ``startIndex``.
        recorded: whether the history holds any record of the database at all (False for a
            bronze written before the connector kept a history).
    """

    tables: frozenset[TableId]
    replayed: Mapping[TableId, int]
    recorded: bool

    def next_index(self) -> int:
        """The ``startIndex`` of the first table new at this start."""
        return max(self.replayed.values(), default=-1) + 1


def parse_table_id(text: str) -> tuple[str, str, str]:
    """The parts of Debezium's double-quoted table id ``"db"."schema"."table"``.

    Raises:
        ValueError: ``text`` is not three quoted parts.
    """
    parts = [m.group(1).replace('""', '"') for m in _PART.finditer(text)]
    if len(parts) != 3 or ".".join(f'"{p.replace(chr(34), chr(34) * 2)}"' for p in parts) != text:
        raise ValueError(f"not a quoted table id <database>.<schema>.<table>: {text!r}")
    return parts[0], parts[1], parts[2]


def history_record(server: str, change: Mapping[str, Any], position: str, order_key: tuple[int, ...],
                   start_index: int | None = None) -> ChangeRecord:
    """The history record of a schema change event's value ``change``, applying at ``position``
    (an offset's JSON text), with the event's order key (``start_index``: of a start's ``CREATE``)."""
    value: dict[str, Any] = {
        "source": {"server": server}, "position": orjson.loads(position), "ts_ms": change["ts_ms"],
        "databaseName": change["databaseName"], "schemaName": change["schemaName"], "ddl": change["ddl"],
        "tableChanges": change["tableChanges"]}
    if start_index is not None:
        value["startIndex"] = start_index
    return ChangeRecord(HISTORY_TOPIC, dumps({"databaseName": change["databaseName"]}), dumps(value), None,
                        position, order_key)


def _at_or_before(position: SqlServerOffset, offset: SqlServerOffset) -> bool:
    a = (position.commit_lsn, position.change_lsn)
    b = (offset.commit_lsn, offset.change_lsn)
    return a < b or (a == b and position.event_serial_no <= offset.event_serial_no)


def recorded_tables(history: Iterable[HistoryEntry], database: str, offset: SqlServerOffset | None) -> RecordedTables:
    """What the history of ``database`` records as of ``offset`` (None: no offset, nothing
    counts), in write order."""
    tables: set[TableId] = set()
    replayed: dict[TableId, int] = {}
    recorded = False
    for entry in history:
        record: dict[str, Any] = orjson.loads(entry.value)
        if record.get("databaseName") != database:
            continue
        recorded = True
        if offset is None:
            continue
        position = SqlServerOffset.load(orjson.loads(entry.position))
        if not _at_or_before(position, offset):
            continue
        index = record.get("startIndex")
        at_offset = position.snapshot is None and _same(position, offset) and isinstance(index, int)
        for change in record.get("tableChanges") or ():
            table = TableId(*parse_table_id(str(change["id"])))
            if at_offset and table not in tables:
                replayed[table] = int(index)  # type: ignore[arg-type]
            else:
                tables.add(table)
                replayed.pop(table, None)
    return RecordedTables(frozenset(tables), replayed, recorded)


def _same(position: SqlServerOffset, offset: SqlServerOffset) -> bool:
    return (position.commit_lsn, position.change_lsn, position.event_serial_no) == (
        offset.commit_lsn, offset.change_lsn, offset.event_serial_no)
