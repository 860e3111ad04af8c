"""Row decoding speed: python-mysql-replication's ``RowsEvent.rows`` against `cdc_sources.mysql.rows`.

A private MariaDB (`pipelines.local_mariadb.LocalMariaDB`) is loaded with server-generated rows
(MariaDB's ``SEQUENCE`` engine) in three scenarios:

- ``typical``: ``id INT``, a few integers, ``VARCHAR(40)``, ``DECIMAL(12,2)``, ``DATETIME(3)``
  (a tenth of the varchars NULL), multi-row events;
- ``all_types``: every column type with typical values, a few NULL, multi-row events;
- ``typical_single``: the typical table, one row per transaction (a table map and a rows
  event per row: the per-event cost).

The binlog of each scenario is read with a ``BinLogStreamReader`` opened like the connector
opens it (GTID auto-positioning; blocking, up to the end position). Each rows event is decoded
as it arrives, as the stream reader does: by our decoder (one per scenario, so compiling is
included), then by the library (whose packet our decoder left unread), and the two results
must be equal. Only those two calls are timed, not reading the stream. Run:
``python -m bench.mysql_row_decode [--rows N] [--single-rows N] [--json]``.
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
import time
from contextlib import closing
from pathlib import Path
from typing import Any

import pymysql

from cdc_sources.mysql.rows import RowDecoder
from pipelines.local_mariadb import LocalMariaDB

TYPICAL_DDL = """CREATE TABLE {name} (id INT PRIMARY KEY, a INT NOT NULL, b INT, c BIGINT NOT NULL,
    label VARCHAR(40), amount DECIMAL(12,2) NOT NULL, created DATETIME(3) NOT NULL) DEFAULT CHARSET=utf8mb4"""

TYPICAL_VALUES = """seq, seq % 1000, seq * 7 % 100000, seq * 31,
    IF(seq % 10 = 0, NULL, CONCAT('customer ', seq)), (seq % 1000000) / 100 - 5000,
    TIMESTAMP '2026-01-01 00:00:00' + INTERVAL seq * 1237000 MICROSECOND"""

ALL_TYPES: list[tuple[str, str, str]] = [
    ("ti", "TINYINT", "seq % 256 - 128"), ("tiu", "TINYINT UNSIGNED", "seq % 256"),
    ("si", "SMALLINT", "seq % 65536 - 32768"), ("mi", "MEDIUMINT UNSIGNED", "seq * 13 % 16777216"),
    ("i", "INT", "seq * 7919 - 1000000000"), ("bi", "BIGINT UNSIGNED", "seq * 1000000007"),
    ("f", "FLOAT", "seq / 7"), ("d", "DOUBLE", "seq / 3"),
    ("dec1", "DECIMAL(12,2)", "seq / 100 - 1000"), ("dec2", "DECIMAL(30,10)", "seq * 12345.6789012345"),
    ("dt0", "DATETIME", "TIMESTAMP '2026-01-01 00:00:00' + INTERVAL seq SECOND"),
    ("dt6", "DATETIME(6)", "TIMESTAMP '2026-01-01 00:00:00' + INTERVAL seq * 1001 MICROSECOND"),
    ("ts3", "TIMESTAMP(3) NULL", "TIMESTAMP '2026-01-01 00:00:00' + INTERVAL seq * 1237 MICROSECOND"),
    ("tm", "TIME(3)", "SEC_TO_TIME(seq % 600000 - 300000) + INTERVAL seq % 1000 * 1000 MICROSECOND"),
    ("dte", "DATE", "DATE '2000-01-01' + INTERVAL seq % 10000 DAY"), ("yr", "YEAR", "1901 + seq % 255"),
    ("en", "ENUM('new','paid','shipped')", "ELT(1 + seq % 3, 'new', 'paid', 'shipped')"),
    ("st", "SET('a','b','c','d')", "MAKE_SET(seq % 16, 'a', 'b', 'c', 'd')"),
    ("b1", "BIT(1)", "seq % 2"), ("b20", "BIT(20)", "seq % 1048576"),
    ("ch", "CHAR(8)", "LPAD(seq % 100000, 8, '0')"), ("vc", "VARCHAR(40)", "CONCAT('näme ', seq)"),
    ("vl", "VARCHAR(300) CHARACTER SET latin1", "REPEAT('x', seq % 300)"),
    ("vb", "VARBINARY(16)", "UNHEX(LPAD(HEX(seq), 8, '0'))"),
    ("tx", "TEXT", "IF(seq % 5 = 0, NULL, REPEAT('text ', seq % 20))"), ("bl", "BLOB", "REPEAT(X'AB', seq % 50)"),
    ("js", "JSON", "JSON_OBJECT('k', seq, 'v', 'x')"), ("pt", "POINT", "POINT(seq % 180, seq % 90)"),
]
"""(name, type, server-side value expression of ``seq``) of the all-types table."""

ALL_TYPES_DDL = ("CREATE TABLE {name} (id INT PRIMARY KEY, " + ", ".join(f"{n} {t}" for n, t, _ in ALL_TYPES)
                 + ") DEFAULT CHARSET=utf8mb4")
ALL_TYPES_VALUES = "seq, " + ", ".join(e for _, _, e in ALL_TYPES)
CHUNK = 20_000
"""Rows per loading transaction."""
SERVER_ID = 915_401


def _connect(args: dict[str, Any]) -> Any:
    conn = pymysql.connect(**args, autocommit=True, charset="utf8mb4")
    with conn.cursor() as cur:
        cur.execute("SET SESSION sql_mode = ''")
    return conn


def _position(cur: Any) -> tuple[str, int]:
    cur.execute("SHOW MASTER STATUS")
    file, pos = cur.fetchone()[:2]
    return str(file), int(pos)


def _load(args: dict[str, Any], ddl: str, values: str, rows: int, single: bool) -> tuple[str, str, int]:
    """Create ``t`` and fill it; returns the GTID state before the load and the end position."""
    with closing(_connect(args)) as conn, conn.cursor() as cur:
        cur.execute("DROP TABLE IF EXISTS t")
        cur.execute(ddl.format(name="t"))
        cur.execute("SELECT BINLOG_GTID_POS(%s, %s)", _position(cur))
        state = str(cur.fetchone()[0])
        step = 1 if single else CHUNK
        for first in range(1, rows + 1, step):
            last = min(first + step - 1, rows)
            cur.execute(f"INSERT INTO t SELECT {values} FROM (SELECT CAST(seq AS SIGNED) AS seq "
                        f"FROM seq_{first}_to_{last}) AS s")
        file, end = _position(cur)
        return state, file, end


def _measure(args: dict[str, Any], state: str, file: str, end: int) -> dict[str, Any]:
    """Read the binlog from ``state`` to ``end``; time our decoder, then the library, on each event."""
    from pymysqlreplication import BinLogStreamReader
    from pymysqlreplication.row_event import WriteRowsEvent

    settings = {"host": args["host"], "port": args["port"], "user": args["user"], "password": ""}
    stream = BinLogStreamReader(connection_settings=settings, server_id=SERVER_ID, is_mariadb=True, blocking=True,
                                auto_position=state, only_schemas=[args["database"]], end_log_pos=end,
                                only_events=[WriteRowsEvent])
    decoder, clock = RowDecoder(), time.perf_counter
    ours = library = 0.0
    events = rows = 0
    try:
        for event in stream:
            t0 = clock()
            decoded = decoder.rows(event)
            t1 = clock()
            theirs = event.rows
            t2 = clock()
            ours, library = ours + t1 - t0, library + t2 - t1
            if decoded != theirs:
                raise RuntimeError(f"our rows of event {events} differ from the library's ({decoded is None=})")
            events, rows = events + 1, rows + len(theirs)
        if stream.log_file != file:
            raise RuntimeError("the binlog rotated during the load; rerun with fewer rows")
    finally:
        stream.close()
    return {"events": events, "rows": rows, "library_rows_per_s": round(rows / library),
            "ours_rows_per_s": round(rows / ours), "speedup": round(library / ours, 2)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=200_000, help="rows of the multi-row scenarios")
    parser.add_argument("--single-rows", type=int, default=20_000, help="rows of the one-row-per-event scenario")
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    options = parser.parse_args()
    base = Path(tempfile.mkdtemp(prefix="cdc-rowbench-"))
    server = LocalMariaDB(base / "data").start()
    results: dict[str, Any] = {}
    try:
        admin = server.connect_args()
        with closing(pymysql.connect(**admin, autocommit=True)) as conn, conn.cursor() as cur:  # type: ignore[arg-type]
            cur.execute("CREATE DATABASE bench")
        args = server.connect_args("bench")
        scenarios = [("typical", TYPICAL_DDL, TYPICAL_VALUES, options.rows, False),
                     ("all_types", ALL_TYPES_DDL, ALL_TYPES_VALUES, options.rows, False),
                     ("typical_single", TYPICAL_DDL, TYPICAL_VALUES, options.single_rows, True)]
        for name, ddl, values, rows, single in scenarios:
            state, file, end = _load(args, ddl, values, rows, single)
            results[name] = _measure(args, state, file, end)
            if not options.json:
                r = results[name]
                print(f"{name:15s} {r['rows']:>8d} rows in {r['events']:>6d} events: library "
                      f"{r['library_rows_per_s']:>9,d} rows/s, ours {r['ours_rows_per_s']:>9,d} rows/s "
                      f"({r['speedup']}x)", flush=True)
    finally:
        server.stop()
        shutil.rmtree(base, ignore_errors=True)
    if options.json:
        print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
