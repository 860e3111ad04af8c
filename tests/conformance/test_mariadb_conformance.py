"""Our MariaDB connector (``connector: mariadb``) against the real Debezium engine: same server,
same workload, ``key`` and ``value`` compared field by field on every topic either side wrote.

Debezium's MariaDB connector jar cannot be had here, so the peer is Debezium 3.6.3's MySQL
connector reading the same MariaDB server by binlog file and position (see
`debezium_mysql_runner`). What that connector cannot know on MariaDB, or names differently
from the MariaDB connector, is listed in `KNOWN_DIFFERENCES` with the reason (also in
docs/mysql.md); everything else must be equal.

Ours snapshots first, then Debezium snapshots (same binlog position: nothing is written in
between) and streams the workload, then ours streams it.
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Callable, Sequence
from typing import Any

import pymysql
import pytest
from deltalake import DeltaTable

from bronze.schema import bronze_root, topic_path
from pipelines.capture import run_capture
from pipelines.config import parse_pipeline
from tests.conformance.compare import DEFAULT_IGNORE, diff_records
from tests.conformance.debezium_mysql_runner import run_debezium_mariadb
from tests.conformance.debezium_runner import DbzRecord

pytestmark = [pytest.mark.integration, pytest.mark.mariadb, pytest.mark.conformance]

PREFIX = "conf"

KNOWN_DIFFERENCES: dict[str, str] = {
    "value.source.connector":
        "the MySQL connector names itself 'mysql'; Debezium's MariaDB connector, which ours follows, 'mariadb'",
    "headers.__debezium.context.connectorName": "the same name, in the context header",
    "value.source.gtid":
        "the MySQL connector reads only MySQL GTID events; MariaDB's GTID events (domain-server-sequence) reach "
        "it as events of an unknown type, so it writes null where the MariaDB connector writes the GTID",
}
"""Record paths where the MySQL connector on MariaDB cannot agree with a MariaDB connector, and why."""

IGNORE = DEFAULT_IGNORE | frozenset(KNOWN_DIFFERENCES)

TRANSACTION_DIFFERENCES: dict[str, str] = {
    "value.transaction":
        "the MySQL connector starts a transaction at a BEGIN event or a MySQL GTID event; MariaDB sends "
        "replicas that announce GTID support (the connector's binlog client does) a MariaDB GTID event "
        "instead, so the MySQL connector sees no transaction and writes transaction: null",
}
"""What the MySQL connector on MariaDB cannot know with ``provide.transaction.metadata=true``."""

TRANSACTION_TOPIC = f"{PREFIX}.transaction"
"""The BEGIN/END topic: only ours writes it on MariaDB (see `TRANSACTION_DIFFERENCES`)."""

SNAPSHOT_TIMING = ("ts_ms", "ts_us", "ts_ns")


def _ours(root: str, db: dict[str, Any], options: dict[str, str]) -> Callable[[], None]:
    opts = {"database.include.list": db["database"], "database.server.id": "5411", **options}
    lines = "".join(f'      {k}: "{v}"\n' for k, v in opts.items())
    text = (f'pipeline: conf\nlakehouse: {{root: "{root}"}}\nsources:\n  - name: {PREFIX}\n'
            f"    connector: mariadb\n    connection: {{host: 127.0.0.1, port: {db['port']}, user: root}}\n"
            f"    options:\n{lines}")
    config = parse_pipeline(text, env={})
    return lambda: run_capture(config, until_idle=True) and None


def _bronze_topics(root: str) -> list[str]:
    base = bronze_root(root)
    return sorted(name for name in os.listdir(base) if not name.startswith("_")) if os.path.isdir(base) else []


def _bronze(root: str, topics: Sequence[str]) -> list[tuple[str, str | None, str | None, dict[str, str]]]:
    out = []
    for topic in topics:
        path = topic_path(root, topic)
        if not os.path.exists(path):
            continue
        rows = sorted(DeltaTable(path).to_pyarrow_table().to_pylist(), key=lambda r: r["seq"])
        out.extend((topic, r["key"], r["value"], dict(r["headers"] or [])) for r in rows)
    return out


def _neutral_snapshot(value: str | None) -> str | None:
    """Blank the times of snapshot records: the two snapshots run at different moments."""
    if value is None:
        return None
    doc = json.loads(value)
    if doc.get("source", {}).get("snapshot") in ("true", "first", "last", "last_in_data_collection",
                                                 "first_in_data_collection"):
        for name in SNAPSHOT_TIMING:
            doc["source"][name] = "<snapshot>"
    return json.dumps(doc)


def _compare(root: str, theirs: list[DbzRecord], *, ignore: frozenset[str] = IGNORE,
             only_ours: frozenset[str] = frozenset()) -> list[str]:
    assert theirs, "Debezium produced no records"
    topics = sorted((set(_bronze_topics(root)) | {r.topic for r in theirs}) - only_ours)
    ours = [(t, k, _neutral_snapshot(v), h) for t, k, v, h in _bronze(root, topics)]
    neutral = [dataclasses.replace(r, value=_neutral_snapshot(r.value)) for r in theirs]
    return diff_records(ours, neutral, ignore=ignore)


def _execute(db: dict[str, Any], statements: Sequence[str]) -> None:
    conn = pymysql.connect(**db, autocommit=True)
    try:
        with conn.cursor() as cur:
            for sql in statements:
                cur.execute(sql)
    finally:
        conn.close()


def _run(db: dict[str, Any], tmp_path: Any, setup: Sequence[str], workload: Sequence[str],
         options: dict[str, str]) -> tuple[str, list[DbzRecord]]:
    """Run both connectors; returns our lake root and Debezium's records."""
    _execute(db, setup)
    root = str(tmp_path / "lake")
    ours = _ours(root, db, options)
    ours()  # snapshot
    theirs = run_debezium_mariadb(
        host="127.0.0.1", port=int(db["port"]), user=str(db["user"]), password=str(db.get("password") or ""),
        properties={"topic.prefix": PREFIX, "database.include.list": str(db["database"]), **options},
        workload=lambda: _execute(db, workload), idle_timeout_s=4.0)
    ours()  # stream the workload
    return root, theirs


