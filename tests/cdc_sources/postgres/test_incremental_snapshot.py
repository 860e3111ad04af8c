"""Incremental snapshots of PostgreSQL tables started by signals, into bronze (real server)."""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable
from itertools import groupby

import orjson
import psycopg
import pytest

from pipelines.capture import run_capture
from pipelines.config import PipelineConfig
from tests.support.incremental_pg import (
    bronze,
    incremental_rows,
    last_offset,
    pipeline,
    setup_items,
    signal,
    source_rows,
)

pytestmark = [pytest.mark.integration, pytest.mark.postgres]


def test_execute_snapshot_emits_every_row_once_as_incremental_reads(pg_db, tmp_path):
    root = str(tmp_path / "lake")
    setup_items(pg_db, 230)
    cfg = pipeline(root, pg_db, **{"snapshot.mode": "no_data"})
    run_capture(cfg, until_idle=True)
    signal(pg_db, "ad-hoc-1", "execute-snapshot", {"data-collections": ["public.items"], "type": "incremental"})
    run_capture(cfg, until_idle=True)
    rows = incremental_rows(root)
    got = {r["v"]["after"]["id"]: (r["v"]["after"]["name"], r["v"]["after"]["qty"]) for r in rows}
    assert len(rows) == 230 and got == source_rows(pg_db)
    assert all(r["op"] == "r" and r["v"]["before"] is None for r in rows)
    positions = [orjson.loads(r["position"]) for r in rows]
    ids = {p["incremental_snapshot_correlation_id"] for p in positions}
    assert len(ids) == 1 and ids.pop().startswith("ad-hoc-1@")  # the signal's id and its commit LSN
    assert [p["incremental_snapshot_last_chunk"] for p in positions] == [False] * 200 + [True] * 30
    starts = {p["incremental_snapshot_table_start_commit"] for p in positions}
    assert len(starts) == 1 and isinstance(starts.pop(), int)
    assert "incremental_snapshot_collections" not in last_offset(root)  # finished: no state left


def _ids(root: str, by: Callable[[int], int] = lambda i: i) -> list[int]:
    """The ids of the incremental snapshot's rows, chunk by chunk (the rows of a chunk share their
    position) and within a chunk sorted by ``by`` (rows of a chunk are emitted in an order of their own)."""
    groups = groupby(incremental_rows(root), key=lambda r: r["position"])
    return [i for _, rows in groups for i in sorted((r["v"]["after"]["id"] for r in rows), key=by)]


def _started(pg_db: str, root: str, rows: int, **options: str) -> PipelineConfig:
    setup_items(pg_db, rows)
    cfg = pipeline(root, pg_db, **{"snapshot.mode": "no_data", **options})
    run_capture(cfg, until_idle=True)
    return cfg


def test_filter_condition_and_surrogate_key(pg_db, tmp_path):
    root = str(tmp_path / "lake")
    cfg = _started(pg_db, root, 230)
    with psycopg.connect(pg_db, autocommit=True) as conn:
        conn.execute("ALTER TABLE items ADD COLUMN ord int")
        conn.execute("UPDATE items SET ord = 1000 - id")  # chunk order: reversed ids
    signal(pg_db, "f-1", "execute-snapshot", {
        "data-collections": ["public.items"], "surrogate-key": "ord",
        # a % in the filter, as operator and in a LIKE pattern: not a placeholder of the driver
        "additional-conditions": [{"data-collection": "public.items",
                                   "filter": "qty = 3 OR id % 1000 > 200 OR 'x' LIKE '%never%'"}]})
    run_capture(cfg, until_idle=True)
    want = sorted((i for i in range(1, 231) if i % 17 == 3 or i > 200), reverse=True)
    assert _ids(root, lambda i: -i) == want  # filtered, and in surrogate-key order across chunks


