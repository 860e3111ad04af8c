"""Read-only incremental snapshots against a transaction that is in the WAL but not yet visible.

PostgreSQL flushes a transaction's commit record (the stream can decode it) before the transaction
leaves the running set (new snapshots see it). Synchronous replication to a standby that never
answers holds a committing transaction in between for as long as the test likes: the stream passes
its update on while a chunk read then would still see the older row. Bronze's last event per key
must end equal to the source (oracle: psycopg and delta-rs, not the capture code)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import psycopg
import pytest

from cdc_sources.postgres.readonly_watermarks import PostgresWatermarks
from cdc_sources.spi import SourceError
from pipelines.capture import run_capture
from pipelines.config import parse_pipeline
from tests.support.incremental_pg import (
    bronze,
    fold,
    incremental_rows,
    pipeline_text,
    setup_items,
    signal,
    source_rows,
)

pytestmark = [pytest.mark.integration, pytest.mark.postgres]

_WAITING = "cdc-lakehouse: read-only low watermark"
"""Text of the watermark query a chunk read repeats while it waits for such a transaction."""


@pytest.fixture
def stalled_sync_rep(pg_db: str) -> Iterator[None]:
    """Synchronous replication to a standby that never connects, for transactions that ask for it
    (``SET LOCAL synchronous_commit = on``); every other session of the test's database commits
    locally. The server setting is reset afterwards."""
    dbname = dict(p.split("=", 1) for p in pg_db.split())["dbname"]
    admin = pg_db.replace(f"dbname={dbname}", "dbname=postgres")
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'ALTER DATABASE "{dbname}" SET synchronous_commit = local')
    with psycopg.connect(pg_db, autocommit=True) as conn:
        conn.execute("CREATE TABLE sync_probe (n serial PRIMARY KEY)")
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute("ALTER SYSTEM SET synchronous_standby_names = 'nobody'")
        conn.execute("SELECT pg_reload_conf()")
    deadline = time.monotonic() + 10
    while True:  # the reload takes effect a moment later: until then commits do not wait
        probe = _StalledCommit(pg_db, "INSERT INTO sync_probe DEFAULT VALUES")  # only a writer waits
        probe.start()
        while probe.is_alive() and not (probe.pid and _waiting_for_standby(pg_db, probe.pid)):
            time.sleep(0.01)
        if probe.is_alive():
            with psycopg.connect(pg_db, autocommit=True) as conn:
                conn.execute("SELECT pg_cancel_backend(%s)", (probe.pid,))
            probe.join(10)
            break
        assert probe.error is None and time.monotonic() < deadline, f"commits never waited: {probe.error}"
    try:
        yield
    finally:
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute("ALTER SYSTEM RESET synchronous_standby_names")
            conn.execute("SELECT pg_reload_conf()")


class _StalledCommit(threading.Thread):
    """Updates one row in a transaction whose COMMIT waits for the standby after its commit record
    is flushed: in the WAL, not yet visible to new snapshots."""

    def __init__(self, dsn: str, sql: str) -> None:
        super().__init__(daemon=True)
        self.dsn, self.sql = dsn, sql
        self.pid: int | None = None
        self.xid: int | None = None
        self.ready = threading.Event()
        self.error: psycopg.Error | None = None

    def run(self) -> None:
        try:
            with psycopg.connect(self.dsn, autocommit=True) as conn:
                self.pid = conn.info.backend_pid
                with conn.transaction():
                    conn.execute("SET LOCAL synchronous_commit = on")
                    conn.execute(self.sql)
                    row = conn.execute("SELECT pg_current_xact_id()::text").fetchone()
                    self.xid = int(row[0]) if row else None
                    self.ready.set()
        except psycopg.Error as exc:  # reported by the test
            self.error = exc
            self.ready.set()


def _waiting_for_standby(dsn: str, pid: int) -> bool:
    with psycopg.connect(dsn, autocommit=True) as conn:
        row = conn.execute("SELECT wait_event FROM pg_stat_activity WHERE pid = %s", (pid,)).fetchone()
    return row is not None and row[0] == "SyncRep"


def _release_when_a_read_waits(dsn: str, pid: int, done: threading.Event) -> None:
    """Cancel the commit's wait for the standby (it completes locally and becomes visible) once a
    chunk read waits for it (the low watermark's query runs a third time, where a read that does not
    wait runs it once), or once the capture run has ended."""
    starts: set[object] = set()
    with psycopg.connect(dsn, autocommit=True) as conn:
        while not done.is_set() and len(starts) < 3:
            starts.update(r[0] for r in conn.execute(
                "SELECT query_start FROM pg_stat_activity WHERE pid <> pg_backend_pid() "
                "AND datname = current_database() AND query LIKE %s", (f"%{_WAITING}%",)).fetchall())
            time.sleep(0.001)
        conn.execute("SELECT pg_cancel_backend(%s)", (pid,))


def _stall(dsn: str) -> _StalledCommit:
    """Start updating row 7; return once its commit waits for the standby."""
    stalled = _StalledCommit(dsn, "UPDATE items SET name = 'updated', qty = 99 WHERE id = 7")
    stalled.start()
    assert stalled.ready.wait(10) and stalled.pid is not None, stalled.error
    deadline = time.monotonic() + 10
    while not _waiting_for_standby(dsn, stalled.pid):
        assert stalled.error is None and time.monotonic() < deadline, f"the commit never waited: {stalled.error}"
        time.sleep(0.02)
    return stalled


def test_a_low_watermark_that_waits_too_long_names_what_it_waited_for(pg_db, stalled_sync_rep):
    setup_items(pg_db, 10)
    stalled = _stall(pg_db)
    assert stalled.xid is not None
    try:
        with psycopg.connect(pg_db, autocommit=True) as conn:
            marks = PostgresWatermarks(conn, catch_up_s=0.2)
            with pytest.raises(SourceError, match=f"backends {stalled.pid} kept waiting for a synchronous standby"):
                marks.low()
            marks.passing(f'{{"lsn":1,"txId":{stalled.xid % (1 << 32)}}}')  # as the stream would
            with pytest.raises(SourceError, match=f"transactions {stalled.xid % (1 << 32)} stayed committed"):
                marks.low()
            conn.execute("SELECT pg_cancel_backend(%s)", (stalled.pid,))
            stalled.join(10)
            assert marks.low() > stalled.xid  # visible now: no wait, and it no longer runs
    finally:
        with psycopg.connect(pg_db, autocommit=True) as conn:
            conn.execute("SELECT pg_cancel_backend(%s)", (stalled.pid,))
        stalled.join(10)
    assert stalled.error is None, stalled.error


def _capture_role(dsn: str) -> str:
    """A role that may read ``items`` and the signal table and replicate, and no more: no member of
    ``pg_read_all_stats``, it cannot see what other roles' backends wait for."""
    role = "vis_" + dict(p.split("=", 1) for p in dsn.split())["dbname"][-40:]
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("CREATE PUBLICATION dbz_publication FOR TABLE items, dbz_signal")
        conn.execute(f"DROP ROLE IF EXISTS {role}")
        conn.execute(f"CREATE ROLE {role} LOGIN REPLICATION")
        conn.execute(f"GRANT SELECT ON items, dbz_signal TO {role}")
        conn.execute(f"ALTER ROLE {role} SET default_transaction_read_only = on")
    return role


