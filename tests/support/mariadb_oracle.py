"""An independent oracle for MariaDB captures: the binlog read directly with python-mysql-replication.

From a binlog position (the completed snapshot's, found in bronze's offsets), every row event
of the captured tables is read with a ``BinLogStreamReader`` of its own (GTID-positioned via
``BINLOG_GTID_POS``, up to the server's position when called) and turned into the Debezium events it must produce, in
commit order: ``c``, ``u``, ``d`` + tombstone, and ``d`` + tombstone + ``c`` for a primary key
change. Nothing of the connector under test is used. Only committed transactions are in a
MariaDB binlog, so every event read must be in bronze exactly once.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import orjson
import pymysql

Event = tuple[str, int, int, str | None, Any]
"""One change event as ``(binlog file, event position, row index in the event, op, key value)``;
op None is a tombstone."""

ORACLE_SERVER_ID = 987_654
"""The replica server id the oracle's binlog reader uses (differs from every capture's)."""


def gtid_position(args: dict[str, Any], file: str, pos: int) -> str:
    """``BINLOG_GTID_POS(file, pos)``: the GTID state to start reading at ``file:pos``."""
    conn = pymysql.connect(**{k: v for k, v in args.items() if k != "database"})
    try:
        with conn.cursor() as cur:
            cur.execute("SELECT BINLOG_GTID_POS(%s, %s)", (file, pos))
            row = cur.fetchone()
    finally:
        conn.close()
    if row is None or row[0] is None:
        raise AssertionError(f"MariaDB has no GTID position for {file}:{pos}")
    return str(row[0])


def binlog_events(args: dict[str, Any], *, tables: Iterable[str], file: str, pos: int,
                  key: str = "id") -> dict[str, list[Event]]:
    """The events every captured table must have received after ``file:pos``, per table.

    Reads up to the server's binlog position at the time of the call. The reader is blocking
    (stopped by this function at that position; heartbeats wake it when nothing follows): a
    non-blocking MariaDB dump is cut off with a connection reset when the client reads slower
    than the server sends, and python-mysql-replication then silently starts over.

    Args:
        args: ``pymysql.connect`` keyword arguments with ``database`` (the captured database).
        tables: the captured tables of that database.
        file / pos: where streaming started (the snapshot position).
        key: the primary key column (a single column in these tests).
    """
    from pymysqlreplication import BinLogStreamReader
    from pymysqlreplication.event import HeartbeatLogEvent
    from pymysqlreplication.row_event import DeleteRowsEvent, UpdateRowsEvent, WriteRowsEvent

    database, wanted = str(args["database"]), set(tables)
    end = _server_position(args)
    settings = {"host": args["host"], "port": args["port"], "user": args["user"],
                "password": args.get("password", "")}
    out: dict[str, list[Event]] = {t: [] for t in wanted}
    stream = BinLogStreamReader(
        connection_settings=settings, server_id=ORACLE_SERVER_ID, is_mariadb=True, blocking=True,
        slave_heartbeat=0.2, auto_position=gtid_position(args, file, pos), enable_logging=False,
        only_events=[WriteRowsEvent, UpdateRowsEvent, DeleteRowsEvent, HeartbeatLogEvent])
    try:
        for event in stream:
            if not isinstance(event, HeartbeatLogEvent) and event.schema == database and event.table in wanted:
                at = (str(stream.log_file), int(event.packet.log_pos) - int(event.packet.event_size))
                for row_index, row in enumerate(event.rows):
                    out[event.table].extend(_debezium_events(event, at, row_index, row, key))
            if (_file_number(str(stream.log_file)), int(stream.log_pos or 0)) >= end:
                break
    finally:
        stream.close()
    return out


def _file_number(name: str) -> int:
    return int(name.rsplit(".", 1)[-1])


def _server_position(args: dict[str, Any]) -> tuple[int, int]:
    """``SHOW MASTER STATUS`` as (binlog file number, position)."""
    conn = pymysql.connect(**{k: v for k, v in args.items() if k != "database"})
    try:
        with conn.cursor() as cur:
            cur.execute("SHOW MASTER STATUS")
            row = cur.fetchone()
    finally:
        conn.close()
    assert row is not None, "the server reports no binlog position"
    return _file_number(str(row[0])), int(row[1])


def _debezium_events(event: Any, at: tuple[str, int], row_index: int, row: dict[str, Any],
                     key: str) -> list[Event]:
    from pymysqlreplication.row_event import DeleteRowsEvent, WriteRowsEvent

    file, pos = at
    if isinstance(event, WriteRowsEvent):
        return [(file, pos, row_index, "c", row["values"][key])]
    if isinstance(event, DeleteRowsEvent):
        old = row["values"][key]
        return [(file, pos, row_index, "d", old), (file, pos, row_index, None, old)]
    old, new = row["before_values"][key], row["after_values"][key]
    if old == new:
        return [(file, pos, row_index, "u", new)]
    return [(file, pos, row_index, "d", old), (file, pos, row_index, None, old), (file, pos, row_index, "c", new)]


def bronze_events(rows: Iterable[dict[str, Any]], key: str = "id") -> list[Event]:
    """The streamed events of a bronze table (in ``seq`` order) in the oracle's form.

    A tombstone has no ``source`` block: it takes the binlog coordinates of the record just
    before it (its delete); a tombstone that does not follow a delete of its key gets
    ``("?", -1, -1)`` so the comparison shows it.
    """
    out: list[Event] = []
    for r in rows:
        if r["op"] == "r":
            continue
        value = orjson.loads(r["key"])[key] if r["key"] is not None else None
        if r["value"] is None:
            prev = out[-1] if out else None
            if prev is not None and prev[3] == "d" and prev[4] == value:
                out.append((prev[0], prev[1], prev[2], None, value))
            else:
                out.append(("?", -1, -1, None, value))
            continue
        source = orjson.loads(r["value"])["source"]
        out.append((str(source["file"]), int(source["pos"]), int(source["row"]), r["op"], value))
    return out
