"""Read-only incremental snapshots on MariaDB (``read.only: true``): capture connects as a user granted
only SELECT, REPLICATION SLAVE and REPLICATION CLIENT, the snapshot is asked for through the ``file``
signal channel while a writer changes the very rows being read, capture is SIGKILLed mid-snapshot;
silver ends equal to the source (rows deleted while capture could not see them included) and the
capture user wrote nothing (the server's general log holds its every statement). The oracle reads
the source with pymysql and bronze and silver with delta-rs."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import orjson
import pymysql
import pytest

from pipelines.capture import run_capture
from pipelines.config import PipelineConfig, parse_pipeline
from tests.pipelines.test_incremental_resnapshot_mariadb import _silver, _source
from tests.support.capture_process import CaptureProcess, wait_until
from tests.support.engines import SAIL_ONLY
from tests.support.incremental_mysql import (
    Writer,
    bronze,
    execute,
    fold,
    incremental_count,
    incremental_rows,
    last_offset,
    setup_items,
    source_rows,
    topic,
)
from tests.support.resnapshot_oracle import check_silver, silver_yaml

pytestmark = [pytest.mark.integration, pytest.mark.mariadb, pytest.mark.spark]

_WRITES = re.compile(r"^\W*(INSERT|UPDATE|DELETE|REPLACE|CREATE|DROP|ALTER|TRUNCATE|RENAME|GRANT|REVOKE|LOAD|CALL|"
                     r"HANDLER|LOCK|FLUSH|PURGE|RESET|XA|SET\s+(GLOBAL|PASSWORD))\b", re.IGNORECASE)


def _text(root: str, db: dict[str, Any], user: str, signal_file: str, skipped: str) -> str:
    opts = {"database.include.list": db["database"], "table.include.list": f"{db['database']}.items",
            "database.server.id": "5481", "read.only": "true", "snapshot.locking.mode": "none",
            "signal.enabled.channels": "file", "signal.file": signal_file, "signal.poll.interval.ms": "100",
            "incremental.snapshot.chunk.size": "20", "skipped.operations": skipped}
    return (f"pipeline: ro\nlakehouse: {{root: \"{root}\"}}\nsources:\n  - name: my\n    connector: mariadb\n"
            f"    connection: {{host: 127.0.0.1, port: {db['port']}, user: {user}}}\n"
            "    options:\n" + "".join(f"      {k}: \"{v}\"\n" for k, v in opts.items())
            + "    capture: {commit_max_records: 25}\n"
            + "silver:\n" + silver_yaml(topic(db)) + "silver_options: {interval_seconds: 1}\n")


def _read_only_user(db: dict[str, Any]) -> str:
    """A user that may read every table and the binlog, and nothing else."""
    user = "ro_" + str(db["database"])[-28:]
    execute(db, f"DROP USER IF EXISTS '{user}'@'%'", f"CREATE USER '{user}'@'%'",
            f"GRANT SELECT, REPLICATION SLAVE, REPLICATION CLIENT ON *.* TO '{user}'@'%'")
    return user


@contextmanager
def _general_log(db: dict[str, Any]) -> Iterator[None]:
    """The server's general log in ``mysql.general_log`` meanwhile (every statement of every client)."""
    conn = pymysql.connect(**db)
    try:
        with conn.cursor() as cur:
            cur.execute("SELECT @@global.log_output, @@global.general_log")
            output, was_on = cur.fetchone()
    finally:
        conn.close()
    execute(db, "SET GLOBAL log_output = 'TABLE'", "TRUNCATE TABLE mysql.general_log", "SET GLOBAL general_log = ON")
    try:
        yield
    finally:
        execute(db, f"SET GLOBAL general_log = {int(was_on)}")
        execute(db, "SET GLOBAL log_output = %s", args=(output,))


def _statements_of(db: dict[str, Any], user: str) -> list[str]:
    conn = pymysql.connect(**db)
    try:
        with conn.cursor() as cur:
            cur.execute("SELECT CONVERT(argument USING utf8mb4) FROM mysql.general_log WHERE command_type = 'Query' "
                        "AND user_host LIKE %s", (f"{user}[{user}]%",))
            return [str(r[0]) for r in cur.fetchall()]
    finally:
        conn.close()


