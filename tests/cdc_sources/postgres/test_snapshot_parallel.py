"""``snapshot.max.threads`` > 1: several tables copied at once, their blocks interleaved.

The sequential reader (one thread, tested byte for byte against the per-row rendering in
`test_snapshot_columnar`) is the reference: the parallel reader must emit the same records of
every table, in the same order within the table, with ``n`` consecutive over everything emitted
and Debezium's markers decided by emission order.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from typing import Any

import psycopg
import pytest

from cdc_sources.postgres import copy_source, snapshot_feeds
from cdc_sources.postgres.converters import ConverterSettings
from cdc_sources.postgres.errors import PostgresAuthError, PostgresError
from cdc_sources.spi import ChangeBlock, SchemaVersion, SnapshotProgress
from tests.cdc_sources.postgres.test_snapshot_columnar import (
    Snapshot,
    _one_column_tables,
    _settings,
    _tables,
    _workers,
    per_row,
    records,
)

pytestmark = [pytest.mark.integration, pytest.mark.postgres]

ROWS = {"a": 5000, "b": 1, "c": 0, "d": 3000, "e": 2}
SMALL_IS_IN_PROCESS = 64 << 10
"""``worker_min_bytes`` that sends ``a`` and ``d`` to workers and copies the rest in-process."""


@pytest.fixture
def snapshot(pg_db: str) -> Iterator[Callable[[], Snapshot]]:
    """Opens exported snapshots (as the capture session does); closes them after the test."""
    opened: list[Snapshot] = []

    def make() -> Snapshot:
        opened.append(Snapshot(pg_db))
        return opened[-1]

    yield make
    for s in opened:
        s.close()


def read(snap: Any, names: list[str], *, threads: int, worker_min_bytes: int) -> tuple[list[Any], list[Any]]:
    reader = snap.reader(ConverterSettings(), worker_min_bytes=worker_min_bytes)
    reader.max_threads = threads
    items = list(reader.read(_tables(snap.conn, names, ConverterSettings())))
    return items, records(items)


def _without_markers(rec: tuple[Any, ...]) -> tuple[Any, ...]:
    value = json.loads(rec[2])
    value["source"]["snapshot"] = "?"
    position = json.loads(rec[4])
    assert position["last_snapshot_record"] == position["snapshot_completed"]
    position["last_snapshot_record"] = position["snapshot_completed"] = "?"
    return rec[0], rec[1], json.dumps(value), rec[3], json.dumps(position)


def _expected_markers(recs: list[tuple[Any, ...]]) -> list[tuple[str, bool]]:
    """Debezium's markers for records in emission order: the very last record is ``last`` even
    when empty tables end after it."""
    first_of: dict[str, int] = {}
    last_of: dict[str, int] = {}
    for i, r in enumerate(recs):
        first_of.setdefault(r[0], i)
        last_of[r[0]] = i
    out = []
    for i, r in enumerate(recs):
        if i == len(recs) - 1:  # Debezium's precedence: last, first, last_in..., first_in...
            out.append(("last", True))
        elif i == 0:
            out.append(("first", False))
        elif last_of[r[0]] == i:
            out.append(("last_in_data_collection", False))
        elif first_of[r[0]] == i:
            out.append(("first_in_data_collection", False))
        else:
            out.append(("true", False))
    return out


@pytest.mark.parametrize("threads", [2, 3])
@pytest.mark.parametrize("worker_min_bytes", [0, SMALL_IS_IN_PROCESS], ids=["workers", "mixed"])
def test_tables_read_at_once_give_every_table_s_records_in_order(pg_db, snapshot, monkeypatch, threads,
                                                                 worker_min_bytes):
    _one_column_tables(pg_db, ROWS)
    monkeypatch.setattr(copy_source, "BLOCK_BYTES", 4 << 10)  # many batches per table: they interleave
    snap = snapshot()
    _, sequential = read(snap, list(ROWS), threads=1, worker_min_bytes=worker_min_bytes)
    items, parallel = read(snap, list(ROWS), threads=threads, worker_min_bytes=worker_min_bytes)

    assert len(parallel) == len(sequential) == sum(ROWS.values())
    by_table: dict[str, list[Any]] = defaultdict(list)
    for r in parallel:
        by_table[r[0]].append(_without_markers(r))
    expected: dict[str, list[Any]] = defaultdict(list)
    for r in sequential:
        expected[r[0]].append(_without_markers(r))
    assert by_table == expected
    assert [r[5][2] for r in parallel] == list(range(1, len(parallel) + 1))
    markers = [(json.loads(r[2])["source"]["snapshot"], json.loads(r[4])["last_snapshot_record"]) for r in parallel]
    assert markers == _expected_markers(parallel)

    # a table's schema comes before its first block; every table is reported done once, with its rows
    seen: set[str] = set()
    for item in items:
        if isinstance(item, SchemaVersion):
            seen.add(item.topic)
        elif isinstance(item, ChangeBlock):
            assert item.topic in seen
    done = [p for p in items if isinstance(p, SnapshotProgress) and p.table_done]
    assert sorted((p.table, p.rows) for p in done) == sorted((f"public.{t}", n) for t, n in ROWS.items())
    assert [p.tables_done for p in done] == list(range(1, len(ROWS) + 1))
    assert _workers() == []
    assert _feed_threads() == []


def test_blocks_of_tables_interleave(pg_db, snapshot, monkeypatch):
    with psycopg.connect(pg_db, autocommit=True) as conn:
        for name in ("a", "b"):
            conn.execute(f"CREATE TABLE {name} (id int PRIMARY KEY, pad text)")
            conn.execute(f"INSERT INTO {name} SELECT g, repeat('x', 100) FROM generate_series(1, 150000) g")
    # many blocks per table: ~900 of `a`, so the slow consumer below gives the second worker its
    # whole 30 s to start (with 64 KB blocks `a` was consumed in ~12 s, and once, on a loaded
    # machine, before `b`'s worker had produced anything)
    monkeypatch.setattr(copy_source, "BLOCK_BYTES", 16 << 10)
    snap = snapshot()
    reader = snap.reader(ConverterSettings(), worker_min_bytes=0)
    reader.max_threads = 2
    topics = []
    started = time.monotonic()
    for item in reader.read(_tables(snap.conn, ["a", "b"], ConverterSettings())):
        if isinstance(item, ChangeBlock):
            topics.append(item.topic)
            if not any(t.endswith(".b") for t in topics) and time.monotonic() - started < 30:
                # a slow consumer: the bounded queue fills while the second worker starts, however
                # loaded the machine is, so the first table cannot finish before the second begins
                time.sleep(0.05)
    switches = sum(1 for x, y in itertools.pairwise(topics) if x != y)
    assert switches > 1, "the tables were read one after the other"


def test_a_failing_table_stops_the_others_and_leaves_no_worker(pg_db, snapshot, monkeypatch):
    _one_column_tables(pg_db, {"a": 50_000, "b": 3, "c": 50_000})
    monkeypatch.setattr(copy_source, "BLOCK_BYTES", 4 << 10)
    snap = snapshot()
    a, b, c = _tables(snap.conn, ["a", "b", "c"], ConverterSettings())
    broken = dataclasses.replace(b, select="SELECT id / 0 FROM b")
    reader = snap.reader(ConverterSettings(), worker_min_bytes=0)
    reader.max_threads = 3
    with pytest.raises(PostgresError, match=r"snapshotting table public\.b: .*division by zero"):
        list(reader.read([a, broken, c]))
    assert _workers() == []


def test_closing_the_reader_early_stops_every_worker(pg_db, snapshot, monkeypatch):
    _one_column_tables(pg_db, {"a": 200_000, "b": 200_000})
    monkeypatch.setattr(copy_source, "BLOCK_BYTES", 4 << 10)
    snap = snapshot()
    reader = snap.reader(ConverterSettings(), worker_min_bytes=0)
    reader.max_threads = 2
    items = reader.read(_tables(snap.conn, ["a", "b"], ConverterSettings()))
    assert any(isinstance(i, ChangeBlock) for i in (next(items) for _ in range(5)))
    items.close()  # type: ignore[attr-defined]
    assert _workers() == []


def test_tables_copied_in_process_share_the_connection_one_at_a_time(pg_db, snapshot):
    _one_column_tables(pg_db, {"a": 300, "b": 200, "c": 100})
    snap = snapshot()
    with psycopg.connect(pg_db, autocommit=True) as conn:
        conn.execute("INSERT INTO b VALUES (1000)")  # after the snapshot: in no reader's rows
    _, sequential = read(snap, ["a", "b", "c"], threads=1, worker_min_bytes=1 << 40)
    _, parallel = read(snap, ["a", "b", "c"], threads=3, worker_min_bytes=1 << 40)
    assert parallel == sequential  # one at a time on the one connection: the sequential order
    assert len(parallel) == 600


def _feed_threads() -> list[threading.Thread]:
    """Live threads of the parallel reader (feeds) and of copy workers (pipe drains)."""
    return [t for t in threading.enumerate() if t.name.startswith(("snapshot-feed", "copy-drain"))]


def _markers_of(recs: list[Any]) -> list[tuple[str, str, bool]]:
    return [(r[0].rsplit(".", 1)[1], json.loads(r[2])["source"]["snapshot"], json.loads(r[4])["last_snapshot_record"])
            for r in recs]


def test_one_thread_reads_as_before(pg_db, snapshot, monkeypatch):
    """``snapshot.max.threads: 1`` keeps the sequential reader: the per-row reference, byte for byte."""
    _one_column_tables(pg_db, ROWS)
    monkeypatch.setattr(copy_source, "BLOCK_BYTES", 4 << 10)
    snap = snapshot()
    tables = _tables(snap.conn, list(ROWS), ConverterSettings())
    reader = snap.reader(ConverterSettings(), worker_min_bytes=SMALL_IS_IN_PROCESS)
    reader.max_threads = 1
    assert records(list(reader.read(tables))) == per_row(snap.conn, tables, reader.run.ts_us)


def test_the_very_last_row_is_last_when_empty_tables_end_after_it(pg_db, snapshot):
    """In-process tables are copied one after another, so the empty ``z`` surely ends after ``a``:
    ``a``'s final row waits until then, and leaves as ``last``."""
    _one_column_tables(pg_db, {"a": 3, "z": 0})
    snap = snapshot()
    items, recs = read(snap, ["a", "z"], threads=2, worker_min_bytes=1 << 40)
    assert _markers_of(recs) == [("a", "first", False), ("a", "true", False), ("a", "last", True)]
    done = [(p.table, p.rows, p.tables_done) for p in items if isinstance(p, SnapshotProgress) and p.table_done]
    assert done == [("public.z", 0, 1), ("public.a", 3, 2)]  # a is done once its final rows have left


