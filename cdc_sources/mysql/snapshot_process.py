"""The columnar snapshot's reader process: its own connection and read view, rows as Arrow arrays.

A `SnapshotWorker` runs `snapshot_worker` as a child process. It connects before the snapshot
takes its global read lock (`start`), opens its consistent-snapshot transaction while the lock is
held (`join_read_view`, called by `snapshot_prepare.prepare_snapshot`), then reads the captured
tables (`read`): the text protocol's raw bytes of each column arrive in blocks and become
pyarrow binary arrays without per-value work in this process.

Connection settings, password included, reach the worker through its stdin, never its command
line or environment. A worker never outlives its `SnapshotWorker`: `close` ends it (and kills
it if needed), and a worker whose parent dies sees its stdin close or its stdout break and exits.
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
import struct
import subprocess
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from cdc_sources.mysql import snapshot_worker
from cdc_sources.mysql.config import MySqlConnectionSettings
from cdc_sources.mysql.connection import CHARSET, SESSION_SETTINGS
from cdc_sources.mysql.errors import MySqlError, classify
from cdc_sources.mysql.raw_values import ResultColumn

log = logging.getLogger(__name__)

BLOCK_ROWS = 50_000
"""Rows per block a worker sends (fewer when the rows are wide, see `BLOCK_BYTES`)."""

BLOCK_BYTES = 32 << 20
"""Value bytes per block a worker sends, at most about."""

_WORKER = str(Path(snapshot_worker.__file__).resolve())
_WAIT_S = 10
_PIPE_BUFFER = 1 << 20


class WorkerError(Exception):
    """What a snapshot worker reported: ``args`` are (error number or None, message), as
    `cdc_sources.mysql.errors.classify` reads a driver error."""


@dataclass(frozen=True)
class RawBatch:
    """Consecutive rows of one result set, a pyarrow binary array per column (NULL as null).

    Attributes:
        columns: the result's columns, as the server describes them.
        arrays: one array per column, in result order.
        rows: the number of rows.
    """

    columns: Sequence[ResultColumn]
    arrays: Sequence[Any]
    rows: int


def _quoted(value: str) -> str:
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def worker_settings(settings: MySqlConnectionSettings) -> tuple[dict[str, Any], list[str]] | None:
    """The worker's ``mysql.connector.connect`` keywords and session statements, the same session
    as `connection.connect` sets up; None when the worker cannot reproduce the connection.

    The worker connects in plain text only, as pymysql does for ``disabled`` and ``preferred``.
    The other TLS modes are left to the row reader: the C extension (26.x) silently connects
    without TLS to a server that offers none unless host names are verified, so it cannot
    enforce ``required`` or ``verify_ca``.
    """
    if settings.ssl_mode not in ("disabled", "preferred"):
        return None
    kwargs: dict[str, Any] = {
        "host": settings.host, "port": settings.port, "user": settings.user, "password": settings.password or "",
        "charset": CHARSET, "connection_timeout": max(1, math.ceil(settings.connect_timeout_s)),
        "ssl_disabled": True,
    }
    if settings.database:
        kwargs["database"] = settings.database
    if settings.query_timeout_s:
        kwargs["read_timeout"] = max(1, math.ceil(settings.query_timeout_s))
    statements = [f"SET SESSION {name} = {_quoted(value)}" for name, value in SESSION_SETTINGS.items()]
    return kwargs, [*statements, *settings.initial_statements]


class SnapshotWorker:
    """One reader process with its own connection. Not thread-safe; always `close` it.

    Use `start` to create one; errors it reports are raised as `MySqlError`s naming what failed.
    """

    def __init__(self, settings: MySqlConnectionSettings) -> None:
        self.settings = settings
        self._proc = subprocess.Popen([sys.executable, "-P", _WORKER], stdin=subprocess.PIPE,
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, close_fds=True,
                                      bufsize=_PIPE_BUFFER)
        self._busy = False

    @classmethod
    def start(cls, settings: MySqlConnectionSettings) -> SnapshotWorker | None:
        """A connected worker, or None (with a warning) when none can serve this connection: the
        C extension is missing, the TLS mode is not handled, or the worker cannot connect."""
        prepared = worker_settings(settings)
        if prepared is None:
            log.info("snapshot: database.ssl.mode=%s: tables are read row by row (the columnar reader "
                     "connects without TLS only)", settings.ssl_mode)
            return None
        connect, statements = prepared
        worker = cls(settings)
        try:
            worker._request({"op": "connect", "connect": connect, "statements": statements},
                            f"connecting the snapshot reader to {settings.describe()}")
        except _DriverUnavailableError as exc:
            log.warning("snapshot: %s; tables are read row by row (install mysql-connector-python for the "
                        "columnar reader)", exc)
            worker.close()
            return None
        except MySqlError as exc:
            log.warning("snapshot: the columnar reader cannot connect (%s); tables are read row by row", exc)
            worker.close()
            return None
        except BaseException:
            worker.close()
            raise
        return worker

    def join_read_view(self, status_sql: str) -> list[tuple[str, ...]]:
        """Open the worker's consistent-snapshot transaction; the rows ``status_sql`` returns in it.

        Call it while the snapshot's global read lock is held, so that its read view is the
        snapshot connection's.
        """
        answer = self._request({"op": "begin", "status": status_sql}, "opening the snapshot reader's read view")
        return [tuple("" if v is None else str(v) for v in row) for row in answer["rows"]]

    def read(self, table: str, select: str, *, block_rows: int = BLOCK_ROWS,
             block_bytes: int = BLOCK_BYTES, where: str | None = None) -> Iterator[RawBatch]:
        """The rows of ``select`` in blocks (``table`` names it in errors, ``where`` replaces the
        step they name: "snapshotting table <table>" by default).

        Leaving the iteration early ends the worker (its result cannot be abandoned midway).
        """
        where = where or f"snapshotting table {table}"
        answer = self._request({"op": "select", "sql": select, "block_rows": block_rows, "block_bytes": block_bytes},
                               where)
        columns = [ResultColumn(str(c[0]), int(c[1]), int(c[2]), int(c[3])) for c in answer["columns"]]
        self._busy = True
        rows = 0
        try:
            while True:
                kind, payload = self._frame(where)
                if kind == b"B":
                    batch = _batch(payload, columns)
                    rows += batch.rows
                    yield batch
                    continue
                message = self._message(payload, where)
                if message.get("end") != rows:
                    raise MySqlError(f"{where}: the snapshot reader sent {rows} rows but reports {message.get('end')}")
                self._busy = False
                return
        finally:
            if self._busy:
                self.close()

    def close(self) -> None:
        """End the worker (its transaction rolls back) and release its pipes."""
        proc = self._proc
        if proc.stdin is not None:
            with contextlib.suppress(OSError):
                proc.stdin.close()
        try:
            proc.wait(0 if self._busy else _WAIT_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        for pipe in (proc.stdout, proc.stderr):
            if pipe is not None:
                with contextlib.suppress(OSError):
                    pipe.close()

    # -- protocol --------------------------------------------------------------------------------

    def _request(self, request: dict[str, Any], where: str) -> dict[str, Any]:
        if self._busy:
            raise MySqlError(f"{where}: the snapshot reader is still sending a table")
        stdin = self._proc.stdin
        assert stdin is not None
        try:
            stdin.write(json.dumps(request).encode() + b"\n")
            stdin.flush()
        except OSError:
            self._died(where)
        kind, payload = self._frame(where)
        if kind != b"J":
            raise MySqlError(f"{where}: the snapshot reader answered out of turn")
        return self._message(payload, where)

    def _message(self, payload: bytes, where: str) -> dict[str, Any]:
        message: dict[str, Any] = json.loads(payload)
        error = message.get("error")
        if error is None:
            return message
        self._busy = False
        if error.get("unavailable"):
            raise _DriverUnavailableError(error.get("message"))
        raise classify(WorkerError(error.get("errno"), error.get("message")), where=where)

    def _frame(self, where: str) -> tuple[bytes, bytes]:
        head = self._read(9, where)
        size = struct.unpack("<Q", head[1:])[0]
        return head[:1], self._read(size, where)

    def _read(self, size: int, where: str) -> bytes:
        stdout = self._proc.stdout
        assert stdout is not None
        data = stdout.read(size)
        if len(data) != size:
            self._died(where)
        return bytes(data)

    def _died(self, where: str) -> None:
        """Raise what a worker that stopped answering left on stderr."""
        self._busy = False
        stderr = self._proc.stderr
        assert stderr is not None
        self._proc.kill()
        status = self._proc.wait()
        lines = stderr.read().decode("utf-8", "replace").strip().splitlines()
        raise MySqlError(f"{where}: the snapshot reader process ended unexpectedly (status {status}): "
                         f"{lines[-1] if lines else 'no message'}")


class _DriverUnavailableError(Exception):
    """The worker cannot load its driver."""


def _batch(payload: bytes, columns: Sequence[ResultColumn]) -> RawBatch:
    """Decode a ``B`` frame (see `snapshot_worker`) into binary arrays over ``payload``'s memory."""
    rows, count = struct.unpack_from("<II", payload, 0)
    if count != len(columns):
        raise MySqlError(f"the snapshot reader sent {count} columns for a result of {len(columns)}")
    buffer = pa.py_buffer(payload)
    pos = 8
    arrays = []
    for _ in range(count):
        has_nulls = payload[pos]
        pos += 1
        validity, nulls = None, 0
        if has_nulls:
            valid = np.frombuffer(payload, np.uint8, rows, pos) == 0
            pos += rows
            nulls = rows - int(np.count_nonzero(valid))
            validity = pa.py_buffer(np.packbits(valid, bitorder="little"))
        lengths = np.frombuffer(payload, "<u4", rows, pos)
        pos += 4 * rows
        offsets = np.zeros(rows + 1, np.int64)
        np.cumsum(lengths, out=offsets[1:])
        (size,) = struct.unpack_from("<Q", payload, pos)
        pos += 8
        if offsets[-1] != size or size >= 1 << 31:
            raise MySqlError(f"the snapshot reader sent a malformed block ({size} value bytes)")
        arrays.append(pa.Array.from_buffers(pa.binary(), rows, [validity, pa.py_buffer(offsets.astype(np.int32)),
                                                                 buffer.slice(pos, size)], nulls))
        pos += size
    return RawBatch(columns, arrays, rows)
