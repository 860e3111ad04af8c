"""End to end against a private PostgreSQL: snapshot, stream, restart without duplicates."""

from __future__ import annotations

import itertools

import orjson
import psycopg
import pytest
from deltalake import DeltaTable

from bronze.schema import offsets_path, topic_path
from pipelines.capture import run_capture
from pipelines.config import parse_pipeline

pytestmark = [pytest.mark.integration, pytest.mark.postgres]


def pipeline(root: str, dsn: str, **options: str):
    parts = dict(p.split("=", 1) for p in dsn.split())
    opts = "".join(f"      {k}: \"{v}\"\n" for k, v in {"slot.name": f"s_{parts['dbname'][-20:]}", **options}.items())
    text = (f"pipeline: t\nlakehouse: {{root: \"{root}\"}}\nsources:\n  - name: pg\n    connector: postgres\n"
            f"    connection: {{host: 127.0.0.1, port: {parts['port']}, database: {parts['dbname']}, user: postgres}}\n"
            f"    options:\n{opts}")
    return parse_pipeline(text, env={})


def rows(root: str, topic: str) -> list[dict[str, object]]:
    return sorted(DeltaTable(topic_path(root, topic)).to_pyarrow_table().to_pylist(), key=lambda r: r["seq"])


@pytest.fixture(params=["pg15", "pg18"])
def any_pg_db(request):
    """The same test against the system PostgreSQL 15 and the embedded PostgreSQL 18."""
    return request.getfixturevalue("pg_db" if request.param == "pg15" else "pg18_db")


def test_snapshot_then_stream_then_resume(any_pg_db, tmp_path):
    pg_db = any_pg_db
    root = str(tmp_path / "lake")
    with psycopg.connect(pg_db, autocommit=True) as conn:
        conn.execute("CREATE TABLE items (id int PRIMARY KEY, name text, price numeric(8,2))")
        conn.execute("INSERT INTO items SELECT g, 'item ' || g, g + 0.5 FROM generate_series(1, 50) g")
    cfg = pipeline(root, pg_db, **{"skipped.operations": "none"})
    first = run_capture(cfg, until_idle=True)["pg"]
    assert first.snapshot_rows == 50
    with psycopg.connect(pg_db, autocommit=True) as conn:
        conn.execute("INSERT INTO items VALUES (51, 'new', 1.25)")
        conn.execute("UPDATE items SET name = 'renamed' WHERE id = 1")
        conn.execute("DELETE FROM items WHERE id = 2")
        conn.execute("UPDATE items SET id = 100 WHERE id = 3")
    second = run_capture(cfg, until_idle=True)["pg"]
    assert second.snapshot_rows == 0
    data = rows(root, "pg.public.items")
    ops = [r["op"] for r in data[50:]]
    assert ops == ["c", "u", "d", None, "d", None, "c"]
    assert [r["seq"] for r in data] == list(range(1, len(data) + 1))
    update = orjson.loads(data[51]["value"])
    assert update["after"] == {"id": 1, "name": "renamed", "price": "AJY="}  # 1.50: unscaled 150 = 0x0096, scale 2
    assert update["source"]["snapshot"] == "false" and update["source"]["table"] == "items"
    assert dict(data[54]["headers"])["__debezium.newkey"] == '{"id":100}'
    assert dict(data[56]["headers"])["__debezium.oldkey"] == '{"id":3}'
    snap = [orjson.loads(r["value"])["source"]["snapshot"] for r in data[:50]]
    assert snap[0] == "first" and snap[-1] == "last" and set(snap[1:-1]) == {"true"}
    third = run_capture(cfg, until_idle=True)["pg"]
    assert third.streamed_records == 0
    assert len(rows(root, "pg.public.items")) == len(data)


def test_invalid_option_is_reported_with_its_path(pg_db, tmp_path):
    from cdc_sources.spi import ConfigError

    cfg = pipeline(str(tmp_path), pg_db, **{"snapshot.mode": "sometimes", "tombstone.on.delete": "true"})
    with pytest.raises(ConfigError) as info:
        run_capture(cfg, until_idle=True)
    text = str(info.value)
    assert "sources[0].options.snapshot.mode: invalid value 'sometimes'" in text
    assert "did you mean 'tombstones.on.delete'" in text