def test_a_worker_table_ending_before_a_slow_empty_one_gets_last(pg_db, snapshot):
    _one_column_tables(pg_db, {"a": 2, "b": 1, "z": 0})
    with psycopg.connect(pg_db, autocommit=True) as conn:
        conn.execute("CREATE FUNCTION slow_nothing() RETURNS SETOF int LANGUAGE plpgsql "
                     "AS $$ BEGIN PERFORM pg_sleep(0.5); END $$")
    snap = snapshot()
    a, b, z = _tables(snap.conn, ["a", "b", "z"], ConverterSettings())
    slow = dataclasses.replace(z, select='SELECT "id" FROM "public"."z" UNION ALL SELECT * FROM slow_nothing()')
    reader = snap.reader(ConverterSettings(), worker_min_bytes=0)
    reader.max_threads = 3
    items = list(reader.read([a, b, slow]))
    recs = records(items)
    assert sorted(m[0] for m in _markers_of(recs)) == ["a", "a", "b"]
    assert [(m, last) for _, m, last in _markers_of(recs)] == _expected_markers(recs)
    assert [r[5][2] for r in recs] == [1, 2, 3]
    done = [p.table for p in items if isinstance(p, SnapshotProgress) and p.table_done]
    assert done[1] == "public.z"  # z ended before the last rows left
    assert sorted(done) == ["public.a", "public.b", "public.z"]
    assert _workers() == [] and _feed_threads() == []


