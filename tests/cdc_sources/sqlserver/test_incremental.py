"""The SQL Server side of incremental snapshots on the CDC emulator: chunks in key order (a
composite key compared column by column), the largest key, additional conditions, a surrogate
key, watermarks written and read back, keys that cannot be chunked. The oracle is the table read
with psycopg."""

from __future__ import annotations

from collections.abc import Iterator

import orjson
import psycopg
import pytest

from cdc_sources.common.incremental_state import SnapshotCollection
from cdc_sources.sqlserver.config import build_sqlserver_config
from cdc_sources.sqlserver.incremental import SqlServerChunkSource
from cdc_sources.sqlserver.session import SqlServerCaptureSession
from cdc_sources.sqlserver.signal_table import SignalTable
from tests.support.sqlserver_emulator import SqlServerEmulator
from tests.support.sqlserver_emulator.databases import dbname

pytestmark = [pytest.mark.integration]


@pytest.fixture
def source(pg_db: str) -> Iterator[SqlServerChunkSource]:
    emu = SqlServerEmulator.install(pg_db)
    emu.execute("CREATE TABLE dbo.pairs (a int, b varchar(10), v int NOT NULL UNIQUE, blob bytea, PRIMARY KEY (a, b))")
    emu.execute("INSERT INTO dbo.pairs SELECT g % 5, 'k' || (g * 7 % 23), g, NULL FROM generate_series(1, 23) AS g")
    emu.execute("CREATE TABLE dbo.blobs (k bytea PRIMARY KEY, v int)")
    emu.execute("CREATE TABLE dbo.dbz_signal (id varchar(64) PRIMARY KEY, type varchar(32) NOT NULL, "
                "data varchar(2048))")
    emu.enable_db()
    for table in ("pairs", "blobs", "dbz_signal"):
        emu.enable_table("dbo", table)
    database = dbname(pg_db)
    config, problems = build_sqlserver_config(
        name="ms", connection={"user": "postgres"},
        options={"database.names": database, "signal.data.collection": f"{database}.dbo.dbz_signal"}, path="s")
    assert config is not None, problems
    session = SqlServerCaptureSession(config, emu.gateway(), None)
    try:
        yield SqlServerChunkSource(gateway=emu.gateway(), tables=session.snapshot_tables, name="ms",
                                   database=database, signal_table=SignalTable(database, "dbo", "dbz_signal"))
    finally:
        session.close()


def _rows(dsn: str, where: str = "") -> list[tuple[int, str]]:
    with psycopg.connect(dsn) as conn:
        return [(int(a), str(b)) for a, b in conn.execute(f"SELECT a, b FROM dbo.pairs {where}")]


def _walk(source: SqlServerChunkSource, c: SnapshotCollection, size: int) -> tuple[list[dict[str, object]], int]:
    """Every row the chunks of ``c`` read, in order, and how many chunks."""
    key = source.chunk_key(c)
    assert isinstance(key, tuple), key
    top = source.max_key(c, key)
    after, out, chunks = None, [], 0
    while True:
        chunk = source.read_chunk(c, key, after, top, size)
        chunks += 1
        out += [orjson.loads(v) for v in chunk.rows.values()]
        assert len(chunk.rows) <= size
        if not chunk.more:
            return out, chunks
        after = chunk.last_key


def test_chunks_of_a_composite_key_read_every_row_once_in_key_order(source: SqlServerChunkSource, pg_db: str) -> None:
    c = SnapshotCollection("dbo", "pairs")
    assert source.chunk_key(c) == ("a", "b")
    rows, chunks = _walk(source, c, 4)
    read = [(r["a"], r["b"]) for r in rows]
    assert sorted(read) == sorted(_rows(pg_db)) and len(set(read)) == len(read) == 23
    assert chunks == 6
    assert [a for a, _ in read] == sorted(a for a, _ in read)  # chunks follow the key


def test_a_condition_and_a_surrogate_key_shape_the_chunks(source: SqlServerChunkSource, pg_db: str) -> None:
    rows, _ = _walk(source, SnapshotCollection("dbo", "pairs", condition="[v] % 3 = 0"), 2)
    assert sorted((r["a"], r["b"]) for r in rows) == sorted(_rows(pg_db, "WHERE v % 3 = 0"))
    rows, chunks = _walk(source, SnapshotCollection("dbo", "pairs", surrogate_key="v"), 5)
    assert [r["v"] for r in rows] == list(range(1, 24)) and chunks == 5


def test_keys_that_cannot_chunk_are_named(source: SqlServerChunkSource) -> None:
    assert "binary type" in str(source.chunk_key(SnapshotCollection("dbo", "blobs")))
    assert "no captured column 'nope'" in str(source.chunk_key(SnapshotCollection("dbo", "pairs",
                                                                                   surrogate_key="nope")))


def test_watermarks_are_written_to_the_signal_table_and_read_back(source: SqlServerChunkSource, pg_db: str) -> None:
    source.insert_watermark("w1", opens=True)
    source.insert_watermark("w1", opens=False, data='{"upto": ["3"]}')
    assert source.watermarks_present("w1") == {"w1-open": None, "w1-close": '{"upto": ["3"]}'}
    assert source.watermarks_present("w2") == {}
    with psycopg.connect(pg_db) as conn:
        assert sorted(conn.execute("SELECT id, type FROM dbo.dbz_signal").fetchall()) == [
            ("w1-close", "snapshot-window-close"), ("w1-open", "snapshot-window-open")]


def test_a_signal_table_without_change_data_capture_is_named_at_start(pg_db: str,
                                                                      caplog: pytest.LogCaptureFixture) -> None:
    emu = SqlServerEmulator.install(pg_db)
    emu.execute("CREATE TABLE dbo.items (id int PRIMARY KEY)")
    emu.execute("CREATE TABLE dbo.dbz_signal (id varchar(64) PRIMARY KEY, type varchar(32), data varchar(2048))")
    emu.enable_db()
    emu.enable_table("dbo", "items")  # not the signal table
    database = dbname(pg_db)
    config, problems = build_sqlserver_config(
        name="ms", connection={"user": "postgres"},
        options={"database.names": database, "signal.data.collection": f"{database}.dbo.dbz_signal"}, path="s")
    assert config is not None, problems
    session = SqlServerCaptureSession(config, emu.gateway(), None)
    try:
        with caplog.at_level("WARNING"):
            list(session.stream(until_idle=True))
    finally:
        session.close()
    assert f"signal table {database}.dbo.dbz_signal has no capture instance" in caplog.text
    assert "sys.sp_cdc_enable_table @source_schema = N'dbo', @source_name = N'dbz_signal'" in caplog.text
