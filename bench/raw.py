"""The server's raw limits: ``pg_recvlogical`` (decode and send) and ``COPY ... TO STDOUT`` (read).

``pg_recvlogical`` is PostgreSQL's own C client of the replication protocol. With the pgoutput
plugin it receives exactly the messages our connector and Debezium receive, and does nothing
with them but write them out, so its time is what the server needs to decode the WAL and send
the changes. ``COPY (SELECT ...) TO STDOUT`` through ``psql`` is the same for reading a table;
through psycopg it adds the cost of handing each row to Python, the floor of any Python reader.
"""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path
from typing import Any

from bench.workload import PUBLICATION, TABLE, BenchDb

COLUMNS = "id, customer_id, quantity, status, note, amount, created_at, active"
SELECT = f"SELECT {COLUMNS} FROM public.{TABLE}"


def _bindir(db: BenchDb) -> Path:
    assert db.server.bindir is not None
    return Path(db.server.bindir)


def _conn_args(db: BenchDb) -> list[str]:
    return ["-h", "127.0.0.1", "-p", str(db.port), "-U", "postgres", "-d", db.name]


def recvlogical_create_slot(db: BenchDb, slot: str) -> None:
    """``pg_recvlogical --create-slot --plugin=pgoutput``."""
    subprocess.run([str(_bindir(db) / "pg_recvlogical"), *_conn_args(db), f"--slot={slot}",
                    "--create-slot", "--plugin=pgoutput"], check=True, capture_output=True)


def run_recvlogical(db: BenchDb, slot: str, end_lsn: str) -> dict[str, Any]:
    """Stream the slot up to ``end_lsn`` into a pipe that is read and discarded.

    Returns the wall time from process start to exit (it exits on reaching ``end_lsn``), the
    time from start to the first byte, and how many bytes it wrote.
    """
    cmd = [str(_bindir(db) / "pg_recvlogical"), *_conn_args(db), f"--slot={slot}", "--start", "--no-loop",
           "-o", "proto_version=1", "-o", f"publication_names={PUBLICATION}", f"--endpos={end_lsn}", "-f", "-"]
    started = time.monotonic()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None
    first: float | None = None
    size = 0
    fd = proc.stdout.fileno()
    while chunk := os.read(fd, 1 << 20):
        if first is None:
            first = time.monotonic()
        size += len(chunk)
    code = proc.wait()
    ended = time.monotonic()
    err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
    if code != 0:
        raise RuntimeError(f"pg_recvlogical exited with {code}: {err.strip()[-2000:]}")
    return {"start_to_last_s": ended - started, "start_to_first_s": (first or ended) - started,
            "first_to_last_s": ended - (first or started), "bytes": size}


def run_copy_psql(db: BenchDb) -> dict[str, Any]:
    """``psql -c "COPY (SELECT ...) TO STDOUT"`` into /dev/null: the server's read-and-send limit."""
    cmd = [str(_bindir(db) / "psql"), *_conn_args(db), "-X", "-q", "-c", f"COPY ({SELECT}) TO STDOUT"]
    started = time.monotonic()
    with open(os.devnull, "wb") as sink:
        subprocess.run(cmd, stdout=sink, check=True)
    return {"start_to_last_s": time.monotonic() - started}


def run_copy_psycopg(db: BenchDb) -> dict[str, Any]:
    """The same COPY read row by row through psycopg 3 (what our snapshot reader iterates)."""
    started = time.monotonic()
    rows = 0
    with db.connect() as conn, conn.cursor() as cur, cur.copy(f"COPY ({SELECT}) TO STDOUT") as copy:
        for _data in copy:
            rows += 1
    return {"start_to_last_s": time.monotonic() - started, "rows": rows}