# MariaDB's own types (UUID, INET4, INET6) are left out: the MySQL connector's DDL grammar
# cannot read them and stops ("DDL statement couldn't be parsed").
SETUP = [
    "CREATE TABLE alpha (id INT PRIMARY KEY, v VARCHAR(20), n INT NOT NULL DEFAULT 0)",
    "CREATE TABLE beta (id BIGINT PRIMARY KEY, name VARCHAR(40) NOT NULL, price DECIMAL(10,2), at DATETIME(3))",
    "CREATE TABLE typed ("
    " id INT PRIMARY KEY, ti TINYINT, tiu TINYINT UNSIGNED, si SMALLINT, siu SMALLINT UNSIGNED, mi MEDIUMINT,"
    " miu MEDIUMINT UNSIGNED, i INT, iu INT UNSIGNED, bi BIGINT, biu BIGINT UNSIGNED, bo BOOLEAN, b1 BIT(1),"
    " b10 BIT(10), f FLOAT, f30 FLOAT(30), dbl DOUBLE, dec102 DECIMAL(10,2), dec300 DECIMAL(30,0),"
    " c5 CHAR(5), vc VARCHAR(20), tx TEXT, lt VARCHAR(10) CHARACTER SET latin1,"
    " bin4 BINARY(4), vb VARBINARY(10), bl BLOB, js JSON, e ENUM('x','y,z','w'), s SET('a','b','c'), y YEAR,"
    " d DATE, t0 TIME, t6 TIME(6), dt0 DATETIME, dt3 DATETIME(3), dt6 DATETIME(6), ts0 TIMESTAMP NULL,"
    " ts6 TIMESTAMP(6) NULL, g GEOMETRY, pt POINT, ls LINESTRING, mp MULTIPOINT, ttx TINYTEXT, mtx MEDIUMTEXT,"
    " ltx LONGTEXT, tbl TINYBLOB, mbl MEDIUMBLOB, lbl LONGBLOB, dnn DATE NOT NULL DEFAULT '2000-01-01')",
    "INSERT INTO alpha VALUES (1, 'a', 1), (2, 'b', 2), (3, 'c', 3)",
    "INSERT INTO beta VALUES (1, 'one', 12.34, '2024-01-02 03:04:05.123'), (2, 'nulls', NULL, NULL)",
    "INSERT INTO typed VALUES (1, -128, 255, -32768, 65535, -8388608, 16777215, -2147483648, 4294967295,"
    " -9223372036854775808, 18446744073709551615, TRUE, b'1', b'1010000001', 1.5, 2.25e-10, -1.0e300, -12345678.91,"
    " 123456789012345678901234567890, 'ab', 'héllo', 'line\\nbreak \"q\" \\\\ b', 'café', x'00ff', x'deadbeef', x'',"
    " '{\"a\": [1, 2.5, null]}', 'y,z', 'a,c', 2024, '2024-02-29', '23:59:59', '-838:59:59.000000',"
    " '2024-01-02 03:04:05', '2024-01-02 03:04:05.123', '1999-12-31 23:59:59.999999', '2024-01-02 03:04:05',"
    " '2038-01-19 03:14:07.499999', ST_GeomFromText('POLYGON((0 0,1 0,1 1,0 0))'), POINT(1.5, -2),"
    " ST_GeomFromText('LINESTRING(0 0,1 1,2 1)'), ST_GeomFromText('MULTIPOINT(1 1,2 2)'), 't', 'm', 'l', x'01',"
    " x'0203', x'', '1999-01-01')",
    "INSERT INTO typed (id) VALUES (2)",
    "SET SESSION sql_mode = ''",
    "INSERT INTO typed (id, d, dt0, dt6, ts0, dnn) VALUES (3, '0000-00-00', '0000-00-00 00:00:00',"
    " '2024-00-10 00:00:00', '0000-00-00 00:00:00', '0000-00-00')",
]

