"""Capture into a lakehouse on S3 (the tests' own SeaweedFS server): exactly-once under SIGKILL,
and two captures racing for one source.

The S3 endpoint and credentials reach the captures through the environment only (the
pipeline file names just ``s3://bucket/prefix``), as they would from an instance profile or a
deployment's secrets; the test reads bronze back the same way.
"""

from __future__ import annotations

import random
import time

import psycopg
import pytest
from psycopg.rows import dict_row

from pipelines.local_s3 import LocalS3
from tests.pipelines.exactly_once_support import (
    PREFIX,
    CaptureProcess,
    Workload,
    check_exactly_once,
    create_oracle_slot,
    create_schema,
    offsets,
    oracle_commit_lsns,
    pipeline_yaml,
    slot_ahead,
    slot_confirmed,
    topic,
    wait_until,
)
from tests.support.bronze_rows import read_topic, snapshot_completed
from tests.support.capture_process import kill_after, kill_mid_snapshot

pytestmark = [pytest.mark.integration, pytest.mark.postgres]

SEED = 20_261_127
SIZES = {"accounts": 100, "big": 3_000, "orders": 50}


def _dbname(dsn: str) -> str:
    return dict(p.split("=", 1) for p in dsn.split())["dbname"]


@pytest.fixture
def s3_env(s3_server: LocalS3, monkeypatch: pytest.MonkeyPatch) -> LocalS3:
    """The local S3 server's endpoint and credentials as AWS_* variables of this process and of
    the captures it starts."""
    for key, value in s3_server.env().items():
        monkeypatch.setenv(key, value)
    return s3_server


def _logs_text(capture: CaptureProcess) -> str:
    return "".join(p.read_text(errors="replace") for p in sorted(capture.logs.glob("capture-*.*")))


def test_sigkills_during_snapshot_and_streaming_on_s3_leave_bronze_exactly_once(pg_db, tmp_path, s3_root, s3_env):
    root, db = s3_root, _dbname(pg_db)
    slot, oracle = f"c_{db[-40:]}", f"o_{db[-40:]}"
    create_schema(pg_db, **SIZES)
    assert create_oracle_slot(pg_db, oracle), "the test_decoding oracle slot is needed"
    config = tmp_path / "pipeline.yaml"
    config.write_text(pipeline_yaml(root, pg_db, slot=slot, interval_ms=50, max_records=400))
    rng = random.Random(SEED)
    capture = CaptureProcess(config, tmp_path)
    workload = Workload(pg_db, SEED, SIZES).start()
    marks: list = []
    try:
        kill_mid_snapshot(capture, root, None, source=PREFIX, big_topic=topic("big"), timeout=120, interval=0.1)
        capture.start()
        assert wait_until(lambda: capture.running and snapshot_completed(root, PREFIX), 180, 0.5), capture.tail()
        with psycopg.connect(pg_db, row_factory=dict_row, autocommit=True) as conn:
            for _ in range(4):
                kill_after(capture, rng.uniform(0.3, 1.5))
                marks.append((slot_confirmed(conn, slot), offsets(root)))
    finally:
        workload.stop()
        if capture.proc is not None:
            capture.kill()
    assert workload.committed > 50, workload
    final = capture.run_until_idle()
    assert "0 snapshot rows" in final.stdout.read_text(), final.tail()
    problems = check_exactly_once(root, pg_db, slot=slot, oracle_slot=oracle)
    commits = oracle_commit_lsns(pg_db, oracle)
    for confirmed, rows in marks:
        problems += slot_ahead(confirmed, rows, slot, commits)
    assert not problems, "after 5 SIGKILLs on S3:\n" + "\n".join(problems)
    assert s3_env.secret_access_key not in _logs_text(capture)


def test_two_captures_racing_on_one_source_in_one_bucket(pg_db, tmp_path, s3_root, s3_env):
    """Both start at once; the writer lease (a conditional create in the bucket) lets one run and
    refuses the other with a message naming the holder; bronze is then the source exactly once."""
    db = _dbname(pg_db)
    create_schema(pg_db, accounts=20, big=200, orders=10)
    oracle = f"o_{db[-40:]}"
    assert create_oracle_slot(pg_db, oracle), "the test_decoding oracle slot is needed"
    config = tmp_path / "pipeline.yaml"
    config.write_text(pipeline_yaml(s3_root, pg_db, slot=f"c_{db[-40:]}", interval_ms=50, max_records=100))
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    first, second = CaptureProcess(config, tmp_path / "a"), CaptureProcess(config, tmp_path / "b")
    try:
        first.start(), second.start()
        deadline = time.monotonic() + 120
        while first.running and second.running and time.monotonic() < deadline:
            time.sleep(0.1)
        loser, winner = (first, second) if not first.running else (second, first)
        assert winner.running, f"both captures ended:\n{first.tail()}\n{second.tail()}"
        assert loser.proc is not None and loser.proc.returncode != 0
        assert "already being written by capture on host" in loser.stderr.read_text(), loser.tail()
        assert wait_until(lambda: snapshot_completed(s3_root, PREFIX), 120, 0.3), winner.tail()
        with psycopg.connect(pg_db, autocommit=True) as conn:
            conn.execute("INSERT INTO accounts VALUES (-7, 1, 'after the race')")
        assert wait_until(lambda: any(r["key"] and '-7' in r["key"] for r in read_topic(s3_root, topic("accounts"))),
                          60, 0.3), winner.tail()
    finally:
        for capture in (first, second):
            if capture.running:
                capture.kill()
    problems = check_exactly_once(s3_root, pg_db, slot=f"c_{db[-40:]}", oracle_slot=oracle)
    assert not problems, "\n".join(problems)


@pytest.mark.mariadb
def test_mariadb_capture_on_s3_keeps_its_schema_history_there_across_runs(mariadb_db, tmp_path, s3_root, s3_env):
    """The binlog carries no table structure: the second run replays the DDL history it stored on S3
    and decodes the rows written after an ALTER with their new column."""
    import pymysql

    from pipelines.cli import main
    from tests.support.mariadb_pipeline import SOURCE, mariadb_pipeline_text

    database = str(mariadb_db["database"])
    conn = pymysql.connect(**mariadb_db, autocommit=True)  # type: ignore[arg-type]
    with conn.cursor() as cur:
        cur.execute("CREATE TABLE t (id int PRIMARY KEY, name varchar(20))")
        cur.execute("INSERT INTO t VALUES (1, 'a'), (2, 'b'), (3, 'c')")
    config = tmp_path / "pipeline.yaml"
    config.write_text(mariadb_pipeline_text(s3_root, mariadb_db, server_id=5411))
    assert main(["capture", "-c", str(config), "--until-idle"]) == 0
    with conn.cursor() as cur:
        cur.execute("ALTER TABLE t ADD COLUMN extra int")
        cur.execute("INSERT INTO t VALUES (4, 'd', 7)")
        cur.execute("UPDATE t SET name = 'z' WHERE id = 1")
    conn.close()
    assert main(["capture", "-c", str(config), "--until-idle"]) == 0
    rows = read_topic(s3_root, f"{SOURCE}.{database}.t")
    assert sorted((r["op"], r["key"]) for r in rows) == sorted(
        [("r", '{"id":1}'), ("r", '{"id":2}'), ("r", '{"id":3}'), ("c", '{"id":4}'), ("u", '{"id":1}')])
    (created,) = [r for r in rows if r["op"] == "c"]
    assert '"after":{"id":4,"name":"d","extra":7}' in created["value"], created["value"]
    assert any(r["op"] == "u" and '"after":{"id":1,"name":"z","extra":null}' in r["value"] for r in rows)
