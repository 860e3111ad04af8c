"""Binlog values python-mysql-replication rejects (`cdc_sources.mysql.binlog_values`), captured
end to end from a real MariaDB and compared with what Debezium's own classes read from the same
server (the converter probe's live mode: its JDBC snapshot, its binlog client and row
deserializers): latin1 bytes that windows-1252 leaves undefined, and dates that do not exist
(``ALLOW_INVALID_DATES``) under each ``event.processing.failure.handling.mode``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
import pymysql
import pytest
from deltalake import DeltaTable

from bronze.schema import topic_path
from cdc_sources.spi import CdcError
from pipelines.capture import run_capture
from pipelines.config import parse_pipeline
from tests.cdc_sources.mysql.converters.dbz import run_probe

pytestmark = [pytest.mark.mariadb, pytest.mark.integration, pytest.mark.conformance]

LATIN1 = ("CREATE TABLE t (id INT PRIMARY KEY, l1 VARCHAR(20) CHARACTER SET latin1, "
          "c1 CHAR(3) CHARACTER SET latin1, tx TEXT CHARACTER SET latin1) DEFAULT CHARSET=utf8mb4")
LATIN1_ROWS = ["CONCAT('a', 0x81, 0x8D, 0x8F, 0x90, 0x9D, 'z'), 0x8180, 0x9D", "CONCAT(0x80, 0xE9), 'x', ''"]
DATES = ("CREATE TABLE t (id INT PRIMARY KEY, d DATE, dn DATE NOT NULL, dtm DATETIME, dtm6 DATETIME(6), "
         "dtmn DATETIME NOT NULL) DEFAULT CHARSET=utf8mb4")
DATE_ROWS = ["'2020-02-30', '2021-04-31', '2020-02-31 10:11:12', '2020-02-30 01:02:03.456789', "
             "'2021-06-31 00:00:00'",
             "'2020-00-15', '2020-02-29', NULL, '2020-00-01 00:00:00', '2024-02-29 23:59:59'"]
MODES = ("fail", "warn", "skip")
LATIN1_DB, DATES_DB = "binlog_values_latin1", "binlog_values_dates"
"""``event.processing.failure.handling.mode`` values: one lakehouse each."""


@dataclass
class Captured:
    """What our captures wrote (per mode: (op, table, id) -> ``after``; the error of a failed
    run) and what Debezium read from the same server (per request: snapshot and binlog rows)."""

    ours: dict[str, dict[tuple[str, str, int], dict[str, Any]]]
    errors: dict[str, str]
    latin1: dict[str, dict[int, Any]]
    dates: dict[str, dict[int, Any]]


def _execute(args: dict[str, Any], *statements: str) -> tuple[str, int]:
    """Run ``statements`` with ``ALLOW_INVALID_DATES``; the binlog position before them."""
    conn = pymysql.connect(**args, autocommit=True)
    try:
        with conn.cursor() as cur:
            cur.execute("SET SESSION sql_mode = 'ALLOW_INVALID_DATES'")
            cur.execute("SHOW MASTER STATUS")
            file, pos = cur.fetchone()[:2]
            for sql in statements:
                cur.execute(sql)
        return str(file), int(pos)
    finally:
        conn.close()


def _capture(root: str, args: dict[str, Any], mode: str) -> None:
    opts = {"database.include.list": f"{LATIN1_DB},{DATES_DB}", "database.server.id": "5471",
            "event.processing.failure.handling.mode": mode}
    lines = "".join(f'      {k}: "{v}"\n' for k, v in opts.items())
    text = (f'pipeline: t\nlakehouse: {{root: "{root}"}}\nsources:\n  - name: my\n    connector: mariadb\n'
            f"    connection: {{host: 127.0.0.1, port: {args['port']}, user: root}}\n    options:\n{lines}")
    run_capture(parse_pipeline(text, env={}), until_idle=True)


def _bronze(root: str) -> dict[tuple[str, str, int], dict[str, Any]]:
    """(op, "l" or "t", id) -> ``after`` of the latin1 ("l") and the dates ("t") tables' records."""
    out = {}
    for table, database in (("l", LATIN1_DB), ("t", DATES_DB)):
        path = topic_path(root, f"my.{database}.t")
        rows = DeltaTable(path).to_pyarrow_table().to_pylist() if os.path.exists(path) else []
        for value in (orjson.loads(r["value"]) for r in rows if r["value"] is not None):
            out[(value["op"], table, value["after"]["id"])] = value["after"]
    return out