def test_heartbeats_advance_the_slot_when_captured_tables_are_quiet(pg_db, tmp_path):
    from tests.support.pipeline_yaml import pipeline

    root = str(tmp_path / "lake")
    with psycopg.connect(pg_db, autocommit=True) as conn:
        conn.execute("CREATE TABLE captured (id int PRIMARY KEY)")
        conn.execute("CREATE TABLE busy (id int PRIMARY KEY, v text)")
        conn.execute("CREATE TABLE hb (id serial PRIMARY KEY, at timestamptz DEFAULT now())")
    cfg = pipeline(root, pg_db, **{"table.include.list": "public.captured", "heartbeat.interval.ms": "1",
                                   "heartbeat.action.query": "INSERT INTO hb DEFAULT VALUES",
                                   "slot.name": "hbslot"})
    run_capture(cfg, until_idle=True)
    with psycopg.connect(pg_db, autocommit=True) as conn:
        before = conn.execute("SELECT confirmed_flush_lsn FROM pg_replication_slots WHERE slot_name = 'hbslot'"
                              ).fetchone()[0]
        conn.execute("INSERT INTO busy SELECT g, repeat('x', 100) FROM generate_series(1, 5000) g")
    run_capture(cfg, until_idle=True)
    with psycopg.connect(pg_db, autocommit=True) as conn:
        after = conn.execute("SELECT confirmed_flush_lsn FROM pg_replication_slots WHERE slot_name = 'hbslot'"
                             ).fetchone()[0]
        beats = conn.execute("SELECT count(*) FROM hb").fetchone()[0]
    assert after > before
    assert beats >= 1
    hb = DeltaTable(topic_path(root, "__debezium-heartbeat.pg")).to_pyarrow_table().to_pylist()
    assert hb and orjson.loads(hb[0]["key"]) == {"serverName": "pg"}
    assert set(orjson.loads(hb[0]["value"])) == {"ts_ms"}


def test_a_parallel_snapshot_hands_off_to_the_stream_without_gap_or_duplicate(pg_db, tmp_path, monkeypatch):
    """``snapshot.max.threads: 3`` over four tables (two copied by workers) while a writer keeps
    inserting: every row is in bronze exactly once, as ``r`` or as a streamed ``c``."""
    import threading

    from cdc_sources.postgres import snapshot_columnar, snapshot_feeds

    monkeypatch.setattr(snapshot_columnar, "WORKER_MIN_BYTES", 256 << 10)
    root = str(tmp_path / "lake")
    names = ("t1", "t2", "t3", "t4")
    with psycopg.connect(pg_db, autocommit=True) as conn:
        for i, name in enumerate(names):
            conn.execute(f"CREATE TABLE {name} (id int PRIMARY KEY, pad text)")
            rows_ = (i % 2) * 30000 + 50
            conn.execute(f"INSERT INTO {name} SELECT g, repeat('p', 40) FROM generate_series(1, {rows_}) g")
    stop = threading.Event()

    def writer() -> None:  # writes while the snapshot runs, then stops (at most 400 rounds)
        with psycopg.connect(pg_db, autocommit=True) as conn:
            for n in range(100_000, 100_400):
                if stop.is_set():
                    return
                for name in names:
                    conn.execute(f"INSERT INTO {name} VALUES (%s, 'w')", (n,))

    started = []
    real_start = snapshot_feeds.TableFeeds.start
    monkeypatch.setattr(snapshot_feeds.TableFeeds, "start",
                        lambda self, i, source: (started.append(type(source).__name__), real_start(self, i, source)))
    thread = threading.Thread(target=writer)
    thread.start()
    try:
        first = run_capture(pipeline(root, pg_db, **{"snapshot.max.threads": "3"}), until_idle=True)["pg"]
    finally:
        stop.set()
        thread.join()
    run_capture(pipeline(root, pg_db, **{"snapshot.max.threads": "3"}), until_idle=True)
    assert first.snapshot_rows > 0
    assert sorted(started) == ["WorkerCopy", "WorkerCopy", "generator", "generator"]  # t2, t4 by workers
    with psycopg.connect(pg_db) as conn:
        for name in names:
            expected = sorted(r[0] for r in conn.execute(f"SELECT id FROM {name}").fetchall())
            data = rows(root, f"pg.public.{name}")
            ids = sorted(orjson.loads(r["key"])["id"] for r in data)
            assert ids == expected, name  # no gap, no duplicate
            assert {r["op"] for r in data} <= {"r", "c"}


def test_a_caught_up_run_adds_no_bronze_commit_and_the_next_change_is_captured(pg_db, tmp_path):
    """Scheduled ``--until-idle`` runs with nothing to capture leave bronze as it was (no empty
    offsets commit per run), and resume exactly where the last commit left off."""
    root = str(tmp_path / "lake")
    with psycopg.connect(pg_db, autocommit=True) as conn:
        conn.execute("CREATE TABLE items (id int PRIMARY KEY, name text)")
        conn.execute("INSERT INTO items VALUES (1, 'a')")
    cfg = pipeline(root, pg_db)
    run_capture(cfg, until_idle=True)
    run_capture(cfg, until_idle=True)  # streams once: stores a streaming offset
    for _ in range(3):
        assert run_capture(cfg, until_idle=True)["pg"].streamed_records == 0
    # WAL written elsewhere on the server (other databases, checkpoints) may move the position:
    # then a commit stores the new one; a commit that repeats the last offset stores nothing new
    stored = [c["cdc.offset"] for c in reversed(DeltaTable(offsets_path(root, "pg")).history())
              if "cdc.offset" in c]
    assert all(a != b for a, b in itertools.pairwise(stored)), stored
    with psycopg.connect(pg_db, autocommit=True) as conn:
        conn.execute("INSERT INTO items VALUES (2, 'b')")
    assert run_capture(cfg, until_idle=True)["pg"].streamed_records == 1
    assert [orjson.loads(r["key"])["id"] for r in rows(root, "pg.public.items")] == [1, 2]
