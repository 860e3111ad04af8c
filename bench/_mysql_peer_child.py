"""Child process: one Python peer of the MySQL bench, timed after its imports.

Run as ``python -m bench._mysql_peer_child CONFIG_JSON``; prints one JSON object on stdout.
``CONFIG_JSON["peer"]`` is

- ``library``: python-mysql-replication opened as the connector opens it
  (`cdc_sources.mysql.connection.open_binlog_stream`, MariaDB GTID positioning from
  ``file``/``pos``), iterating ``for ev in stream: ev.rows`` until ``expected`` rows. It reads
  in blocking mode and stops at the expected row: a non-blocking read of python-mysql-replication
  1.0.17 on MariaDB is reset by the server at the end of the binlog (see `bench.mysql_raw`),
  which this peer, measuring decoding alone, must not include. ``reconnects`` counts the
  library's silent reconnects anyway (0 expected);
- ``sscursor``: pymysql ``SSCursor`` running ``select`` with ``fetchmany(10_000)`` until the
  end, with the connector's snapshot conversions (``conversions: connector``) or pymysql's
  defaults (``default``).

The clock starts after the imports, before connecting. ``peak_rss_mb`` is the child's
``ru_maxrss`` (imports included).
"""

from __future__ import annotations

import json
import logging
import resource
import sys
import time
from typing import Any

import pymysql
from pymysqlreplication.row_event import RowsEvent

from cdc_sources.mysql.config import MySqlConnectionSettings
from cdc_sources.mysql.connection import open_binlog_stream, report_host
from cdc_sources.mysql.converters import SNAPSHOT_CONVERSIONS

FETCH_SIZE = 10_000


class _ReconnectCounter(logging.Handler):
    """Counts python-mysql-replication's warnings (it logs one per silent stream reconnect)."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.count = 0

    def emit(self, record: logging.LogRecord) -> None:
        self.count += 1


def library(config: dict[str, Any]) -> dict[str, Any]:
    """Decode the row events from ``file:pos`` until ``expected`` rows."""
    settings = MySqlConnectionSettings(host="127.0.0.1", port=int(config["port"]), user="root")
    expected = int(config["expected"])
    started = time.monotonic()
    reconnects = _ReconnectCounter()
    logging.getLogger("pymysqlreplication").addHandler(reconnects)
    stream = open_binlog_stream(settings, server_id=int(config["server_id"]), file=str(config["file"]),
                                pos=int(config["pos"]), blocking=True, heartbeat_s=0.5, mariadb=True,
                                report_as=report_host("bench-library"))
    rows = events = 0
    first: float | None = None
    last = ("", 0)
    try:
        for event in stream:
            here = (str(stream.log_file or ""), int(event.packet.log_pos))
            if isinstance(event, RowsEvent) and here > last:  # events re-sent after a reconnect are skipped
                last = here
                rows += len(event.rows)
                events += 1
                if first is None:
                    first = time.monotonic()
                if rows >= expected:
                    break
    finally:
        ended = time.monotonic()
        stream.close()
    if rows < expected:
        raise RuntimeError(f"python-mysql-replication decoded {rows} rows, expected {expected}")
    first = first or ended
    return {"start_to_last_s": ended - started, "start_to_first_s": first - started,
            "first_to_last_s": ended - first, "rows": rows, "events": events, "reconnects": reconnects.count}


def sscursor(config: dict[str, Any]) -> dict[str, Any]:
    """Read the whole table through an unbuffered cursor."""
    conv = dict(SNAPSHOT_CONVERSIONS) if config["conversions"] == "connector" else None  # None: pymysql's
    started = time.monotonic()
    conn = pymysql.connect(host="127.0.0.1", port=int(config["port"]), user="root", password="",
                           database=str(config["database"]), charset="utf8mb4", conv=conv)
    rows = 0
    try:
        with conn.cursor(pymysql.cursors.SSCursor) as cur:
            cur.execute(str(config["select"]))
            while batch := cur.fetchmany(FETCH_SIZE):
                rows += len(batch)
    finally:
        conn.close()
    return {"start_to_last_s": time.monotonic() - started, "rows": rows}


PEERS = {"library": library, "sscursor": sscursor}


def main(argv: list[str]) -> int:
    config = json.loads(argv[1])
    out = PEERS[config["peer"]](config)
    out["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
