"""An independent oracle for MariaDB captures: the binlog as MariaDB's own ``mariadb-binlog`` prints it.

From a binlog position (the completed snapshot's, found in bronze's offsets) up to the server's
position when called, every row event of the captured tables is read by ``mariadb-binlog``
(the server's client tool, not the binlog library the connector uses) and turned into the
Debezium events it must produce, in commit order: ``c``, ``u``, ``d`` + tombstone, and ``d`` +
tombstone + ``c`` for a primary key change. Nothing of the connector under test is used. Only
committed transactions are in a MariaDB binlog, so every event read must be in bronze exactly once.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Iterable, Iterator
from typing import Any

import orjson
import pymysql
import pytest

Event = tuple[str, int, str | None, Any]
"""One change event as ``(GTID of its transaction, number of the row change within the
transaction and table, op, key value)``; op None is a tombstone. (``mariadb-binlog`` prints the
rows of a statement's rows events together, after all their headers, so a row's own event
position is not in its output; its transaction and order are.)"""


def binlog_events(args: dict[str, Any], *, tables: Iterable[str], file: str, pos: int,
                  key: str = "id") -> dict[str, list[Event]]:
    """The events every captured table must have received after ``file:pos``, per table.

    Reads the server's binlog up to its position at the time of the call with MariaDB's own
    ``mariadb-binlog`` (``--read-from-remote-server -v``), one run per binlog file, and parses
    its pseudo-SQL: every ``INSERT``/``UPDATE``/``DELETE`` row block of a captured table, the
    transaction's GTID and the row's place in it. Nothing of the connector
    under test, nor the binlog library it uses, is involved.

    Args:
        args: ``pymysql.connect`` keyword arguments with ``database`` (the captured database).
        tables: the captured tables of that database.
        file / pos: where streaming started (the snapshot position).
        key: the primary key column (a single integer column in these tests).
    """
    tool = shutil.which("mariadb-binlog")
    if tool is None:
        pytest.fail("the MariaDB oracle needs mariadb-binlog (MariaDB's client tools) on PATH", pytrace=False)
    database, wanted = str(args["database"]), set(tables)
    files, (end_file, end_pos) = _binlog_files(args), _server_position(args)
    positions = _key_positions(args, database, wanted, key)
    out: dict[str, list[Event]] = {t: [] for t in wanted}
    for name in files:
        number = _file_number(name)
        if number < _file_number(file) or number > end_file:
            continue
        command = [tool, "--read-from-remote-server", f"--host={args['host']}", f"--port={args['port']}",
                   f"--user={args['user']}", "-v", "--base64-output=DECODE-ROWS",
                   f"--start-position={pos if number == _file_number(file) else 4}"]
        if number == end_file:
            command.append(f"--stop-position={end_pos}")
        env = {**os.environ, "MYSQL_PWD": str(args.get("password") or "")}
        done = subprocess.run([*command, name], capture_output=True, text=True, errors="replace", timeout=300,
                              check=False, env=env)
        assert done.returncode == 0, f"mariadb-binlog {name}: {done.stderr[-2000:]}"
        for table, event in _parse(done.stdout, database, wanted, positions):
            out[table].append(event)
    return out


_GTID = re.compile(r"^#\d{6}\s.*\tGTID (\d+-\d+-\d+)")
_ROW = re.compile(r"### (INSERT INTO|UPDATE|DELETE FROM) `((?:[^`]|``)+)`\.`((?:[^`]|``)+)`$")
_VALUE = re.compile(r"###   @(\d+)=(.*)$")


def _parse(text: str, database: str, wanted: set[str], positions: dict[str, int]) -> Iterator[tuple[str, Event]]:
    """The Debezium events of the row blocks in ``mariadb-binlog -v`` output, in order."""
    gtid = "?"
    numbers: dict[tuple[str, str], int] = {}
    block: tuple[str, str] | None = None  # (kind, table) of the row block being read
    images: list[dict[int, str]] = []
    for line in [*text.splitlines(), "# end"]:
        if block is not None and not line.startswith("###   @") and line not in ("### WHERE", "### SET"):
            kind, table = block
            n = numbers.get((gtid, table), 0)
            numbers[(gtid, table)] = n + 1
            yield from ((table, e) for e in _events(kind, images, positions[table], gtid, n))
            block = None
        if (g := _GTID.match(line)) is not None:
            gtid = g[1]
            continue
        row = _ROW.match(line)
        if row is not None:
            if row[2].replace("``", "`") == database and row[3].replace("``", "`") in wanted:
                block, images = (row[1], row[3].replace("``", "`")), []
            continue
        if block is not None:
            if line in ("### WHERE", "### SET"):
                images.append({})
            elif (v := _VALUE.match(line)) is not None:
                images[-1][int(v[1])] = v[2]


def _events(kind: str, images: list[dict[int, str]], column: int, gtid: str, n: int) -> list[Event]:
    def key(image: dict[int, str]) -> int:
        return int(image[column].split(" ", 1)[0])

    if kind == "INSERT INTO":
        return [(gtid, n, "c", key(images[0]))]
    if kind == "DELETE FROM":
        old = key(images[0])
        return [(gtid, n, "d", old), (gtid, n, None, old)]
    old, new = key(images[0]), key(images[1])
    if old == new:
        return [(gtid, n, "u", new)]
    return [(gtid, n, "d", old), (gtid, n, None, old), (gtid, n, "c", new)]


def _key_positions(args: dict[str, Any], database: str, tables: set[str], key: str) -> dict[str, int]:
    """Each table's ``key`` column number (``@N`` in mariadb-binlog's output)."""
    conn = pymysql.connect(**{k: v for k, v in args.items() if k != "database"})
    try:
        with conn.cursor() as cur:
            cur.execute("SELECT TABLE_NAME, ORDINAL_POSITION FROM information_schema.COLUMNS "
                        "WHERE TABLE_SCHEMA = %s AND COLUMN_NAME = %s", (database, key))
            found = {str(t): int(n) for t, n in cur.fetchall()}
    finally:
        conn.close()
    missing = tables - set(found)
    assert not missing, f"tables without a {key} column: {sorted(missing)}"
    return {t: found[t] for t in tables}


def _binlog_files(args: dict[str, Any]) -> list[str]:
    conn = pymysql.connect(**{k: v for k, v in args.items() if k != "database"})
    try:
        with conn.cursor() as cur:
            cur.execute("SHOW BINARY LOGS")
            return [str(r[0]) for r in cur.fetchall()]
    finally:
        conn.close()


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


def bronze_events(rows: Iterable[dict[str, Any]], key: str = "id") -> list[Event]:
    """The streamed events of a bronze table (in ``seq`` order) in the oracle's form.

    A row change's number within its transaction is the rank of its binlog coordinates
    (``source.pos``, ``source.row``) among the transaction's, so a replayed record gets the same
    number as the original (a duplicate). A tombstone has no ``source`` block: it takes the
    coordinates of the record just before it (its delete); a tombstone that does not follow a
    delete of its key gets ``("?", -1)`` so the comparison shows it.
    """
    out: list[Event] = []
    ranks: dict[str, dict[tuple[int, int], int]] = {}
    for r in rows:
        if r["op"] == "r":
            continue
        value = orjson.loads(r["key"])[key] if r["key"] is not None else None
        if r["value"] is None:
            prev = out[-1] if out else None
            if prev is not None and prev[2] == "d" and prev[3] == value:
                out.append((prev[0], prev[1], None, value))
            else:
                out.append(("?", -1, None, value))
            continue
        source = orjson.loads(r["value"])["source"]
        gtid, at = str(source["gtid"]), (int(source["pos"]), int(source["row"]))
        seen = ranks.setdefault(gtid, {})
        out.append((gtid, seen.setdefault(at, len(seen)), r["op"], value))
    return out
