"""A table's snapshot rows copied by a `copy_worker` child process, as Arrow batches.

The worker imports the exported snapshot itself and runs ``COPY ... (FORMAT csv)``, so libpq's
per-row work runs on another core than this process, which only parses the CSV stream
(`copy_source.batches`). Connection settings, credentials included, reach the worker through
its stdin, never its command line or environment. A worker never outlives its `WorkerCopy`:
`WorkerCopy.close` kills it, and a worker whose parent dies sees its stdin close and exits.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import queue
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa

from cdc_sources.postgres import copy_worker
from cdc_sources.postgres.config import ConnectionSettings
from cdc_sources.postgres.connection import APPLICATION_NAME, SESSION_SETTINGS
from cdc_sources.postgres.copy_source import BLOCK_BYTES, CopyRequest, batches
from cdc_sources.postgres.errors import PostgresError, classify

SESSION_OPTIONS = " ".join(f"-c {k}={v.replace(' ', '')}" for k, v in SESSION_SETTINGS.items())
"""``SESSION_SETTINGS`` as a libpq ``options`` string, as `connection` passes them."""

AHEAD_BYTES = 4 << 20
"""How far the worker's output is read ahead of the parsing."""

_CHUNK = 1 << 20
_WORKER = str(Path(copy_worker.__file__).resolve())
_WAIT_S = 10
_POLL_S = 0.1


class CopyWorkerError(Exception):
    """What a copy worker reported (turned into a `PostgresError` by `classify`)."""

    def __init__(self, message: str, sqlstate: str | None) -> None:
        super().__init__(message)
        self.sqlstate = sqlstate


class _Drain(io.RawIOBase):
    """Reads a pipe ahead of its consumer, in a thread, up to `AHEAD_BYTES`.

    The worker can only write as fast as its pipe is emptied: draining it while the consumer
    converts a batch keeps the worker (and the server behind it) busy.
    """

    def __init__(self, fd: int) -> None:
        self._chunks: queue.Queue[bytes] = queue.Queue(max(1, AHEAD_BYTES // _CHUNK))
        self._rest = memoryview(b"")
        self._eof = False
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._pump, args=(fd,), name="copy-drain", daemon=True)
        self._thread.start()

    def _pump(self, fd: int) -> None:
        chunk = b"-"
        while chunk and not self._stop.is_set():
            try:
                chunk = os.read(fd, _CHUNK)
            except OSError:
                chunk = b""
            while not self._stop.is_set():
                try:
                    self._chunks.put(chunk, timeout=0.1)
                    break
                except queue.Full:
                    continue

    def stop(self) -> None:
        """Stop the thread (the pipe's writer must be gone, so that a pending read returns)."""
        self._stop.set()
        self._thread.join(_WAIT_S)
        with contextlib.suppress(queue.Full):  # wake a reader waiting for a chunk that will not come
            self._chunks.put_nowait(b"")

    def readable(self) -> bool:
        return True

    def _next_chunk(self) -> bytes:
        """The next chunk; empty at end of file, or once the thread is stopped or gone."""
        while True:
            try:
                return self._chunks.get(timeout=_POLL_S)
            except queue.Empty:
                if self._stop.is_set() or not self._thread.is_alive():
                    with contextlib.suppress(queue.Empty):  # what it queued before it ended
                        return self._chunks.get_nowait()
                    return b""

    def readinto(self, buffer: Any) -> int:
        view = memoryview(buffer).cast("B")
        n = 0
        while n < len(view) and not self._eof:
            if not self._rest:
                chunk = self._next_chunk()
                self._eof = not chunk
                self._rest = memoryview(chunk)
                continue
            k = min(len(view) - n, len(self._rest))
            view[n:n + k] = self._rest[:k]
            self._rest = self._rest[k:]
            n += k
        return n


class WorkerCopy:
    """One table's ``COPY`` run by a worker process inside the exported ``snapshot``.

    The worker starts (and connects) as soon as the object exists; iterate it for the batches,
    and always `close` it (``contextlib.closing``). Errors the worker reports are raised as
    `PostgresError`s naming the table.
    """

    def __init__(self, connection: ConnectionSettings, snapshot: str, request: CopyRequest) -> None:
        self.request = request
        self._drain: _Drain | None = None
        connect = {**connection.libpq_kwargs(), "options": SESSION_OPTIONS, "application_name": APPLICATION_NAME,
                   "connect_timeout": 10}
        self._proc = subprocess.Popen([sys.executable, "-P", _WORKER], stdin=subprocess.PIPE,
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, close_fds=True)
        try:
            assert self._proc.stdin is not None and self._proc.stdout is not None
            message = {"connect": connect, "snapshot": snapshot, "copy": request.sql}
            self._proc.stdin.write(json.dumps(message).encode() + b"\n")
            self._proc.stdin.flush()  # stdin stays open: closing it tells the worker to stop
            self._drain = _Drain(self._proc.stdout.fileno())
        except BaseException:
            self.close()
            raise

    def __iter__(self) -> Iterator[Any]:
        assert self._drain is not None
        try:
            yield from batches(io.BufferedReader(self._drain, BLOCK_BYTES), self.request)
        except (pa.ArrowInvalid, OSError) as exc:
            self._raise_if_failed()
            raise PostgresError(f"snapshotting table {self.request.table}: unreadable COPY output: {exc}") from None
        self._raise_if_failed()

    def _raise_if_failed(self) -> None:
        """Wait for the worker whose output ended; raise what it reported if it failed."""
        assert self._proc.stderr is not None
        err = self._proc.stderr.read().decode("utf-8", "replace").strip()
        status = self._proc.wait(_WAIT_S)
        if status == 0:
            return
        where = f"snapshotting table {self.request.table}"
        detail: Any = None
        if status == copy_worker.EXIT_DATABASE_ERROR and err:
            with contextlib.suppress(ValueError):
                detail = json.loads(err.splitlines()[-1])
        if isinstance(detail, dict) and detail.get("driver"):
            raise classify(CopyWorkerError(str(detail.get("message")), detail.get("sqlstate")), where=where)
        message = detail.get("message") if isinstance(detail, dict) else (err.splitlines() or ["no message"])[-1]
        raise classify(CopyWorkerError(f"the COPY worker failed (status {status}): {message}", "XX000"),
                       where=where) from None

    def close(self) -> None:
        """Kill the worker if it still runs, and release its pipes and thread."""
        proc = self._proc
        if proc.stdin is not None:
            with contextlib.suppress(OSError):
                proc.stdin.close()
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        if self._drain is not None:
            self._drain.stop()
        for pipe in (proc.stdout, proc.stderr):
            if pipe is not None:
                with contextlib.suppress(OSError):
                    pipe.close()
