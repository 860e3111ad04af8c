"""Read-only incremental snapshots on PostgreSQL (``read.only: true``): capture connects as a role
that cannot write (SELECT only, every transaction read-only), the snapshot is asked for through the
``file`` signal channel while a writer changes the very rows being read, capture is SIGKILLed twice
mid-snapshot; silver ends equal to the source (rows deleted while capture could not see them
included) and nothing was written to the source. The oracle reads the source with psycopg and
silver with delta-rs."""

from __future__ import annotations

from collections import Counter
from typing import Any

import orjson
import psycopg
import pytest

from pipelines.capture import run_capture
from pipelines.config import parse_pipeline
from tests.pipelines.test_incremental_resnapshot import _silver, _source
from tests.support.capture_process import CaptureProcess, wait_until
from tests.support.engines import SAIL_ONLY
from tests.support.incremental_pg import (
    Writer,
    fold,
    incremental_count,
    incremental_rows,
    last_offset,
    setup_items,
    source_rows,
)
from tests.support.resnapshot_oracle import check_silver, silver_yaml

pytestmark = [pytest.mark.integration, pytest.mark.postgres, pytest.mark.spark]


def _text(root: str, dsn: str, user: str, signal_file: str, skipped: str) -> str:
    parts = dict(p.split("=", 1) for p in dsn.split())
    opts = {"slot.name": f"ro_{parts['dbname'][-30:]}", "read.only": "true", "snapshot.mode": "initial",
            "table.include.list": "public.items",
            "publication.autocreate.mode": "disabled", "signal.enabled.channels": "file",
            "signal.file": signal_file, "signal.poll.interval.ms": "100",
            "incremental.snapshot.chunk.size": "20", "skipped.operations": skipped}
    return (f"pipeline: ro\nlakehouse: {{root: \"{root}\"}}\nsources:\n  - name: pg\n    connector: postgres\n"
            f"    connection: {{host: 127.0.0.1, port: {parts['port']}, database: {parts['dbname']}, user: {user}}}\n"
            "    options:\n" + "".join(f"      {k}: \"{v}\"\n" for k, v in opts.items())
            + "    capture: {commit_max_records: 25}\n"
            + "silver:\n" + silver_yaml("pg.public.items") + "silver_options: {interval_seconds: 1}\n")


def _read_only_role(dsn: str) -> str:
    """A role that may only read ``items`` and replicate; every transaction it runs is read-only."""
    role = "ro_" + dict(p.split("=", 1) for p in dsn.split())["dbname"][-40:]
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("CREATE PUBLICATION dbz_publication FOR TABLE items")
        conn.execute(f"CREATE ROLE {role} LOGIN REPLICATION")
        conn.execute(f"GRANT SELECT ON items TO {role}")
        conn.execute(f"ALTER ROLE {role} SET default_transaction_read_only = on")
    return role


def _writes_by(dsn: str, role: str) -> dict[str, Any]:
    """What the source says was written: signal-table rows, and the role's rights."""
    with psycopg.connect(dsn) as conn:
        signals = conn.execute("SELECT count(*) FROM dbz_signal").fetchone()
        can_insert = conn.execute("SELECT has_table_privilege(%s, 'dbz_signal', 'INSERT')", (role,)).fetchone()
    return {"signal rows": signals[0] if signals else None, "role may insert": can_insert[0] if can_insert else None}


@SAIL_ONLY
def test_readonly_incremental_snapshot_through_the_file_channel(pg_db, tmp_path, spark):
    root, signal_file = str(tmp_path / "lake"), str(tmp_path / "signals.jsonl")
    setup_items(pg_db, 600)
    role = _read_only_role(pg_db)
    with psycopg.connect(pg_db.replace("user=postgres", f"user={role}")) as conn, \
            pytest.raises(psycopg.errors.ReadOnlySqlTransaction):  # the role cannot write
        conn.execute("INSERT INTO dbz_signal VALUES ('x', 'log', NULL)")
    blind_text = _text(root, pg_db, role, signal_file, "d,t")  # deletes go unseen: silver keeps them
    run_capture(parse_pipeline(blind_text, env={}), until_idle=True)
    with psycopg.connect(pg_db, autocommit=True) as conn:
        conn.execute("DELETE FROM items WHERE id % 7 = 0")
    run_capture(parse_pipeline(blind_text, env={}), until_idle=True)
    text = _text(root, pg_db, role, signal_file, "none")
    cfg = parse_pipeline(text, env={})
    _silver(spark, cfg, root)
    config = tmp_path / "pipeline.yaml"
    config.write_text(text)

    with open(signal_file, "ab") as f:
        f.write(orjson.dumps({"id": "ro-1", "type": "execute-snapshot",
                              "data": {"data-collections": ["public.items"], "type": "incremental"}}) + b"\n")
    # runs until the snapshot is done, on ids 1..300 only: ids above stay untouched however fast it runs
    writer = Writer(pg_db, 9, top=300, ops=100_000, pause_s=0.005)
    writer.start()
    capture = CaptureProcess(config, tmp_path)
    for target in (100, 250):  # SIGKILLed twice mid-snapshot
        capture.start_planned()
        assert wait_until(lambda: incremental_count(root) >= target, 120, 0.02), capture.tail()  # noqa: B023
        capture.kill_running(" during the read-only incremental snapshot")
        assert "incremental_snapshot_collections" in last_offset(root), "the kill missed the snapshot"
    capture.start_planned()
    assert wait_until(lambda: "incremental_snapshot_collections" not in last_offset(root), 120, 0.1), capture.tail()
    writer.stop.set()
    writer.join()
    assert writer.error is None, writer.error
    assert capture.terminate() == 0, capture.tail()
    capture.run_until_idle()

    assert "incremental_snapshot_collections" not in last_offset(root)
    snap = incremental_rows(root)
    untouched = {k for k in range(1, 601) if k % 7} - writer.touched
    reads = Counter(r["v"]["after"]["id"] for r in snap)
    # every row read (a kill between a chunk's bronze commit and its offset's may write the chunk
    # twice: the same rows again, later, which changes nothing downstream)
    assert len(untouched) > 100 and {k for k in untouched if reads[k] == 0} == set(), "rows never read"
    # bronze's events applied in order (the stream never overtaken by older chunk rows); the rows
    # deleted unseen (id % 7 == 0) are silver's to remove
    got, want = fold(root), source_rows(pg_db)
    assert {k: got.get(k) for k in got.keys() | want.keys() if k % 7 and got.get(k) != want.get(k)} == {}, \
        "bronze != source"
    assert _writes_by(pg_db, role) == {"signal rows": 0, "role may insert": False}
    _silver(spark, cfg, root)
    check_silver(root, _source(pg_db), set(range(1, 601)) | writer.touched)
