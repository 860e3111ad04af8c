"""Child process of the columnar snapshot: streams one ``COPY ... TO STDOUT`` to its stdout.

Started by `copy_source` as ``python -P <this file>`` (no package import: it stays light). It
reads ONE JSON line from stdin::

    {"connect": {<libpq keywords, password included>}, "snapshot": "<exported snapshot>",
     "copy": "COPY (SELECT ...) TO STDOUT (FORMAT csv)"}

so that no credential shows in ``ps`` or the environment. It then connects (psycopg2), opens a
REPEATABLE READ transaction on the exported snapshot and copies the rows to stdout. The per-row
work of libpq and psycopg2 thus runs in this process, on another core than the parent's.

The parent keeps stdin open while it wants the rows: end of file on stdin (the parent closed it
or died) makes the worker exit at once, so a worker never outlives its parent.

Exit status: 0 done; 2 a database error, described on stderr as one JSON line
``{"sqlstate": ..., "message": ...}``; 3 stdout closed by the reader; 4 told to stop.
"""

from __future__ import annotations

import json
import os
import sys
import threading
from typing import Any

EXIT_DATABASE_ERROR = 2
EXIT_READER_GONE = 3
EXIT_STOPPED = 4
_OUT_BUFFER = 1 << 20


def _stop_on_eof() -> None:
    """Exit as soon as stdin reaches end of file (the parent closed it or died)."""
    while sys.stdin.buffer.read(4096):
        pass
    os._exit(EXIT_STOPPED)


def _report(exc: BaseException) -> None:
    driver = type(exc).__module__.split(".")[0] == "psycopg2"
    detail = {"sqlstate": getattr(exc, "pgcode", None), "message": str(exc).strip() or type(exc).__name__,
              "driver": driver}
    sys.stderr.write(json.dumps(detail) + "\n")
    sys.stderr.flush()


def copy(request: dict[str, Any], out: Any) -> None:
    """Run the request's COPY inside its exported snapshot, writing the rows to ``out``."""
    import psycopg2

    conn = psycopg2.connect(**request["connect"])
    try:
        conn.autocommit = True
        with conn.cursor() as cur:
            cur.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
            cur.execute("SET TRANSACTION SNAPSHOT %s", (request["snapshot"],))
            cur.copy_expert(request["copy"], out, size=_OUT_BUFFER)
            cur.execute("ROLLBACK")
    finally:
        conn.close()


def main() -> int:
    """Entry point; returns the exit status."""
    request = json.loads(sys.stdin.buffer.readline())
    threading.Thread(target=_stop_on_eof, name="stdin-watch", daemon=True).start()
    out = open(sys.stdout.fileno(), "wb", buffering=_OUT_BUFFER, closefd=False)  # noqa: SIM115
    try:
        copy(request, out)
        out.flush()
    except BrokenPipeError:
        return EXIT_READER_GONE
    except Exception as exc:  # every failure is reported to the parent
        _report(exc)
        return EXIT_DATABASE_ERROR
    return 0


if __name__ == "__main__":
    code = main()
    sys.stdout.flush()
    os._exit(code)  # skip interpreter teardown: the stdin thread may still be blocked reading
