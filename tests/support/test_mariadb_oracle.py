"""The MariaDB exactly-once oracle (``mariadb-binlog`` parsed) gives the events a known workload
must produce, at the positions the server itself lists (``SHOW BINLOG EVENTS``)."""

from __future__ import annotations

import pymysql
import pytest

from tests.support.mariadb_oracle import binlog_events

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