@pytest.mark.parametrize("restart", [False, True], ids=["in-one-run", "after-a-restart"])
def test_a_chunk_never_overtakes_a_streamed_commit_it_could_not_see(pg_db, tmp_path, stalled_sync_rep, restart):
    """``in-one-run``: the stream passes the update on, then the signal, and the chunk is read in the
    same run, by a role that cannot see other roles' backends. ``after-a-restart``: one run passes
    the update on, the next reads the chunk (the role may see what backends wait for)."""
    root = str(tmp_path / "lake")
    setup_items(pg_db, 30)
    options: dict[str, str] = {"snapshot.mode": "no_data", "read.only": "true"}
    text = pipeline_text(root, pg_db, **options)
    if not restart:
        role = _capture_role(pg_db)
        options["publication.autocreate.mode"] = "disabled"
        text = pipeline_text(root, pg_db, **options).replace("user: postgres", f"user: {role}")
    cfg = parse_pipeline(text, env={})
    run_capture(cfg, until_idle=True)  # the slot, the stream's start

    stalled = _stall(pg_db)
    with psycopg.connect(pg_db) as conn:  # flushed, but new snapshots still see the old row
        assert conn.execute("SELECT name, qty FROM items WHERE id = 7").fetchone() == ("item 7", 7)

    if restart:
        run_capture(cfg, until_idle=True)
        assert [r["op"] for r in bronze(root)] == ["u"]  # the stream passed the update on
    # the signal commits after the update: the chunk is read once the stream has passed both on
    signal(pg_db, "vis-1", "execute-snapshot", {"data-collections": ["public.items"]})
    done = threading.Event()
    releaser = threading.Thread(target=_release_when_a_read_waits, args=(pg_db, stalled.pid, done), daemon=True)
    releaser.start()
    try:
        run_capture(cfg, until_idle=True)
    finally:
        done.set()
        releaser.join(10)
        stalled.join(10)
    assert not stalled.is_alive() and stalled.error is None, stalled.error
    run_capture(cfg, until_idle=True)

    assert sorted(r["v"]["after"]["id"] for r in incremental_rows(root)) == list(range(1, 31))  # all read
    want = source_rows(pg_db)
    assert want[7] == ("updated", 99)
    got = fold(root)
    assert {k: (got.get(k), v) for k, v in want.items() if got.get(k) != v} == {}, "bronze's last events != source"