def _capture(cfg: PipelineConfig) -> None:
    run_capture(cfg, until_idle=True)


@SAIL_ONLY
def test_readonly_incremental_snapshot_through_the_file_channel(mariadb_db, tmp_path, spark):
    root, signal_file = str(tmp_path / "lake"), str(tmp_path / "signals.jsonl")
    db = mariadb_db
    setup_items(db, 600)
    user = _read_only_user(db)
    ro = {**db, "user": user, "password": ""}
    with pytest.raises(pymysql.err.OperationalError, match="denied"):  # the user cannot write
        execute(ro, "INSERT INTO dbz_signal VALUES ('x', 'log', NULL)")
    with _general_log(db):
        blind = parse_pipeline(_text(root, db, user, signal_file, "d,t"), env={})  # deletes unseen: silver keeps them
        _capture(blind)
        execute(db, "DELETE FROM items WHERE id % 7 = 0")
        _capture(blind)
        text = _text(root, db, user, signal_file, "none")
        cfg = parse_pipeline(text, env={})
        _silver(spark, cfg, root)
        config = tmp_path / "pipeline.yaml"
        config.write_text(text)

        with open(signal_file, "ab") as f:
            f.write(orjson.dumps({"id": "ro-1", "type": "execute-snapshot",
                                  "data": {"data-collections": [f"{db['database']}.items"],
                                           "type": "incremental"}}) + b"\n")
        # runs until the snapshot is done, on ids 1..300 only: ids above stay untouched however fast it runs
        writer = Writer(db, 9, top=300, ops=100_000, pause_s=0.005)
        writer.start()
        capture = CaptureProcess(config, tmp_path)
        name = topic(db)
        try:
            capture.start_planned()
            assert wait_until(lambda: incremental_count(root, name) >= 150 or not capture.running, 120, 0.02)
            assert capture.running, capture.tail()
            capture.kill_running(" during the read-only incremental snapshot")
            assert "incremental_snapshot_collections" in last_offset(root), "the kill missed the snapshot"
            capture.start_planned()
            assert wait_until(lambda: "incremental_snapshot_collections" not in last_offset(root)
                              or not capture.running, 120, 0.1)
            assert capture.running, capture.tail()
        finally:
            writer.stop.set()
            writer.join()
            if capture.running:
                assert capture.terminate() == 0, capture.tail()
        assert writer.error is None, writer.error
        capture.run_until_idle()
        statements = _statements_of(db, user)

    assert "incremental_snapshot_collections" not in last_offset(root)
    snap = incremental_rows(root, name)
    first, last = snap[0]["seq"], snap[-1]["seq"]
    assert [r for r in bronze(root, name) if first < r["seq"] < last and r["op"] in ("c", "u", "d")], \
        "no write landed while the snapshot ran: the test proves nothing"
    untouched = {k for k in range(1, 601) if k % 7} - writer.touched
    reads = Counter(r["v"]["after"]["id"] for r in snap)
    # every row read (a kill between a chunk's bronze commit and its offset's may write the chunk
    # twice: the same rows again, later, which changes nothing downstream)
    assert len(untouched) > 100 and {k for k in untouched if reads[k] == 0} == set(), "rows never read"
    # bronze's events applied in order (the stream never overtaken by older chunk rows); the rows
    # deleted unseen (id % 7 == 0) are silver's to remove
    got, want = fold(root, name), source_rows(db)
    assert {k: got.get(k) for k in got.keys() | want.keys() if k % 7 and got.get(k) != want.get(k)} == {}, \
        "bronze != source"
    # the capture user's statements: reads only (the chunks among them), and no signal row
    assert any("`items`" in s and "LIMIT 21" in s for s in statements), "no chunk read by the capture user"
    assert [s for s in statements if _WRITES.match(s)] == []
    with pymysql.connect(**db) as conn, conn.cursor() as cur:
        cur.execute("SELECT count(*) FROM dbz_signal")
        assert cur.fetchone() == (0,)
    _silver(spark, cfg, root)
    check_silver(root, _source(db), set(range(1, 601)) | writer.touched)