@pytest.mark.parametrize("threads", [2, 3])
def test_rows_written_after_the_snapshot_is_exported_are_in_no_reader(pg_db, snapshot, threads):
    """Workers and the in-process copies all read the one exported snapshot."""
    rows = {"a": 3000, "b": 40, "c": 0, "d": 2500, "e": 1}
    _one_column_tables(pg_db, rows)
    snap = snapshot()
    with psycopg.connect(pg_db, autocommit=True) as conn:
        for name in rows:
            conn.execute(f"INSERT INTO {name} SELECT generate_series(100001, 100100)")
        conn.execute("DELETE FROM d WHERE id <= 10")
        conn.execute("UPDATE e SET id = 7 WHERE id = 1")
    _, recs = read(snap, list(rows), threads=threads, worker_min_bytes=SMALL_IS_IN_PROCESS)
    by_table: dict[str, list[int]] = defaultdict(list)
    for r in recs:
        by_table[r[0].rsplit(".", 1)[1]].append(json.loads(r[1])["id"])
    assert {t: sorted(ids) for t, ids in by_table.items()} == {
        t: list(range(1, n + 1)) for t, n in rows.items() if n}


def test_permission_denied_on_one_table_is_an_auth_error_and_stops_every_copy(pg_db, snapshot, monkeypatch):
    _one_column_tables(pg_db, {"a": 200_000, "secret": 10, "c": 200_000})
    with psycopg.connect(pg_db, autocommit=True) as conn:
        conn.execute("DROP ROLE IF EXISTS par_reader")
        conn.execute("CREATE ROLE par_reader LOGIN")
        conn.execute("GRANT SELECT ON a, c TO par_reader")
    monkeypatch.setattr(copy_source, "BLOCK_BYTES", 4 << 10)
    try:
        snap = snapshot()
        reader = snap.reader(ConverterSettings(), worker_min_bytes=0, connection=_settings(pg_db, user="par_reader"))
        reader.max_threads = 3
        with pytest.raises(PostgresAuthError, match=r"snapshotting table public\.secret: .*permission denied"):
            list(reader.read(_tables(snap.conn, ["a", "secret", "c"], ConverterSettings())))
        assert _workers() == []
        assert _feed_threads() == []
    finally:
        with psycopg.connect(pg_db, autocommit=True) as conn:
            conn.execute("DROP OWNED BY par_reader")
            conn.execute("DROP ROLE par_reader")