def test_restart_mid_snapshot_resumes_at_the_last_completed_chunk(pg_db, tmp_path):
    root = str(tmp_path / "lake")
    cfg = _started(pg_db, root, 400, **{"incremental.snapshot.chunk.size": "20"})
    signal(pg_db, "r-1", "execute-snapshot", {"data-collections": ["public.items"]})
    stop = threading.Event()

    def stopper() -> None:
        while not stop.is_set():
            try:
                if len(incremental_rows(root)) >= 60:
                    stop.set()
            except Exception:  # the table may not exist yet
                pass
            time.sleep(0.02)

    t = threading.Thread(target=stopper, daemon=True)
    t.start()
    result = run_capture(cfg, until_idle=True, stop=stop)["pg"]
    stop.set()
    t.join()
    assert result.stopped
    before = _ids(root)
    state = last_offset(root)
    assert 60 <= len(before) < 400 and state["incremental_snapshot_primary_key"] is not None
    assert orjson.loads(state["incremental_snapshot_primary_key"]) == [str(max(before))]
    run_capture(cfg, until_idle=True)
    ids = _ids(root)
    assert set(before) <= set(ids) and sorted(ids) == list(range(1, 401))  # nothing read twice


def test_pause_resume_and_stop(pg_db, tmp_path):
    root = str(tmp_path / "lake")
    cfg = _started(pg_db, root, 230)
    signal(pg_db, "p-1", "execute-snapshot", {"data-collections": ["public.items"]})
    signal(pg_db, "p-2", "pause-snapshot", None)
    run_capture(cfg, until_idle=True)
    assert _ids(root) == list(range(1, 51))  # the chunk read before the pause is emitted, no other
    assert last_offset(root)["incremental_snapshot_paused"] is True
    signal(pg_db, "p-3", "stop-snapshot", {})  # without its type Debezium ignores it, and so do we
    signal(pg_db, "p-4", "resume-snapshot", None)
    signal(pg_db, "p-5", "log", {"message": "resumed by the test"})
    run_capture(cfg, until_idle=True)
    assert _ids(root) == list(range(1, 231))
    signal(pg_db, "s-1", "execute-snapshot", {"data-collections": ["public.items"]})
    signal(pg_db, "s-2", "stop-snapshot", {"type": "incremental", "data-collections": ["public.items"]})
    run_capture(cfg, until_idle=True)
    assert len(_ids(root)) == 230  # stopped before its first chunk closed: nothing more
    assert "incremental_snapshot_collections" not in last_offset(root)


def test_file_channel_and_a_quoted_table_name(pg_db, tmp_path):
    root = str(tmp_path / "lake")
    path = tmp_path / "signals.jsonl"
    cfg = _started(pg_db, root, 120, **{"signal.enabled.channels": "source,file", "signal.file": str(path)})
    with psycopg.connect(pg_db, autocommit=True) as conn:
        conn.execute('CREATE TABLE "odd.name" (id int PRIMARY KEY, name text NOT NULL, qty int)')
        conn.execute('INSERT INTO "odd.name" SELECT g, \'x\', 1 FROM generate_series(1, 70) g')
    path.write_text('not json\n{"id": "f-1", "type": "execute-snapshot", '
                    '"data": {"data-collections": ["public.\\"odd.name\\"", "public.items"]}}\n')
    run_capture(cfg, until_idle=True)
    assert sorted(_ids(root)) == list(range(1, 121))
    odd = [r for r in bronze(root, 'pg.public.odd.name') if r["op"] == "r"]
    assert len(odd) == 70 and not path.exists()  # the file was consumed


def test_read_only_source_gets_no_watermarks_but_its_snapshot(pg_db, tmp_path):
    root = str(tmp_path / "lake")
    cfg = _started(pg_db, root, 30, **{"read.only": "true"})
    signal(pg_db, "ro-1", "execute-snapshot", {"data-collections": ["public.items"]})  # written by another
    run_capture(cfg, until_idle=True)
    with psycopg.connect(pg_db) as conn:
        assert conn.execute("SELECT id FROM dbz_signal").fetchall() == [("ro-1",)]  # no watermark rows
    assert [r["op"] for r in bronze(root, "pg.public.dbz_signal")] == ["c"]  # the signal itself, streamed
    assert sorted(_ids(root)) == list(range(1, 31))  # read by the read-only snapshot


def test_a_full_snapshot_ends_a_running_incremental_one(pg_db, tmp_path):
    root = str(tmp_path / "lake")
    cfg = _started(pg_db, root, 120)
    signal(pg_db, "x-1", "execute-snapshot", {"data-collections": ["public.items"]})
    signal(pg_db, "x-2", "pause-snapshot", None)
    run_capture(cfg, until_idle=True)
    assert last_offset(root)["incremental_snapshot_paused"] is True
    again = pipeline(root, pg_db, **{"snapshot.mode": "always"})
    assert run_capture(again, until_idle=True)["pg"].snapshot_rows == 120 + 4  # items and the signal table
    assert "incremental_snapshot_collections" not in last_offset(root)


