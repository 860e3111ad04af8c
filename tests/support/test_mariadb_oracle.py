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
            for sql in ("INSERT INTO t VALUES ('a ### SET', 1), ('it''s', 2)", "INSERT INTO other VALUES (7)",
                        "UPDATE t SET note = 'b' WHERE id = 1", "UPDATE t SET id = -3 WHERE id = 2",
                        "DELETE FROM t WHERE id = 1"):
                cur.execute(sql)
            cur.execute("SHOW BINLOG EVENTS IN %s FROM %s", (file, start))
            rows_at = [int(r[1]) for r in cur.fetchall() if r[2] in ("Write_rows_v1", "Update_rows_v1",
                                                                      "Delete_rows_v1")]
    finally:
        conn.close()
    events = binlog_events(mariadb_db, tables=["t"], file=file, pos=start)
    insert, _, update, pk_change, delete = rows_at
    assert events == {"t": [
        (file, insert, 0, "c", 1), (file, insert, 1, "c", 2),
        (file, update, 0, "u", 1),
        (file, pk_change, 0, "d", 2), (file, pk_change, 0, None, 2), (file, pk_change, 0, "c", -3),
        (file, delete, 0, "d", 1), (file, delete, 0, None, 1),
    ]}