def _rows(answer_rows: list[Any]) -> dict[int, Any]:
    """Debezium's rendered rows by id (rows it could not read are left out)."""
    parsed = [json.loads(r) if isinstance(r, str) else r for r in answer_rows]
    return {p["id"]: p for p in parsed if "error" not in p}


@pytest.fixture(scope="module")
def captured(mariadb_server: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Captured]:
    """Latin1 rows snapshotted then streamed, invalid dates streamed (a database each); captured once
    per mode, and read by Debezium's classes in one probe run."""
    server = mariadb_server.connect_args()
    _execute(server, *(f"DROP DATABASE IF EXISTS {d}" for d in (LATIN1_DB, DATES_DB)),
             *(f"CREATE DATABASE {d}" for d in (LATIN1_DB, DATES_DB)))
    args = mariadb_server.connect_args(LATIN1_DB)
    try:
        start = _execute(args, LATIN1, f"CREATE TABLE {DATES_DB}.{DATES.removeprefix('CREATE TABLE ')}",
                         *(f"INSERT INTO t VALUES ({i + 1}, {r})" for i, r in enumerate(LATIN1_ROWS)))
        roots = {mode: str(tmp_path_factory.mktemp(f"lake-{mode}")) for mode in MODES}
        for mode in MODES:
            _capture(roots[mode], args, mode)  # the snapshot: latin1 rows 1 and 2
        _execute(args, *(f"INSERT INTO t VALUES ({i + 3}, {r})" for i, r in enumerate(LATIN1_ROWS)),
                 *(f"INSERT INTO {DATES_DB}.t VALUES ({i + 1}, {r})" for i, r in enumerate(DATE_ROWS)))
        errors = {}
        for mode in MODES:
            try:
                _capture(roots[mode], args, mode)
            except CdcError as exc:
                errors[mode] = str(exc)
        live = {"host": args["host"], "port": args["port"], "user": args["user"], "password": args.get("password", ""),
                "serverId": 914_271, "binlogFile": start[0], "binlogPosition": start[1]}
        answers = run_probe([
            {"config": {}, "ddl": LATIN1,
             "live": {**live, "database": LATIN1_DB, "query": "SELECT * FROM t ORDER BY id"}},
            *({"config": {"event.processing.failure.handling.mode": mode}, "ddl": DATES,
               "live": {**live, "database": DATES_DB, "query": "SELECT * FROM t WHERE FALSE"}} for mode in MODES)])
        for answer in answers:
            assert "error" not in answer and "schemaError" not in answer, answer
        yield Captured({mode: _bronze(roots[mode]) for mode in MODES}, errors,
                       {"snapshot": _rows(answers[0]["snapshotRows"]), "binlog": _rows(answers[0]["binlogRows"])},
                       {mode: _rows(a["binlogRows"]) for mode, a in zip(MODES, answers[1:], strict=True)})
    finally:
        _execute(server, *(f"DROP DATABASE IF EXISTS {d}" for d in (LATIN1_DB, DATES_DB)))


def test_undecodable_latin1_bytes_are_captured_as_debezium_reads_them(captured):
    """Streamed: one U+FFFD per byte windows-1252 leaves undefined, as Debezium's binlog reader;
    snapshotted: the server's own latin1 (U+0081...), as Debezium's JDBC snapshot. (With ``fail``
    the invalid dates streamed after them stop the batch holding the streamed rows.)"""
    for mode in MODES:
        ours = captured.ours[mode]
        assert [ours[("r", "l", i)] for i in (1, 2)] == [captured.latin1["snapshot"][i] for i in (1, 2)]
        if mode == "fail":
            continue
        assert [ours[("c", "l", i)] for i in (3, 4)] == [captured.latin1["binlog"][i] for i in (3, 4)]
        assert ours[("c", "l", 3)]["l1"] == "a" + "\ufffd" * 5 + "z"
        assert ours[("r", "l", 1)]["l1"] == "a\x81\x8d\x8f\x90\x9dz"