def test_a_failure_cancels_an_in_process_copy_that_waits_on_the_server(pg_db, snapshot, monkeypatch):
    """``b`` (in-process) waits for a lock another session holds; ``a`` (worker) fails meanwhile:
    the reader raises ``a``'s error, and closing cancels ``b``'s COPY so its thread ends."""
    _one_column_tables(pg_db, {"a": 3, "b": 3})
    monkeypatch.setattr(snapshot_feeds, "_STOP_WAIT_S", 0.5)
    snap = snapshot()
    a, b = _tables(snap.conn, ["a", "b"], ConverterSettings())
    broken = dataclasses.replace(a, select="SELECT id / 0 FROM a")
    unsized = dataclasses.replace(b, oid=None)  # in-process without a size query (it would wait on the lock too)
    locker = psycopg.connect(pg_db)
    try:
        locker.execute("LOCK TABLE b IN ACCESS EXCLUSIVE MODE")
        reader = snap.reader(ConverterSettings(), worker_min_bytes=0)
        reader.max_threads = 2
        started = time.monotonic()
        with pytest.raises(PostgresError, match=r"snapshotting table public\.a: .*division by zero"):
            list(reader.read([unsized, broken]))
        assert time.monotonic() - started < 8
        assert _workers() == []
        assert _feed_threads() == []
    finally:
        locker.close()


def test_closing_a_mixed_read_early_stops_every_copy(pg_db, snapshot, monkeypatch):
    _one_column_tables(pg_db, {"a": 200_000, "b": 300, "c": 200_000, "d": 200})
    monkeypatch.setattr(copy_source, "BLOCK_BYTES", 4 << 10)
    snap = snapshot()
    reader = snap.reader(ConverterSettings(), worker_min_bytes=SMALL_IS_IN_PROCESS)
    reader.max_threads = 3
    items = reader.read(_tables(snap.conn, ["a", "b", "c", "d"], ConverterSettings()))
    assert sum(isinstance(next(items), ChangeBlock) for _ in range(20)) > 0
    items.close()  # type: ignore[attr-defined]
    assert _workers() == []
    assert _feed_threads() == []
    assert snap.conn.execute("SELECT count(*) FROM b").fetchone()[0] == 300  # the connection is usable