def test_a_truncate_inside_a_window_drops_the_buffered_chunk(pg_db, tmp_path):
    """The truncate is streamed between the chunk's watermarks: none of its rows may follow it."""
    root = str(tmp_path / "lake")
    cfg = _started(pg_db, root, 30, **{"skipped.operations": "none"})
    with psycopg.connect(pg_db, autocommit=True) as conn:  # the truncate commits with the close watermark, before it
        conn.execute("""CREATE FUNCTION trunc_items() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN IF NEW.type = 'snapshot-window-close' THEN TRUNCATE items; END IF; RETURN NEW; END $$""")
        conn.execute("CREATE TRIGGER t BEFORE INSERT ON dbz_signal FOR EACH ROW EXECUTE FUNCTION trunc_items()")
    signal(pg_db, "t-1", "execute-snapshot", {"data-collections": ["public.items"]})
    run_capture(cfg, until_idle=True)
    ops = [r["op"] for r in bronze(root)]
    assert ops == ["t"], ops  # nothing the chunk read survives the truncate


def test_a_keyless_table_chunked_by_its_surrogate_key_emits_every_row(pg_db, tmp_path):
    root = str(tmp_path / "lake")
    with psycopg.connect(pg_db, autocommit=True) as conn:
        conn.execute("CREATE TABLE nokey (n int NOT NULL, v text)")
        conn.execute("ALTER TABLE nokey REPLICA IDENTITY FULL")
        conn.execute("INSERT INTO nokey SELECT g, 'v' || g FROM generate_series(1, 30) g")
    cfg = _started(pg_db, root, 10, **{"incremental.snapshot.chunk.size": "8"})
    signal(pg_db, "s-1", "execute-snapshot", {"data-collections": ["public.nokey"], "surrogate-key": "n"})
    run_capture(cfg, until_idle=True)
    rows = [r for r in bronze(root, "pg.public.nokey") if r["op"] == "r"]
    assert sorted(orjson.loads(r["value"])["after"]["n"] for r in rows) == list(range(1, 31))
    assert all(r["key"] is None for r in rows)


def _signal_rows(pg_db: str) -> list[tuple[str, str]]:
    with psycopg.connect(pg_db) as conn:
        return sorted((str(r[0]), str(r[1])) for r in conn.execute("SELECT id, type FROM dbz_signal"))


def test_insert_delete_restart_mid_snapshot_reads_the_pending_chunk_over_its_range(pg_db, tmp_path):
    """insert_delete: the pending chunk's open row is gone when capture stops; the restart reads the
    chunk over the range the offset holds and writes nothing to the signal table for it."""
    root = str(tmp_path / "lake")
    cfg = _started(pg_db, root, 400, **{"incremental.snapshot.chunk.size": "20",
                                        "incremental.snapshot.watermarking.strategy": "insert_delete"})
    signal(pg_db, "rd-1", "execute-snapshot", {"data-collections": ["public.items"]})
    stop = threading.Event()

    def stopper() -> None:
        while not stop.is_set():
            try:
                if len(incremental_rows(root)) >= 60:
                    stop.set()
            except Exception:  # the table may not exist yet
                pass
            time.sleep(0.02)

    t = threading.Thread(target=stopper, daemon=True)
    t.start()
    result = run_capture(cfg, until_idle=True, stop=stop)["pg"]
    stop.set()
    t.join()
    assert result.stopped
    state = last_offset(root)
    assert state.get("incremental_snapshot_window"), "the stop missed a pending chunk"
    assert orjson.loads(state["incremental_snapshot_window_range"])["more"] is True
    assert _signal_rows(pg_db) == [("rd-1", "execute-snapshot")]  # no watermark row while a chunk is pending
    before = _ids(root)
    run_capture(cfg, until_idle=True)
    ids = _ids(root)
    assert set(before) <= set(ids) and sorted(ids) == list(range(1, 401))  # nothing read twice
    assert _signal_rows(pg_db) == [("rd-1", "execute-snapshot")]
    # the pending chunk's watermarks as the stream saw them: inserted and deleted once, by the first run
    ops = Counter()
    for r in bronze(root, "pg.public.dbz_signal"):
        v = orjson.loads(r["value"]) if r["value"] else None
        if v is not None and v["op"] in ("c", "d"):
            ops[v["op"], (v["after"] if v["op"] == "c" else v["before"])["id"]] += 1
    pending = state["incremental_snapshot_window"] + "-open"
    assert (ops["c", pending], ops["d", pending]) == (1, 1)


