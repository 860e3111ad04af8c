"""The MariaDB exactly-once oracle (``mariadb-binlog`` parsed) gives the events a known workload
must produce, at the positions the server itself lists (``SHOW BINLOG EVENTS``)."""

from __future__ import annotations

import orjson
import pymysql
import pytest

from tests.support.bronze_rows import event_diff
from tests.support.mariadb_oracle import binlog_events, bronze_events

pytestmark = [pytest.mark.integration, pytest.mark.mariadb]


def test_the_oracle_reads_every_row_change_in_commit_order(mariadb_db):
    conn = pymysql.connect(**mariadb_db, autocommit=True)
    try:
        with conn.cursor() as cur:
            cur.execute("CREATE TABLE t (note VARCHAR(20), id INT PRIMARY KEY)")
            cur.execute("CREATE TABLE other (id INT PRIMARY KEY)")
            cur.execute("SHOW MASTER STATUS")
            file, start = cur.fetchone()[:2]
            gtids = []
            for sql in ("INSERT INTO t VALUES ('a ### SET', 1), ('it''s', 2)", "INSERT INTO other VALUES (7)",
                        "UPDATE t SET note = 'b' WHERE id = 1", "UPDATE t SET id = -3 WHERE id = 2",
                        "DELETE FROM t WHERE id = 1",
                        # one transaction of several rows events (each at most ~8 KB)
                        "INSERT INTO t SELECT REPEAT('x', 20), seq FROM seq_100_to_2099"):
                cur.execute(sql)
                cur.execute("SELECT @@last_gtid")
                gtids.append(cur.fetchone()[0])
    finally:
        conn.close()
    events = binlog_events(mariadb_db, tables=["t"], file=file, pos=start)
    insert, _, update, pk_change, delete, big = gtids
    assert events["t"][:8] == [
        (insert, 0, "c", 1), (insert, 1, "c", 2),
        (update, 0, "u", 1),
        (pk_change, 0, "d", 2), (pk_change, 0, None, 2), (pk_change, 0, "c", -3),
        (delete, 0, "d", 1), (delete, 0, None, 1),
    ]
    assert events["t"][8:] == [(big, n, "c", 100 + n) for n in range(2000)]


def _bronze_row(op, key, gtid=None, pos=0, row=0):
    value = None if op is None else orjson.dumps({"op": op, "source": {"gtid": gtid, "pos": pos, "row": row}}).decode()
    return {"op": op, "key": orjson.dumps({"id": key}).decode(), "value": value}


def test_a_replayed_record_is_the_same_event_and_shows_as_a_duplicate():
    rows = [_bronze_row("c", 1, "0-1-5", 400, 0), _bronze_row("c", 2, "0-1-5", 400, 1),
            _bronze_row("d", 1, "0-1-6", 900, 0), _bronze_row(None, 1),
            _bronze_row("c", 2, "0-1-5", 400, 1)]  # replayed after a crash
    events = bronze_events(rows)
    assert events == [("0-1-5", 0, "c", 1), ("0-1-5", 1, "c", 2), ("0-1-6", 0, "d", 1), ("0-1-6", 0, None, 1),
                      ("0-1-5", 1, "c", 2)]
    expected = events[:4]
    assert "1 surplus (duplicates)" in event_diff(events, expected)[0]
