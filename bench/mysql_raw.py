"""The MySQL bench's peers: the server's raw limits, and the Python libraries our connector stands on.

- ``mariadb-binlog -v --base64-output=decode-rows`` decodes the binlog range of a scenario into
  pseudo-SQL (one ``### INSERT`` block per row) to /dev/null: MariaDB's own C decoder, the raw
  decode limit. Run on the binlog files themselves (``local``) and through the replication
  protocol (``--read-from-remote-server``: the server's dump thread sends the same events our
  connector receives).
- ``mariadb -N -B -e 'SELECT ...'`` to /dev/null: the server's read-and-send limit for a table
  (the client buffers the whole result, as that command line does by default).
- python-mysql-replication alone (``for ev in stream: ev.rows``), opened exactly as the
  connector opens it (`cdc_sources.mysql.connection.open_binlog_stream`), from the scenario's
  start position: the floor of any reader built on that library.
- pymysql ``SSCursor`` reading the table (``fetchmany(10_000)``), with the connector's
  conversions (DECIMAL and temporal values as text) and with pymysql's defaults: the floor of
  any pymysql snapshot reader.

The two Python peers run in a child process each (`bench._mysql_peer_child`), timed inside the
child after its imports; the command-line tools are timed from process start to exit. Every peer
reports its own peak RSS.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from bench.measure import run_measured
from bench.mysql_workload import COLUMNS, TABLE, BinlogPoint, MariaDbBench, binlog_files, binlog_path
from bench.ours import REPO_ROOT, BenchRunError, child_env

SELECT = f"SELECT {', '.join(COLUMNS)} FROM {TABLE}"


def _tool(*names: str) -> str:
    for name in names:
        found = shutil.which(name)
        if found:
            return found
    raise BenchRunError(f"none of {', '.join(names)} is installed (needed for the raw-limit peers; "
                        "install the mariadb-client package)")


def _server_args(db: MariaDbBench) -> list[str]:
    return ["--host=127.0.0.1", f"--port={db.port}", "--user=root"]


def run_binlog_decode(db: MariaDbBench, start: BinlogPoint, end: BinlogPoint, *, remote: bool) -> dict[str, Any]:
    """``mariadb-binlog -v --base64-output=decode-rows`` over ``start``..``end`` into /dev/null.

    ``remote`` reads through the replication protocol instead of from the files. Returns
    ``start_to_last_s`` (process start to exit), ``peak_rss_mb`` and the command line.
    """
    files = binlog_files(db, start, end)
    cmd = [_tool("mariadb-binlog", "mysqlbinlog"), "--no-defaults", "-v", "--base64-output=decode-rows",
           f"--start-position={start.pos}", f"--stop-position={end.pos}"]
    if remote:
        cmd += ["--read-from-remote-server", *_server_args(db), *files]
    else:
        cmd += [str(binlog_path(db, f)) for f in files]
    out = run_measured(cmd)
    out["command"] = " ".join(Path(c).name if i == 0 else c for i, c in enumerate(cmd))
    return out


def run_client_read(db: MariaDbBench) -> dict[str, Any]:
    """``mariadb -N -B -e 'SELECT ...'`` into /dev/null: the server's read-and-send limit."""
    cmd = [_tool("mariadb", "mysql"), "--no-defaults", *_server_args(db), f"--database={db.name}", "-N", "-B",
           "-e", SELECT]
    return run_measured(cmd)


def _python_peer(config: dict[str, Any], timeout_s: float = 3600.0) -> dict[str, Any]:
    proc = subprocess.run([sys.executable, "-m", "bench._mysql_peer_child", json.dumps(config)], cwd=REPO_ROOT,
                          env=child_env(), capture_output=True, timeout=timeout_s)
    if proc.returncode != 0:
        raise BenchRunError(f"the {config['peer']} peer exited with {proc.returncode}: "
                            f"{proc.stderr.decode(errors='replace')[-3000:]}")
    out: dict[str, Any] = json.loads(proc.stdout)
    return out


def run_library(db: MariaDbBench, start: BinlogPoint, expected: int, server_id: int) -> dict[str, Any]:
    """python-mysql-replication alone: iterate the row events from ``start`` until ``expected`` rows.

    Returns ``start_to_last_s`` (from opening the reader to the last expected row decoded),
    ``start_to_first_s``, ``first_to_last_s``, ``rows``, ``events`` and ``peak_rss_mb``.
    """
    return _python_peer({"peer": "library", "port": db.port, "file": start.file, "pos": start.pos,
                         "expected": expected, "server_id": server_id})


def run_sscursor(db: MariaDbBench, *, conversions: str) -> dict[str, Any]:
    """pymysql ``SSCursor`` reading the table with ``conversions`` ``connector`` or ``default``.

    Returns ``start_to_last_s`` (from connecting to the last row), ``rows`` and ``peak_rss_mb``.
    """
    return _python_peer({"peer": "sscursor", "port": db.port, "database": db.name, "select": SELECT,
                         "conversions": conversions})