WORKLOAD = [
    "SET SESSION sql_mode = ''",  # zero dates are copied below
    "INSERT INTO alpha VALUES (4, 'd', 4)",
    "UPDATE alpha SET v = 'bb' WHERE id = 2",
    "DELETE FROM alpha WHERE id = 3",
    "UPDATE alpha SET id = 10 WHERE id = 1",
    "INSERT INTO beta VALUES (3, 'three', -0.01, '1970-01-01 00:00:00')",
    "UPDATE beta SET price = 99999999.99 WHERE id = 1",
    "DELETE FROM beta WHERE id = 2",
    "INSERT INTO typed SELECT id + 100, ti, tiu, si, siu, mi, miu, i, iu, bi, biu, bo, b1, b10, f, f30, dbl, dec102,"
    " dec300, c5, vc, tx, lt, bin4, vb, bl, js, e, s, y, d, t0, t6, dt0, dt3, dt6, ts0, ts6, g, pt, ls, mp, ttx, mtx,"
    " ltx, tbl, mbl, lbl, dnn FROM typed",
    "UPDATE typed SET dec102 = 0.01, dt6 = '1900-01-01 00:00:00', s = '', e = 'w', b10 = b'1' WHERE id = 101",
    "DELETE FROM typed WHERE id = 102",
    # multi-table transaction, multi-row event
    "BEGIN",
    "INSERT INTO alpha VALUES (20, 'tx', 5), (21, 'tx', 6)",
    "INSERT INTO beta (id, name) VALUES (20, 'tx')",
    "UPDATE alpha SET n = n + 1 WHERE id >= 20",
    "COMMIT",
    # DDL mid-stream, then rows with the new structure
    "ALTER TABLE alpha ADD COLUMN added INT DEFAULT 7, MODIFY v VARCHAR(40)",
    "UPDATE alpha SET added = 8, v = 'longer value here' WHERE id = 4",
    "ALTER TABLE beta DROP COLUMN at",
    "INSERT INTO beta VALUES (30, 'after drop', 1.00)",
    "CREATE TABLE gamma (id INT PRIMARY KEY, note VARCHAR(10))",
    "INSERT INTO gamma VALUES (1, 'new')",
    "TRUNCATE TABLE alpha",
]


def test_workload_matches_debezium(mariadb_db, tmp_path):
    root, theirs = _run(mariadb_db, tmp_path, SETUP, WORKLOAD, {"skipped.operations": "none"})
    diffs = _compare(root, theirs)
    assert diffs == [], "\n".join(diffs[:80])


def test_other_modes_filters_and_transaction_metadata_match_debezium(mariadb_db, tmp_path):
    name = mariadb_db["database"]
    setup = [*SETUP, "CREATE TABLE excluded (id INT PRIMARY KEY)", "INSERT INTO excluded VALUES (1)",
             # empty and last in snapshot order: the record before it is the snapshot's "last"
             "CREATE TABLE zz_empty (id INT PRIMARY KEY, v VARCHAR(5))"]
    workload = [*WORKLOAD[:-1], "INSERT INTO excluded VALUES (2)", "ALTER TABLE excluded ADD COLUMN x INT",
                "INSERT INTO zz_empty VALUES (1, 'late')",
                WORKLOAD[-1]]
    options = {
        "provide.transaction.metadata": "true",
        "decimal.handling.mode": "string", "time.precision.mode": "connect", "binary.handling.mode": "hex",
        "bigint.unsigned.handling.mode": "precise",
        "table.exclude.list": f"{name}.excluded",
        "column.exclude.list": f"{name}.typed.tx",
        "column.truncate.to.3.chars": f"{name}.typed.vc",
        "column.mask.with.5.chars": f"{name}.beta.name",
        "message.key.columns": f"{name}.alpha:v",
    }
    root, theirs = _run(mariadb_db, tmp_path, setup, workload, options)
    # the difference is a real one: Debezium wrote no transaction metadata, ours did
    streamed = [r.value_json() for r in theirs if r.value and r.topic.startswith(f"{PREFIX}.{name}.")
                and r.value_json()["source"]["snapshot"] == "false"]
    assert streamed and all(v["transaction"] is None for v in streamed)
    assert not any(r.topic == TRANSACTION_TOPIC for r in theirs)
    ends = [json.loads(v) for _, _, v, _ in _bronze(root, [TRANSACTION_TOPIC]) if json.loads(v)["status"] == "END"]
    # 15 transactions change captured rows: 10 single statements, the BEGIN..COMMIT block, the
    # statements after each DDL and the late insert (DDL, TRUNCATE and the excluded table have none)
    assert len(ends) == 15, ends
    diffs = _compare(root, theirs, ignore=IGNORE | frozenset(TRANSACTION_DIFFERENCES),
                     only_ours=frozenset({TRANSACTION_TOPIC}))
    assert diffs == [], "\n".join(diffs[:80])