def test_insert_delete_an_open_row_left_by_a_failed_close_is_reused_and_deleted(pg_db, tmp_path):
    """A run that fails between a chunk's open insert and its delete leaves the open row behind (as
    Debezium does); the next run reads that chunk again under the same id, takes the row as its open
    watermark and deletes it: every row read once, the signal table left without watermarks."""
    root = str(tmp_path / "lake")
    cfg = _started(pg_db, root, 100, **{"incremental.snapshot.chunk.size": "30",
                                        "incremental.snapshot.watermarking.strategy": "insert_delete"})
    with psycopg.connect(pg_db, autocommit=True) as conn:
        conn.execute("CREATE TABLE fail_close (n int PRIMARY KEY)")
        conn.execute("INSERT INTO fail_close VALUES (1)")
        conn.execute("CREATE FUNCTION no_delete() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
                     "IF EXISTS (SELECT 1 FROM fail_close) THEN RAISE EXCEPTION 'delete refused'; END IF; "
                     "RETURN OLD; END $$")
        conn.execute("CREATE TRIGGER no_delete BEFORE DELETE ON dbz_signal FOR EACH ROW EXECUTE FUNCTION no_delete()")
    signal(pg_db, "fd-1", "execute-snapshot", {"data-collections": ["public.items"]})
    with pytest.raises(Exception, match="delete refused"):
        run_capture(cfg, until_idle=True)
    left = _signal_rows(pg_db)
    assert len(left) == 2 and left[1] == ("fd-1", "execute-snapshot") and left[0][0].endswith("-open"), left
    with psycopg.connect(pg_db, autocommit=True) as conn:
        conn.execute("DELETE FROM fail_close")
    run_capture(cfg, until_idle=True)
    assert sorted(_ids(root)) == list(range(1, 101))
    assert _signal_rows(pg_db) == [("fd-1", "execute-snapshot")]
    assert "incremental_snapshot_collections" not in last_offset(root)


def test_insert_insert_takes_no_signal_table_delete_as_a_close(pg_db, tmp_path):
    """Debezium reads signal-table deletes only under insert_delete: under insert_insert a chunk's
    open row deleted at once (here by a trigger, in the open row's own transaction) closes nothing,
    and each chunk's rows are written right after its close row."""
    root = str(tmp_path / "lake")
    cfg = _started(pg_db, root, 90, **{"incremental.snapshot.chunk.size": "30"})
    with psycopg.connect(pg_db, autocommit=True) as conn:
        conn.execute("CREATE FUNCTION drop_open() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
                     "IF NEW.type = 'snapshot-window-open' THEN DELETE FROM dbz_signal WHERE id = NEW.id; END IF; "
                     "RETURN NEW; END $$")
        conn.execute("CREATE TRIGGER drop_open AFTER INSERT ON dbz_signal FOR EACH ROW EXECUTE FUNCTION drop_open()")
    signal(pg_db, "ii-1", "execute-snapshot", {"data-collections": ["public.items"]})
    run_capture(cfg, until_idle=True)
    assert sorted(_ids(root)) == list(range(1, 91))
    marks: dict[str, list[int]] = {"c": [], "d": []}
    for r in bronze(root, "pg.public.dbz_signal"):
        v = orjson.loads(r["value"]) if r["value"] else None
        if v is not None and v["op"] == "d":
            marks["d"].append(v["source"]["lsn"])
        elif v is not None and v["op"] == "c" and v["after"]["type"] == "snapshot-window-close":
            marks["c"].append(v["source"]["lsn"])
    assert len(marks["d"]) >= 3, "the trigger deleted no open row: the test proves nothing"
    chunks = {r["v"]["source"]["lsn"] for r in incremental_rows(root)}
    assert chunks <= set(marks["c"]) and not chunks & set(marks["d"]), (chunks, marks)
