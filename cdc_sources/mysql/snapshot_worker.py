"""Child process of the columnar snapshot: reads tables inside its own consistent read view.

Started by `snapshot_process` as ``python -P <this file>`` (no package import: it stays light).
It reads with MySQL Connector/Python's C extension (``mysql-connector-python``, raw mode: every
value arrives as the bytes of the text protocol, parsed in C), so the per-row work runs in this
process, on another core than the parent's, which renders the rows column by column. Rows are
fetched with the extension's ``fetch_row`` driven from C (``CMySQLConnection._cmysql``, a
private attribute: the ``mysql`` extra pins the driver's major version), because the public
``get_rows`` loops in Python per row and costs more than the fetch itself.

The C extension is imported before anything else: its wheel ships OpenSSL 3.2+ libraries that
must load before Python's ``ssl`` module loads the system's (an older system OpenSSL would
otherwise be picked up and the extension would not load).

Commands arrive on stdin, one JSON object a line; credentials therefore never show in ``ps`` or
the environment. Answers go to stdout as frames: one byte kind, a little-endian u64 payload
length, the payload.

* ``{"op": "connect", "connect": {<mysql.connector.connect keywords>}, "statements": [...]}``:
  connect (raw, unbuffered, autocommit) and run the session statements; answer ``J``
  ``{"ok": true}``.
* ``{"op": "begin", "status": "<SQL>"}``: ``SET TRANSACTION ISOLATION LEVEL REPEATABLE READ``,
  ``START TRANSACTION WITH CONSISTENT SNAPSHOT``, then the status statement inside that
  transaction; answer ``J`` ``{"rows": [[text, ...], ...]}``.
* ``{"op": "select", "sql": "...", "block_rows": N, "block_bytes": M}``: answer ``J``
  ``{"columns": [[name, type code, flags, charset number], ...]}``, then ``B`` frames of at most
  about N rows or M bytes, then ``J`` ``{"end": <rows>}``.

A ``B`` payload: u32 rows, u32 columns, then per column: u8 "has nulls", the null flags (one
byte a row, 1 = NULL) if it has, the value lengths (u32 a row, 0 for NULL), u64 data length
and the values' bytes concatenated. Little-endian throughout.

Any failure is answered ``J`` ``{"error": {"errno": ..., "sqlstate": ..., "message": ...}}``
(``"unavailable": true`` when the driver cannot be loaded) and the worker exits. End of file on
stdin (the parent closed it or died) ends the worker; so does a broken stdout.

Exit status: 0 done; 2 an error was reported; 3 stdout closed by the reader.
"""

from __future__ import annotations

try:  # before anything that may import ssl: see the module docstring
    import _mysql_connector  # noqa: F401
except ImportError as _exc:
    _IMPORT_ERROR: str | None = f"the MySQL Connector/Python C extension cannot be loaded: {_exc}"
else:
    _IMPORT_ERROR = None

import json
import os
import struct
import sys
from array import array
from itertools import islice
from operator import itemgetter
from typing import Any

EXIT_ERROR = 2
EXIT_READER_GONE = 3
_OUT_BUFFER = 1 << 20
_FIRST_STEP = 1000
_MAX_STEP = 10_000


def _frame(out: Any, kind: bytes, *parts: bytes | memoryview) -> None:
    out.write(kind + struct.pack("<Q", sum(len(p) for p in parts)))
    for part in parts:
        out.write(part)


def _answer(out: Any, message: dict[str, Any]) -> None:
    _frame(out, b"J", json.dumps(message).encode())
    out.flush()


class _Column:
    """One column's values of the block being filled."""

    __slots__ = ("data", "lengths", "nulls", "rows")

    def __init__(self) -> None:
        self.data: list[bytes] = []
        self.lengths = array("I")
        self.nulls: list[bytes] | None = None
        self.rows = 0

    def add(self, values: tuple[Any, ...]) -> int:
        """Append a chunk of values (bytes or None); returns their size in bytes."""
        if None in values:
            if self.nulls is None:
                self.nulls = [bytes(self.rows)]
            self.nulls.append(bytes([v is None for v in values]))
            values = tuple([b"" if v is None else v for v in values])
        elif self.nulls is not None:
            self.nulls.append(bytes(len(values)))
        data = b"".join(values)
        self.data.append(data)
        self.lengths.extend(map(len, values))
        self.rows += len(values)
        return len(data)

    def parts(self) -> list[bytes]:
        data = b"".join(self.data)
        head = [b"\x01", b"".join(self.nulls)] if self.nulls is not None else [b"\x00"]
        return [*head, self.lengths.tobytes(), struct.pack("<Q", len(data)), data]