@pytest.mark.parametrize("mode", ["warn", "skip"])
def test_invalid_dates_stream_as_the_epoch_like_debezium_when_failures_do_not_stop(captured, mode):
    ours = captured.ours[mode]
    assert mode not in captured.errors
    assert [ours[("c", "t", i)] for i in (1, 2)] == [captured.dates[mode][i] for i in (1, 2)]
    assert ours[("c", "t", 1)] == {"id": 1, "d": 0, "dn": 0, "dtm": 0, "dtm6": 0, "dtmn": 0}
    assert ours[("c", "t", 2)]["d"] is None and ours[("c", "t", 2)]["dtm6"] is None  # zero parts stay null


def test_warn_mode_logs_each_invalid_date(caplog):
    from cdc_sources.mysql import binlog_values

    binlog_values.failure_mode("warn")
    with caplog.at_level("WARNING", logger="cdc_sources.mysql.binlog_values"):
        assert binlog_values._invalid("date", "2020-02-30", binlog_values.EPOCH_DATE) == binlog_values.EPOCH_DATE
    binlog_values.failure_mode("skip")
    assert binlog_values._invalid("date", "2020-02-31", binlog_values.EPOCH_DATE) == binlog_values.EPOCH_DATE
    binlog_values.failure_mode("fail")
    assert "'2020-02-30' is no date" in caplog.text and "2020-02-31" not in caplog.text


def test_an_invalid_date_stops_the_stream_with_a_clear_error_as_debezium_does(captured):
    text = captured.errors["fail"]
    assert f"table {DATES_DB}.t" in text and "invalid date '2020-02-30'" in text, text
    assert "event.processing.failure.handling.mode=warn" in text, text
    assert ("c", "t", 1) not in captured.ours["fail"]
    assert 1 not in captured.dates["fail"] and 2 in captured.dates["fail"]  # Debezium fails on that event too


def test_an_invalid_date_in_a_snapshot_follows_the_same_mode(mariadb_db, tmp_path):
    """Snapshotted, an invalid DATE stops capture with ``fail`` (Debezium's snapshot stops on it:
    Connector/J cannot read it) and is the epoch with ``warn``/``skip``, as when streamed."""
    _execute(mariadb_db, "CREATE TABLE t (id INT PRIMARY KEY, d DATE, dn DATE NOT NULL)",
             "INSERT INTO t VALUES (1, '2020-02-30', '2021-04-31'), (2, '2020-00-15', '2024-02-29')")
    def text(root: Path, mode: str) -> str:
        return (f'pipeline: t\nlakehouse: {{root: "{root}"}}\nsources:\n  - name: my\n    connector: mariadb\n'
                f"    connection: {{host: 127.0.0.1, port: {mariadb_db['port']}, user: root}}\n"
                f'    options: {{database.include.list: "{mariadb_db["database"]}", database.server.id: "5472", '
                f'event.processing.failure.handling.mode: "{mode}"}}\n')

    with pytest.raises(CdcError) as info:
        run_capture(parse_pipeline(text(tmp_path / "fail", "fail"), env={}), until_idle=True)
    assert "column d: invalid date '2020-02-30'" in str(info.value), info.value
    assert "event.processing.failure.handling.mode=warn" in str(info.value)
    root = tmp_path / "warn"
    run_capture(parse_pipeline(text(root, "warn"), env={}), until_idle=True)
    rows = DeltaTable(topic_path(str(root), f"my.{mariadb_db['database']}.t")).to_pyarrow_table().to_pylist()
    after = sorted((orjson.loads(r["value"])["after"] for r in rows), key=lambda a: a["id"])
    assert after == [{"id": 1, "d": 0, "dn": 0}, {"id": 2, "d": None, "dn": 19782}]
