"""The operations commands on real servers: ``reset`` (forget, or rewind with ``--to``),
``decommission`` (PostgreSQL slot and publication; MariaDB has nothing to drop), with their
confirmation rules. Bronze is checked against the source with the exactly-once helpers."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import orjson
import psycopg
import pymysql
import pytest
from psycopg.rows import dict_row

from pipelines.cli import main
from pipelines.operations import CancelledError, Prompt, confirm
from tests.pipelines.exactly_once_support import (
    PREFIX,
    CaptureProcess,
    create_schema,
    lsn_int,
    pipeline_yaml,
    read_bronze,
)
from tests.support.bronze_rows import read_offsets, read_topic, state_problems
from tests.support.mariadb_pipeline import SOURCE, mariadb_pipeline_text


def _slot(pg_db: str) -> str:
    return "c_" + dict(p.split("=", 1) for p in pg_db.split())["dbname"][-40:]


def _pg_setup(pg_db: str, tmp_path: Path, **options: str) -> tuple[str, Path]:
    root = str(tmp_path / "lake")
    create_schema(pg_db, big=5, accounts=5, orders=5)
    config = tmp_path / "pipeline.yaml"
    config.write_text(pipeline_yaml(root, pg_db, slot=_slot(pg_db), interval_ms=100, max_records=100, **options))
    return root, config


def _capture(config: Path) -> int:
    return main(["-q", "capture", "-c", str(config), "--until-idle"])


def _sql(dsn: str, *statements: str) -> None:
    with psycopg.connect(dsn, autocommit=True) as conn:
        for s in statements:
            conn.execute(s)


def _slot_row(dsn: str, slot: str) -> dict[str, Any] | None:
    with psycopg.connect(dsn, row_factory=dict_row) as conn:
        return conn.execute("SELECT confirmed_flush_lsn::text AS confirmed FROM pg_replication_slots "
                            "WHERE slot_name = %s", (slot,)).fetchone()


def _order_ids(root: str) -> list[int]:
    return sorted(int(orjson.loads(r["key"])["id"]) for r in read_bronze(root, "orders") if r["op"] in ("c", "r"))


# -- reset ----------------------------------------------------------------------------------------


@pytest.mark.integration
@pytest.mark.postgres
def test_reset_forgets_offsets_without_connecting_and_the_next_capture_snapshots_again(pg_db, tmp_path, capsys):
    root, config = _pg_setup(pg_db, tmp_path)
    assert _capture(config) == 0
    _sql(pg_db, "INSERT INTO orders VALUES (6, 1, 1, 'six')", "UPDATE accounts SET balance = 5 WHERE id = 1")
    assert _capture(config) == 0
    # the database is unreachable for reset: it needs no connection (nor secrets)
    offline = tmp_path / "offline.yaml"
    offline.write_text(re.sub(r"port: \d+", "port: 1", config.read_text()).replace(
        "user: postgres}", "user: postgres, password: '${NOT_SET_ANYWHERE}'}"))
    capsys.readouterr()
    assert main(["reset", "-c", str(offline), "--source", PREFIX, "--yes"]) == 0
    assert "offsets reset" in capsys.readouterr().out
    last = read_offsets(root, PREFIX)[-1]
    assert (last["records"], last["snapshot_completed"]) == (0, False)
    assert main(["capture", "-c", str(config), "--until-idle"]) == 0
    out = capsys.readouterr().out
    assert "no stored offset: initial snapshot" in out and "16 snapshot rows" in out, out
    rows = read_bronze(root, "orders")
    assert [r["seq"] for r in rows] == list(range(1, len(rows) + 1))  # seq continues after the reset
    assert sum(r["op"] == "r" for r in rows) == 5 + 6
    # bronze replayed in seq order equals the source: the new snapshot's rows are the newest
    with psycopg.connect(pg_db, row_factory=dict_row) as conn:
        for t in ("accounts", "big", "orders"):
            source = {r["id"]: r for r in conn.execute(f"SELECT * FROM {t}").fetchall()}
            assert not state_problems(read_bronze(root, t), source), t


@pytest.mark.integration
@pytest.mark.postgres
def test_reset_needs_yes_off_a_terminal_and_names_declared_sources(pg_db, tmp_path, capsys):
    root, config = _pg_setup(pg_db, tmp_path)
    assert main(["reset", "-c", str(config), "--source", PREFIX]) == 2
    assert "reset needs --yes when not run from a terminal" in capsys.readouterr().err
    assert main(["reset", "-c", str(config), "--source", "nope", "--yes"]) == 2
    err = capsys.readouterr().err
    assert "no source named 'nope'" in err and f"declared: {PREFIX}" in err and "Traceback" not in err
    assert main(["decommission", "-c", str(config), "--source", "nope", "--yes"]) == 2
    assert read_offsets(root, PREFIX) == []  # nothing written


def test_confirmation_on_a_terminal_asks_for_the_name():
    class Tty:
        def isatty(self) -> bool:
            return True

    asked: list[str] = []

    def answer(text: str) -> Any:
        return lambda prompt: (asked.append(prompt), text)[1]

    confirm("source", "pg", "reset source pg.", yes=False, command="reset", prompt=Prompt(Tty(), answer("pg")))  # type: ignore[arg-type]
    assert "Type the source name (pg)" in asked[0]
    with pytest.raises(CancelledError, match="not confirmed"):
        confirm("source", "pg", "reset.", yes=False, command="reset", prompt=Prompt(Tty(), answer("pgx")))  # type: ignore[arg-type]


# -- rewind (PostgreSQL) ----------------------------------------------------------------------------


@pytest.mark.integration
@pytest.mark.postgres
def test_rewind_before_the_slots_confirmed_lsn_is_refused_and_to_a_later_lsn_skips_to_it(pg_db, tmp_path, capsys):
    root, config = _pg_setup(pg_db, tmp_path)
    slot = _slot(pg_db)
    assert _capture(config) == 0
    confirmed = _slot_row(pg_db, slot)["confirmed"]  # type: ignore[index]
    capsys.readouterr()
    assert main(["reset", "-c", str(config), "--source", PREFIX, "--to", "0/10", "--yes"]) == 1
    err = capsys.readouterr().err
    assert f"has confirmed everything up to {confirmed}" in err and "cannot be served" in err, err
    assert main(["reset", "-c", str(config), "--source", PREFIX, "--to", "zz", "--yes"]) == 2
    assert "invalid LSN 'zz'" in capsys.readouterr().err
    batches = len(read_offsets(root, PREFIX))
    _sql(pg_db, "INSERT INTO orders VALUES (6, 1, 1, 'skipped')")
    with psycopg.connect(pg_db) as conn:
        after = conn.execute("SELECT pg_current_wal_insert_lsn()::text").fetchone()[0]  # past the commit
    _sql(pg_db, "INSERT INTO orders VALUES (7, 1, 1, 'kept')")
    assert main(["reset", "-c", str(config), "--source", PREFIX, "--to", after, "--yes"]) == 0
    assert f"rewound to LSN {after}" in capsys.readouterr().out
    rows = read_offsets(root, PREFIX)
    assert len(rows) == batches + 1 and orjson.loads(rows[-1]["offset"])["lsn"] == lsn_int(after)
    assert _capture(config) == 0
    assert _order_ids(root) == [1, 2, 3, 4, 5, 7]  # the transaction before the position was skipped


# -- decommission (PostgreSQL) ----------------------------------------------------------------------


@pytest.mark.integration
@pytest.mark.postgres
def test_decommission_drops_slot_and_publication_and_capture_refuses_until_reset(pg_db, tmp_path, capsys):
    root, config = _pg_setup(pg_db, tmp_path, **{"publication.name": "ops_pub"})
    slot = _slot(pg_db)
    assert _capture(config) == 0
    # not while a capture runs: the lease
    running = CaptureProcess(config, tmp_path).start_planned()
    try:
        assert main(["decommission", "-c", str(config), "--source", PREFIX, "--yes"]) == 1
        assert f"source {PREFIX} is already being written by capture" in capsys.readouterr().err
    finally:
        running.kill_running()
    assert _slot_row(pg_db, slot) is not None
    assert main(["decommission", "-c", str(config), "--source", PREFIX, "--yes"]) == 0
    out = capsys.readouterr().out
    assert f"dropped replication slot '{slot}'" in out and "dropped publication 'ops_pub'" in out, out
    assert _slot_row(pg_db, slot) is None
    with psycopg.connect(pg_db) as conn:
        assert conn.execute("SELECT count(*) FROM pg_publication WHERE pubname = 'ops_pub'").fetchone()[0] == 0
    kept = len(read_bronze(root, "orders"))
    assert kept == 5  # bronze data kept
    assert _capture(config) == 1
    err = capsys.readouterr().err
    assert f"source {PREFIX} was decommissioned" in err and "reset" in err and "Traceback" not in err
    assert _slot_row(pg_db, slot) is None  # the refused capture created nothing
    assert main(["status", "-c", str(config)]) == 0
    out = capsys.readouterr().out
    assert f"source {PREFIX} (postgres): decommissioned" in out and "decommissioned at 20" in out
    assert main(["reset", "-c", str(config), "--source", PREFIX, "--yes"]) == 0
    assert main(["status", "-c", str(config)]) == 0
    assert "offsets reset at 20" in capsys.readouterr().out
    assert _capture(config) == 0
    assert _slot_row(pg_db, slot) is not None and len(read_bronze(root, "orders")) == kept + 5


@pytest.mark.integration
@pytest.mark.postgres
def test_decommission_keeps_a_publication_capture_did_not_create(pg_db, tmp_path, capsys):
    _sql(pg_db, "CREATE PUBLICATION own_pub FOR ALL TABLES")
    _, config = _pg_setup(pg_db, tmp_path, **{"publication.name": "own_pub", "publication.autocreate.mode": "disabled"})
    assert _capture(config) == 0
    capsys.readouterr()
    assert main(["decommission", "-c", str(config), "--source", PREFIX, "--yes"]) == 0
    assert "kept publication 'own_pub'" in capsys.readouterr().out
    with psycopg.connect(pg_db) as conn:
        assert conn.execute("SELECT count(*) FROM pg_publication WHERE pubname = 'own_pub'").fetchone()[0] == 1


# -- MariaDB ------------------------------------------------------------------------------------------


def _maria(args: dict[str, Any], *statements: str) -> list[tuple[Any, ...]]:
    conn = pymysql.connect(**args, autocommit=True)
    try:
        with conn.cursor() as cur:
            rows: list[tuple[Any, ...]] = []
            for s in statements:
                cur.execute(s)
                rows = list(cur.fetchall())
            return rows
    finally:
        conn.close()


@pytest.mark.integration
@pytest.mark.mariadb
def test_mariadb_rewind_rereads_without_duplicates_and_refuses_a_purged_file(mariadb_db, tmp_path, capsys):
    args = mariadb_db
    root = str(tmp_path / "lake")
    _maria(args, "CREATE TABLE t (id int PRIMARY KEY, v int)", "INSERT INTO t VALUES (1, 1), (2, 2)")
    config = tmp_path / "pipeline.yaml"
    config.write_text(mariadb_pipeline_text(root, args, server_id=5911, capture={"commit_max_records": 100}))
    assert _capture(config) == 0
    file, pos = _maria(args, "SHOW MASTER STATUS")[0][:2]
    _maria(args, "INSERT INTO t VALUES (3, 3)", "UPDATE t SET v = 10 WHERE id = 1", "DELETE FROM t WHERE id = 2")
    assert _capture(config) == 0
    topic = f"{SOURCE}.{args['database']}.t"
    before = read_topic(root, topic)
    capsys.readouterr()
    assert main(["reset", "-c", str(config), "--source", SOURCE, "--to", f"{file}:{pos}", "--yes"]) == 0
    assert f"rewound to binlog position {file}:{pos}" in capsys.readouterr().out
    assert main(["capture", "-c", str(config), "--until-idle"]) == 0
    out = capsys.readouterr().out
    assert "replayed records were already in bronze and were skipped" in out, out
    assert read_topic(root, topic) == before  # read again, stored once
    _maria(args, "INSERT INTO t VALUES (4, 4)")
    assert _capture(config) == 0
    assert [r["op"] for r in read_topic(root, topic)][len(before):] == ["c"]
    # a file the server no longer lists (older than its oldest: purged) cannot be rewound to; the
    # session's shared server is not purged here, other tests read its binlog
    oldest = _maria(args, "SHOW BINARY LOGS")[0][0]
    base, number = oldest.rsplit(".", 1)
    purged = f"{base}.{int(number) - 1:0{len(number)}d}"
    assert main(["reset", "-c", str(config), "--source", SOURCE, "--to", f"{purged}:4", "--yes"]) == 1
    err = capsys.readouterr().err
    assert f"binlog file {purged} is no longer on the server" in err and "purged" in err, err
    assert main(["reset", "-c", str(config), "--source", SOURCE, "--to", f"{file}:999999999", "--yes"]) == 1
    assert f"position 999999999 is outside binlog file {file}" in capsys.readouterr().err
    assert main(["reset", "-c", str(config), "--source", SOURCE, "--to", "3E11FA47-71CA-11E1-9E33-C80AA9429562:1-5",
                 "--yes"]) == 2
    assert "GTID set" in capsys.readouterr().err
    assert main(["decommission", "-c", str(config), "--source", SOURCE, "--yes"]) == 0
    assert "nothing to drop on the mariadb server" in capsys.readouterr().out
    assert _capture(config) == 1
    assert f"source {SOURCE} was decommissioned" in capsys.readouterr().err


@pytest.mark.integration
def test_mariadb_rewind_to_a_gtid_position_rereads_exactly_what_followed_it(mariadb_db, tmp_path, capsys):
    args = mariadb_db
    root = str(tmp_path / "lake")
    _maria(args, "CREATE TABLE g (id int PRIMARY KEY, v int)", "INSERT INTO g VALUES (1, 1)")
    config = tmp_path / "pipeline.yaml"
    config.write_text(mariadb_pipeline_text(root, args, server_id=5912, capture={"commit_max_records": 100}))
    assert _capture(config) == 0
    _maria(args, "INSERT INTO g VALUES (2, 2)")
    (gtid,), = _maria(args, "SELECT @@gtid_binlog_pos")  # the transaction that inserted row 2
    _maria(args, "INSERT INTO g VALUES (3, 3)", "UPDATE g SET v = 10 WHERE id = 1")
    assert _capture(config) == 0
    topic = f"{SOURCE}.{args['database']}.g"
    before = read_topic(root, topic)
    capsys.readouterr()

    assert main(["reset", "-c", str(config), "--source", SOURCE, "--to", gtid, "--yes"]) == 0
    out = capsys.readouterr().out
    assert f"(right after GTID position {gtid})" in out, out
    file, pos = re.search(r"binlog position (\S+):(\d+) \(right after", out).groups()  # type: ignore[union-attr]
    (server_says,), = _maria(args, f"SELECT BINLOG_GTID_POS('{file}', {pos})")  # the server's own view
    assert server_says == gtid
    assert main(["capture", "-c", str(config), "--until-idle"]) == 0
    out = capsys.readouterr().out
    # the two transactions after the GTID (insert 3, update 1) are read again, nothing before them
    assert "2 replayed records were already in bronze and were skipped" in out, out
    assert read_topic(root, topic) == before

    domain, server, sequence = gtid.split("-")
    assert main(["reset", "-c", str(config), "--source", SOURCE, "--to", f"{domain}-{server}-{int(sequence) + 10**6}",
                 "--yes"]) == 1
    assert "the binlog has no point after GTID position" in capsys.readouterr().err