def _send_block(out: Any, columns: list[_Column], rows: int) -> None:
    parts = [struct.pack("<II", rows, len(columns))]
    for column in columns:
        parts.extend(column.parts())
    _frame(out, b"B", *parts)


def _select(cnx: Any, out: Any, sql: str, block_rows: int, block_bytes: int) -> None:
    result = cnx.cmd_query(sql)
    described = result.get("columns") or []
    _answer(out, {"columns": [[d[0], d[1], d[7], d[8]] for d in described]})
    # fetch_row driven from C by iter/islice (see the module docstring)
    fetched = iter(cnx._cmysql.fetch_row, None)
    getters = [itemgetter(i) for i in range(len(described))]
    total = rows = size = 0
    step = min(_FIRST_STEP, block_rows)
    columns = [_Column() for _ in described]
    while True:
        chunk = list(islice(fetched, step))
        end = len(chunk) < step  # fetch_row returned None: the result is done
        if chunk:
            chunk_size = sum(column.add(tuple(map(get, chunk))) for column, get in zip(columns, getters, strict=True))
            rows += len(chunk)
            size += chunk_size
            step = max(1, min(_MAX_STEP, block_rows, block_bytes // 8 // max(1, chunk_size // len(chunk))))
        if rows and (rows >= block_rows or size >= block_bytes or end):
            _send_block(out, columns, rows)
            total += rows
            columns = [_Column() for _ in described]
            rows = size = 0
        if end:
            break
    cnx.free_result()
    _answer(out, {"end": total})


def _text(value: Any) -> Any:
    return value.decode("utf-8", "replace") if isinstance(value, bytes | bytearray) else value


def _begin(cnx: Any, status_sql: str) -> list[list[Any]]:
    cnx.cmd_query("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
    cnx.cmd_query("START TRANSACTION WITH CONSISTENT SNAPSHOT")
    cnx.cmd_query(status_sql)
    rows, _eof = cnx.get_rows()
    return [[_text(v) for v in row] for row in rows]


def _connect(request: dict[str, Any]) -> Any:
    import mysql.connector

    cnx = mysql.connector.connect(**request["connect"], use_pure=False, raw=True, buffered=False, autocommit=True)
    for statement in request.get("statements", ()):
        cnx.cmd_query(statement)
        if cnx.unread_result:
            cnx.get_rows()
    return cnx


def _error(exc: BaseException) -> dict[str, Any]:
    return {"errno": getattr(exc, "errno", None), "sqlstate": getattr(exc, "sqlstate", None),
            "message": (getattr(exc, "msg", None) or str(exc)).strip() or type(exc).__name__}


def _serve(stdin: Any, out: Any) -> int:
    cnx = None
    for line in stdin:
        request = json.loads(line)
        op = request.get("op")
        if op == "connect":
            cnx = _connect(request)
            _answer(out, {"ok": True})
        elif op == "begin":
            _answer(out, {"rows": _begin(cnx, request["status"])})
        elif op == "select":
            _select(cnx, out, request["sql"], int(request["block_rows"]), int(request["block_bytes"]))
            out.flush()
        else:
            raise ValueError(f"unknown snapshot worker command {op!r}")
    if cnx is not None:
        cnx.close()
    return 0


def main() -> int:
    """Entry point; returns the exit status."""
    out = open(sys.stdout.fileno(), "wb", buffering=_OUT_BUFFER, closefd=False)  # noqa: SIM115
    try:
        if _IMPORT_ERROR is not None:
            _answer(out, {"error": {"message": _IMPORT_ERROR, "unavailable": True}})
            return EXIT_ERROR
        try:
            return _serve(sys.stdin.buffer, out)
        except BrokenPipeError:
            return EXIT_READER_GONE
        except Exception as exc:  # every failure is reported to the parent
            _answer(out, {"error": _error(exc)})
            return EXIT_ERROR
    except BrokenPipeError:
        return EXIT_READER_GONE


if __name__ == "__main__":
    code = main()
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        code = EXIT_READER_GONE
    os._exit(code)

