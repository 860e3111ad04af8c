"""Incremental snapshot chunks read column by column, differentially against the row path (real MariaDB).

The reference is `MySqlChunkSource` without a columnar reader: each chunk read by pymysql with
`SNAPSHOT_CONVERSIONS` and rendered with ``TableCodec.row_tuple`` / ``key_tuple``. With a
`ColumnarChunkReader`, the same chunks (same key ranges, sizes, filters) must come out equal:
each row's key and ``after`` text, their order, the last chunking key and whether rows are left.
The tables are the columnar snapshot test's: every type and handling mode the converters
support, with the converter round-trip test's edge values and random rows of the vectorised
types.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pymysql
import pytest

from cdc_sources.common.envelope import VERSION
from cdc_sources.common.incremental_snapshot import Chunk
from cdc_sources.common.incremental_state import SnapshotCollection
from cdc_sources.mysql import connection
from cdc_sources.mysql.codec import build_codec
from cdc_sources.mysql.converters import SNAPSHOT_CONVERSIONS, MySqlConverterSettings, ValueConversionError
from cdc_sources.mysql.ddl import SchemaModel
from cdc_sources.mysql.envelope import SourceInfo
from cdc_sources.mysql.errors import MySqlError
from cdc_sources.mysql.incremental import MySqlChunkSource
from cdc_sources.mysql.incremental_columnar import ColumnarChunkReader
from cdc_sources.mysql.model import TableDef
from cdc_sources.mysql.policy import MySqlFilterPolicy
from cdc_sources.mysql.snapshot_process import SnapshotWorker
from cdc_sources.spi import ChangeBlock
from pipelines.local_mariadb import LocalMariaDB
from tests.cdc_sources.mysql.converters.test_mariadb_roundtrip import COLUMNS, ROWS
from tests.cdc_sources.mysql.test_snapshot_columnar import EXTRA_DDL, VARIANTS, _extra_rows, execute, settings_of

pytestmark = [pytest.mark.integration, pytest.mark.mariadb]

EXTRA_ROWS = 400


@pytest.fixture(scope="module")
def typed_db(mariadb_server: LocalMariaDB) -> Iterator[dict[str, Any]]:
    """``t`` (every type, edge values), ``extra`` (random rows of the vectorised types) and ``nokey``
    (no key: chunked by a surrogate key), in a database of this module."""
    name = "t_incremental_columnar"
    admin = pymysql.connect(**mariadb_server.connect_args(), autocommit=True)  # type: ignore[arg-type]
    try:
        with admin.cursor() as cur:
            cur.execute(f"DROP DATABASE IF EXISTS `{name}`")
            cur.execute(f"CREATE DATABASE `{name}`")
        db = mariadb_server.connect_args(name)
        columns = ", ".join(f"{n} {d}" for n, d in COLUMNS)
        execute(db, "SET SESSION time_zone = '+00:00'", f"CREATE TABLE t ({columns}) DEFAULT CHARSET=utf8mb4",
                *(f"INSERT INTO t VALUES {row}" for row in ROWS), EXTRA_DDL,
                "INSERT INTO extra VALUES " + ", ".join(_extra_rows(EXTRA_ROWS)),
                "CREATE TABLE nokey (a INT, b VARCHAR(5))",
                "INSERT INTO nokey VALUES (1, 'a'), (NULL, NULL), (3, 'c'), (2, 'b'), (5, NULL)")
        yield db
    finally:
        with admin.cursor() as cur:
            cur.execute(f"DROP DATABASE IF EXISTS `{name}`")
        admin.close()


class Sources:
    """The row path and the columnar path over the same tables, structures and codecs."""

    def __init__(self, db: dict[str, Any], settings: MySqlConverterSettings, options: dict[str, str],
                 start: Any = None) -> None:
        self.db = db
        self.settings = settings
        policy, problems = MySqlFilterPolicy.from_options(options)
        assert not problems
        self.model = SchemaModel()
        conn = pymysql.connect(**db)
        try:
            with conn.cursor() as cur:
                for table in ("t", "extra", "nokey"):
                    cur.execute(f"SHOW CREATE TABLE `{table}`")
                    self.model.apply(cur.fetchone()[1], database=db["database"])
        finally:
            conn.close()
        self.started: list[SnapshotWorker | None] = []

        def start_worker() -> SnapshotWorker | None:
            worker = SnapshotWorker.start(settings_of(db)) if start is None else start()
            self.started.append(worker)
            return worker

        def codec_for(definition: TableDef) -> Any:
            return build_codec(prefix="my", connector="mariadb", table=definition, settings=settings, policy=policy,
                               origin="snapshot")

        def make(columnar: ColumnarChunkReader | None) -> MySqlChunkSource:
            return MySqlChunkSource(
                connect=lambda: connection.connect(settings_of(db), conversions=SNAPSHOT_CONVERSIONS),
                table_def=self.model.table, codec_for=codec_for, source=SourceInfo("mariadb", "my", VERSION),
                signal_table=None, columnar=columnar)

        self.rows = make(None)
        self.reader = ColumnarChunkReader(start_worker, settings)
        self.columnar = make(self.reader)

    def close(self) -> None:
        self.rows.close()
        self.columnar.close()


def all_chunks(src: MySqlChunkSource, c: SnapshotCollection, size: int) -> list[tuple[Any, ...]]:
    """Every chunk of a table, as the incremental snapshot reads them (key order, up to the largest key)."""
    key = src.chunk_key(c)
    assert isinstance(key, tuple), key
    top = src.max_key(c, key)
    out: list[tuple[Any, ...]] = []
    after = None
    while True:
        chunk = src.read_chunk(c, key, after, top, size)
        out.append(comparable(chunk))
        if not chunk.more:
            return out
        after = chunk.last_key


def comparable(chunk: Chunk) -> tuple[Any, ...]:
    return chunk.topic, list(chunk.rows.items()), chunk.last_key, chunk.more


def all_events(src: MySqlChunkSource, c: SnapshotCollection, size: int) -> list[list[tuple[Any, ...]]]:
    """Every chunk's events, as the incremental snapshot emits them at the close watermark, after
    the window's streamed events dropped every third row (in key order); with the kind of rows
    each chunk held."""
    key = src.chunk_key(c)
    assert isinstance(key, tuple), key
    top = src.max_key(c, key)
    out: list[list[tuple[Any, ...]]] = []
    after = None
    while True:
        chunk = src.read_chunk(c, key, after, top, size)
        for dropped in list(chunk.rows)[::3]:
            chunk.rows.pop(dropped, None)
        n = len(out)
        items = src.read_events(c, chunk, (7, 1000 + n, 0), f'{{"file":"bin.000007","pos":{1000 + n}}}')
        out.append([type(chunk.rows).__name__, *records(items)])
        if not chunk.more:
            return out
        after = chunk.last_key


def records(items: list[Any]) -> list[tuple[Any, ...]]:
    """Every record of a chunk's events: key, value, op, position, order key, schema id, headers,
    and the Arrow types of the block's columns."""
    out: list[tuple[Any, ...]] = []
    for item in items:
        if not isinstance(item, ChangeBlock):
            continue
        keys = item.keys.to_pylist() if item.keys is not None else [None] * len(item)
        types = (None if item.keys is None else str(item.keys.type), str(item.values.type), str(item.positions.type))
        out.extend((k, v, item.op, p, item.order_key(i), item.schema_id, item.headers, types)
                   for i, (k, v, p) in enumerate(zip(keys, item.values.to_pylist(), item.positions.to_pylist(),
                                                     strict=True)))
    return out


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_columnar_chunks_equal_the_row_paths(typed_db: dict[str, Any], variant: str) -> None:
    settings, options = VARIANTS[variant]
    sources = Sources(typed_db, settings, options)
    schema = typed_db["database"]
    try:
        for c, size in [(SnapshotCollection(schema, "t"), 2), (SnapshotCollection(schema, "extra"), 97),
                        (SnapshotCollection(schema, "extra", condition="id MOD 3 <> 0"), 150),
                        (SnapshotCollection(schema, "nokey", surrogate_key="a"), 2)]:
            expected = all_chunks(sources.rows, c, size)
            got = all_chunks(sources.columnar, c, size)
            assert got == expected, c
            assert sum(len(rows) for _, rows, _, _ in got) > 0
        # a restarted chunk: the whole recorded range at once (no size)
        c = SnapshotCollection(schema, "extra")
        key = ("id",)
        assert comparable(sources.columnar.read_chunk(c, key, ("17",), ("301",), None)) == \
            comparable(sources.rows.read_chunk(c, key, ("17",), ("301",), None))
        assert len(sources.started) == 1 and sources.started[0] is not None and sources.reader.available
    finally:
        sources.close()


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_columnar_chunks_events_equal_the_row_paths_byte_for_byte(typed_db: dict[str, Any], variant: str,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """The events of each chunk, built column-wise from Arrow arrays, are the row path's (a dict of
    texts, events rendered row by row), after the same rows were dropped by the window; processing
    time (``ts_*``) is frozen so the texts compare byte for byte."""
    monkeypatch.setattr(time, "time_ns", lambda: 1_700_000_000_123_456_789)
    settings, options = VARIANTS[variant]
    sources = Sources(typed_db, settings, options)
    schema = typed_db["database"]
    try:
        for c, size, kind in [(SnapshotCollection(schema, "t"), 3, "ArrowChunkRows"),
                              (SnapshotCollection(schema, "extra", condition="id MOD 3 <> 0"), 150, "ArrowChunkRows"),
                              (SnapshotCollection(schema, "nokey", surrogate_key="a"), 2, "dict")]:
            expected = all_events(sources.rows, c, size)
            got = all_events(sources.columnar, c, size)
            assert [e[1:] for e in got] == [e[1:] for e in expected], c
            assert {e[0] for e in expected} == {"dict"} and {e[0] for e in got} == {kind}, c
            assert sum(len(e) - 1 for e in got) > 0
    finally:
        sources.close()


def test_a_message_key_that_is_not_unique_keeps_one_row_per_key_as_the_row_path(
        typed_db: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    """``message.key.columns`` naming a column that is not unique: the row path's dict keeps the
    last row of each key, and so do the Arrow rows of the columnar path."""
    monkeypatch.setattr(time, "time_ns", lambda: 1_700_000_000_123_456_789)
    sources = Sources(typed_db, MySqlConverterSettings(), {"message.key.columns": ".*\\.extra:yr"})
    c = SnapshotCollection(typed_db["database"], "extra")
    try:
        expected = all_events(sources.rows, c, 150)
        got = all_events(sources.columnar, c, 150)
        assert [e[1:] for e in got] == [e[1:] for e in expected]
        assert {e[0] for e in got} == {"ArrowChunkRows"}
        assert sum(len(e) - 1 for e in got) < EXTRA_ROWS * 2 // 3  # keys repeat: fewer events than rows
    finally:
        sources.close()


def test_the_chunk_covers_every_type_and_row(typed_db: dict[str, Any]) -> None:
    """The comparison above is not vacuous: every column of ``t`` and every row is in the chunks."""
    sources = Sources(typed_db, MySqlConverterSettings(), {})
    try:
        chunks = all_chunks(sources.columnar, SnapshotCollection(typed_db["database"], "t"), 1000)
        assert len(chunks) == 1
        _, rows, last, more = chunks[0]
        assert len(rows) == len(ROWS) and not more and last == (str(len(ROWS)),)
        assert all(f'"{name}":' in rows[-1][1] for name, _ in COLUMNS)
    finally:
        sources.close()


def test_values_the_converters_reject_fail_alike(typed_db: dict[str, Any]) -> None:
    settings = MySqlConverterSettings(time_precision_mode="connect", event_converting_failure_handling_mode="fail")
    sources = Sources(typed_db, settings, {})
    c = SnapshotCollection(typed_db["database"], "t")
    try:
        with pytest.raises(ValueConversionError) as row_error:
            sources.rows.read_chunk(c, ("id",), None, None, 1000)
        chunk = sources.columnar.read_chunk(c, ("id",), None, None, 1000)  # rendered meanwhile, on its thread
        assert chunk.rows and chunk.last_key == (str(len(ROWS)),)
        with pytest.raises(ValueConversionError) as columnar_error:
            len(chunk.rows)  # the rows are used: at the close watermark, or a streamed event of the table
        assert str(columnar_error.value) == str(row_error.value)
    finally:
        sources.close()


def test_without_a_reader_process_chunks_are_read_row_by_row(typed_db: dict[str, Any]) -> None:
    sources = Sources(typed_db, MySqlConverterSettings(), {}, start=lambda: None)
    c = SnapshotCollection(typed_db["database"], "extra")
    try:
        assert all_chunks(sources.columnar, c, 150) == all_chunks(sources.rows, c, 150)
        assert sources.started == [None] and not sources.reader.available  # tried once, not per chunk
    finally:
        sources.close()


def test_a_failed_chunk_query_names_the_chunk_and_the_next_chunk_reads_again(typed_db: dict[str, Any]) -> None:
    sources = Sources(typed_db, MySqlConverterSettings(), {})
    schema = typed_db["database"]
    try:
        with pytest.raises(MySqlError, match=rf"reading a chunk of {schema}\.extra"):
            sources.columnar.read_chunk(SnapshotCollection(schema, "extra", condition="no_such_column > 1"),
                                        ("id",), None, None, 10)
        c = SnapshotCollection(schema, "extra")
        assert comparable(sources.columnar.read_chunk(c, ("id",), None, None, 10)) == \
            comparable(sources.rows.read_chunk(c, ("id",), None, None, 10))
        assert len(sources.started) == 2 and all(w is not None for w in sources.started)  # the failed one replaced
    finally:
        sources.close()
