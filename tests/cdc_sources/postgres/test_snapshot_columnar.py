"""The columnar snapshot reader against a real server.

The reference is the per-row rendering the connector used before: every row read as PostgreSQL
text (``COPY`` text format, parsed by psycopg), rendered with ``TableCodec.row`` / ``TableCodec.key``
inside `envelope`, with Debezium's ``source.snapshot`` markers decided by a one-row look-ahead.
The columnar reader must produce the same records, byte for byte (processing-time ``ts_*`` aside).
"""

from __future__ import annotations

import dataclasses
import re
import time
from collections.abc import Iterator, Sequence
from typing import Any

import psutil
import psycopg
import pytest

from cdc_sources.postgres import copy_process, copy_source
from cdc_sources.postgres.catalog import Catalog
from cdc_sources.postgres.config import ConnectionSettings
from cdc_sources.postgres.connection import SESSION_SETTINGS, connect_sql
from cdc_sources.postgres.converters import ConverterSettings
from cdc_sources.postgres.envelope import SourceInfo, dumps, envelope
from cdc_sources.postgres.errors import PostgresAuthError, PostgresConnectError, PostgresError
from cdc_sources.postgres.offset import PostgresOffset
from cdc_sources.postgres.policy import FilterPolicy
from cdc_sources.postgres.schema import build_codec
from cdc_sources.postgres.snapshot_columnar import PostgresColumnarSnapshotReader, SnapshotTable
from cdc_sources.spi import ChangeBlock, SchemaVersion, SnapshotProgress, StreamItem

pytestmark = [pytest.mark.integration, pytest.mark.postgres]

LSN, TX_ID, SLOT = 123_456_789, 4242, "snap_slot"
HEADERS = {"__debezium.context.taskId": '"0"'}
_TS = re.compile(r',"ts_ms":\d+,"ts_us":\d+,"ts_ns":\d+}$')

TYPES_DDL = """
CREATE TYPE mood AS ENUM ('sad', 'ok', 'happy');
CREATE DOMAIN price AS numeric(8,3);
CREATE TABLE kinds (
    id bigint PRIMARY KEY, s smallint, i integer NOT NULL DEFAULT 7, o oid, b boolean, t text, v varchar(10),
    c char(5), n numeric(12,2), nv numeric, nbig numeric(30,5), f float8, tz timestamptz, tz0 timestamptz(0),
    ts timestamp, ts3 timestamp(3), d date, tm time, iv interval, u uuid, j jsonb, by bytea, ai int[],
    m mood, p price, ip inet
);
INSERT INTO kinds VALUES
 (1, -32768, -2147483648, 4294967295, true, 'plain', 'v', 'c', -1234567890.12, 1.500, 123456789012345678901234.12345,
  'NaN', 'infinity', '-infinity', 'infinity', '-infinity', 'infinity', '24:00:00', 'P1Y2M', gen_random_uuid(),
  '{"a": [1, "x\\"y"]}', '\\x00ff', '{1,NULL,3}', 'sad', 12345.678, '10.0.0.1/8'),
 (2, 32767, 2147483647, 0, false, E'quote " back \\\\ tab \\t nl \\n ctl \\x01 end', '', '', 0.00, -0.001, -1,
  1e300, '2020-02-29 23:59:59.999999+00', '1999-12-31 23:59:59+00', '0044-03-15 12:00:00 BC',
  '2020-01-01 00:00:00.123', '0044-03-15 BC', '00:00:00.000001', 'P-1D', NULL, 'null', '', '{}', 'happy', -0.001,
  '::1'),
 (3, NULL, DEFAULT, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
  NULL, NULL, NULL, NULL, NULL, NULL, NULL),
 (4, 0, 0, 1, true, E'ünïcödé ☃ 😀 \\u2028 "quoted"', 'x', 'abcde', 99.99, 100, 0.00001, -0.0,
  '1970-01-01 00:00:00+00', '2262-04-11 23:47:16+00', '1969-12-31 23:59:59.999999', '1970-01-01 00:00:00.001',
  '2000-02-29', '12:34:56.789', 'PT0S', '00000000-0000-0000-0000-000000000000', '[1, 2, {"k": "v"}]', '\\x',
  '{{1,2},{3,4}}', 'ok', 0, '192.168.0.1'),
 (5, 1, 1, 1, false, E'line1\\nline2\\r\\n,comma,"quoted,comma"', 'a,b', 'a"b', -0.01, 1e-20,
  99999999999999999999.99999, -1.5e-7, '12345-06-07 08:09:10+00', '0001-01-01 00:00:00+00',
  '9999-12-31 23:59:59.999999', '1900-02-28 12:00:00.5', '1582-10-04', '23:59:59.999999', 'PT0.000001S',
  gen_random_uuid(), '{}', '\\x5c22', NULL, 'sad', 99999.999, '2001:db8::/32');
INSERT INTO kinds (id, s, i, o, b, t, v, c, n, tz, ts, d)
SELECT g, (g % 30000)::smallint, g * 7, g, g % 3 = 0, 'row ' || g || repeat(' x', g % 7), left(md5(g::text), 10),
       chr(65 + g % 26), (g * 13.37)::numeric(12,2), timestamptz '2026-01-01 00:00:00+00' + g * interval '1.25 s',
       timestamp '1960-01-01 00:00:00' + g * interval '7 hours 0.5 s', date '1990-01-01' + g
FROM generate_series(6, 3000) AS g;
"""


def _settings(dsn: str, *, user: str | None = None, port: int | None = None) -> ConnectionSettings:
    parts = dict(p.split("=", 1) for p in dsn.split())
    return ConnectionSettings(parts["host"], port or int(parts["port"]), parts["dbname"], user or parts["user"])


def _tables(conn: Any, names: Sequence[str], settings: ConverterSettings) -> list[SnapshotTable]:
    """Codecs and SELECTs for ``names`` (public schema), as the session builds them."""
    policy, problems = FilterPolicy.from_options({})
    assert not problems
    catalog = Catalog(conn)
    by_name = {name: oid for oid, schema, name in catalog.list_tables() if schema == "public"}
    infos = catalog.tables([by_name[n] for n in names])
    out = []
    for name in names:
        info = infos[by_name[name]]
        codec = build_codec(prefix="it", schema="public", table=name, columns=info.columns,
                            primary_key=info.primary_key, settings=settings, policy=policy, origin="snapshot")
        cols = ", ".join(f'"{c.name}"' for c in info.columns)
        out.append(SnapshotTable(codec, f'SELECT {cols} FROM "public"."{name}"', info.oid))
    return out


class Snapshot:
    """A REPEATABLE READ transaction with an exported snapshot, as the capture session opens one."""

    def __init__(self, dsn: str) -> None:
        self.dsn = dsn
        self.conn = connect_sql(_settings(dsn), autocommit=False)
        self.conn.execute("BEGIN ISOLATION LEVEL REPEATABLE READ")
        self.name = str(self.conn.execute("SELECT pg_export_snapshot()").fetchone()[0])

    def reader(self, settings: ConverterSettings, *, worker_min_bytes: int,
               connection: ConnectionSettings | None = None) -> PostgresColumnarSnapshotReader:
        reader = PostgresColumnarSnapshotReader(
            conn=self.conn, connection=connection or _settings(self.dsn), snapshot_name=self.name, settings=settings,
            source=SourceInfo("it", "db"), lsn=LSN, tx_id=TX_ID, slot=SLOT, headers=HEADERS,
            worker_min_bytes=worker_min_bytes)
        reader.run = dataclasses.replace(reader.run, ts_us=1_700_000_000_123_456)
        return reader

    def close(self) -> None:
        self.conn.rollback()
        self.conn.close()


@pytest.fixture
def snapshot(pg_db: str) -> Iterator[Snapshot]:
    opened: list[Snapshot] = []

    def make() -> Snapshot:
        opened.append(Snapshot(pg_db))
        return opened[-1]

    yield make  # type: ignore[misc]
    for s in opened:
        s.close()


# -- the per-row reference ------------------------------------------------------------------------

def _text_rows(conn: Any, select: str) -> list[tuple[str | None, ...]]:
    with conn.cursor() as cur, cur.copy(f"COPY ({select}) TO STDOUT") as copy:
        return [tuple(r) for r in copy.rows()]


def per_row(conn: Any, tables: Sequence[SnapshotTable], ts_us: int) -> list[tuple[Any, ...]]:
    """The records as Debezium marks them, one row looked ahead: a table's final row is ``last``
    when no later table has rows (Debezium marks the last row it emits ``last``)."""
    source = SourceInfo("it", "db")
    out: list[tuple[Any, ...]] = []
    pending: tuple[Any, Sequence[str | None], bool] | None = None

    def record(p: tuple[Any, Sequence[str | None], bool], *, last_in_table: bool, last: bool) -> None:
        codec, values, first_in_table = p
        n = len(out) + 1
        if n == 1 and not last:
            marker = "first"
        elif last:
            marker = "last"
        elif last_in_table:
            marker = "last_in_data_collection"
        elif first_in_table:
            marker = "first_in_data_collection"
        else:
            marker = "true"
        src = source.block(schema=codec.schema, table=codec.table, ts_us=ts_us, snapshot=marker, tx_id=TX_ID,
                           lsn=LSN, sequence=f'[null,"{LSN}"]')
        key = codec.key(values)
        position = PostgresOffset(LSN, None, TX_ID, ts_us, snapshot=True, last_snapshot_record=last,
                                  slot=SLOT).to_dict()
        out.append((codec.topic, None if key is None else dumps(key),
                    _TS.sub("}", envelope(None, codec.row(values), src, "r", None)), "r", dumps(position),
                    (LSN, 0, n), codec.schema_id, HEADERS))

    ended = False  # the pending row is its table's final row
    for table in tables:
        for i, values in enumerate(_text_rows(conn, table.select)):
            if pending is not None:
                record(pending, last_in_table=ended, last=False)
            pending, ended = (table.codec, values, i == 0), False
        ended = pending is not None  # whether a later table has rows decides if it is the last
    if pending is not None:
        record(pending, last_in_table=True, last=True)
    return out


def records(items: Sequence[StreamItem]) -> list[tuple[Any, ...]]:
    """The columnar reader's blocks as one tuple per record."""
    out: list[tuple[Any, ...]] = []
    for block in items:
        if not isinstance(block, ChangeBlock):
            continue
        keys = block.keys.to_pylist() if block.keys is not None else [None] * len(block)
        for i, (key, value, position) in enumerate(zip(keys, block.values.to_pylist(), block.positions.to_pylist(),
                                                       strict=True)):
            out.append((block.topic, key, _TS.sub("}", value), block.op, position,
                        (*block.order_prefix, block.first_index + i), block.schema_id, block.headers))
    return out


def _markers(recs: Sequence[tuple[Any, ...]]) -> list[tuple[str, str, bool]]:
    import json

    return [(r[0].rsplit(".", 1)[1], json.loads(r[2])["source"]["snapshot"], json.loads(r[4])["last_snapshot_record"])
            for r in recs]


# -- equality with the per-row rendering -----------------------------------------------------------

@pytest.mark.parametrize("worker_min_bytes", [0, 1 << 40], ids=["worker", "in_process"])
@pytest.mark.parametrize("settings", [
    ConverterSettings(),
    ConverterSettings(decimal_handling_mode="string", time_precision_mode="connect", binary_handling_mode="hex"),
    ConverterSettings(decimal_handling_mode="double", time_precision_mode="adaptive_time_microseconds"),
], ids=["defaults", "string_connect", "double_micro"])
def test_columnar_records_equal_the_per_row_rendering(pg_db, snapshot, monkeypatch, settings, worker_min_bytes):
    with psycopg.connect(pg_db, autocommit=True) as conn:
        conn.execute(TYPES_DDL)
        conn.execute("CREATE TABLE empty (id int PRIMARY KEY, t text)")
        conn.execute("CREATE TABLE single (id int PRIMARY KEY, t text)")
        conn.execute("INSERT INTO single VALUES (1, 'only')")
    monkeypatch.setattr(copy_source, "BLOCK_BYTES", 16 << 10)  # many batches: boundaries are exercised
    snap = snapshot()
    tables = _tables(snap.conn, ["single", "kinds", "empty"], settings)
    reader = snap.reader(settings, worker_min_bytes=worker_min_bytes)
    items = list(reader.read(tables))
    expected = per_row(snap.conn, tables, reader.run.ts_us)
    got = records(items)
    assert len(got) == len(expected) == 3001
    for g, e in zip(got, expected, strict=True):
        assert g == e
    assert sum(isinstance(i, ChangeBlock) for i in items) > 10


def test_select_override_texts_postgres_does_not_print_are_converted_per_value(pg_db, snapshot):
    with psycopg.connect(pg_db, autocommit=True) as conn:
        conn.execute("CREATE TABLE o (id int PRIMARY KEY, n int, amount numeric(8,2), at timestamptz)")
        conn.execute("INSERT INTO o SELECT g, g, g / 4.0, timestamptz '2020-01-01 00:00:00+00' + g * interval '1 h' "
                     "FROM generate_series(1, 50) g")
    snap = snapshot()
    (table,) = _tables(snap.conn, ["o"], ConverterSettings())
    odd = dataclasses.replace(table, select=(
        "SELECT id, CASE WHEN id % 2 = 0 THEN lpad(n::text, 4, '0') ELSE n::text END, "
        "CASE WHEN id % 3 = 0 THEN trim(trailing '0' from amount::text) ELSE amount::text END, "
        "CASE WHEN id % 5 = 0 THEN to_char(at, 'YYYY-MM-DD HH24:MI:SS+05') ELSE at::text END FROM o"))
    reader = snap.reader(ConverterSettings(), worker_min_bytes=0)
    assert records(list(reader.read([odd]))) == per_row(snap.conn, [odd], reader.run.ts_us)


# -- markers ---------------------------------------------------------------------------------------

def _one_column_tables(pg_db: str, rows: dict[str, int]) -> None:
    with psycopg.connect(pg_db, autocommit=True) as conn:
        for name, n in rows.items():
            conn.execute(f"CREATE TABLE {name} (id int PRIMARY KEY)")
            conn.execute(f"INSERT INTO {name} SELECT generate_series(1, {n})")


@pytest.mark.parametrize(("rows", "expected"), [
    ({"a": 3, "b": 1, "c": 0, "d": 2},
     [("a", "first", False), ("a", "true", False), ("a", "last_in_data_collection", False),
      ("b", "last_in_data_collection", False), ("d", "first_in_data_collection", False), ("d", "last", True)]),
    ({"a": 0, "b": 2, "c": 1},
     [("b", "first", False), ("b", "last_in_data_collection", False), ("c", "last", True)]),
    ({"a": 1, "b": 0},
     [("a", "last", True)]),
    ({"a": 1}, [("a", "last", True)]),
    ({"a": 2, "b": 0}, [("a", "first", False), ("a", "last", True)]),  # as Debezium: the last row emitted
    ({"a": 2, "b": 1, "c": 0, "d": 0},
     [("a", "first", False), ("a", "last_in_data_collection", False), ("b", "last", True)]),
    ({"a": 0, "b": 0}, []),
])
def test_markers_follow_debezium_precedence_across_tables(pg_db, snapshot, rows, expected):
    _one_column_tables(pg_db, rows)
    snap = snapshot()
    tables = _tables(snap.conn, list(rows), ConverterSettings())
    reader = snap.reader(ConverterSettings(), worker_min_bytes=1 << 40)
    items = list(reader.read(tables))
    assert _markers(records(items)) == expected
    assert records(items) == per_row(snap.conn, tables, reader.run.ts_us)
    versions = [i.table for i in items if isinstance(i, SchemaVersion)]
    assert versions == [f"public.{t}" for t in rows]
    for t in rows:  # a table's schema version comes before its rows and its end
        first = next(n for n, i in enumerate(items) if getattr(i, "table", None) == f"public.{t}")
        assert isinstance(items[first], SchemaVersion)
    done = [i for i in items if isinstance(i, SnapshotProgress)]
    assert [(p.table, p.rows, p.tables_done, p.table_done) for p in done] == [
        (f"public.{t}", n, i + 1, True) for i, (t, n) in enumerate(rows.items())]


def test_markers_and_order_keys_across_batches_of_a_worker(pg_db, snapshot, monkeypatch):
    _one_column_tables(pg_db, {"a": 5000, "b": 1, "c": 4000})
    monkeypatch.setattr(copy_source, "BLOCK_BYTES", 4 << 10)
    snap = snapshot()
    tables = _tables(snap.conn, ["a", "b", "c"], ConverterSettings())
    reader = snap.reader(ConverterSettings(), worker_min_bytes=0)
    items = list(reader.read(tables))
    got = records(items)
    assert got == per_row(snap.conn, tables, reader.run.ts_us)
    assert [r[5][2] for r in got] == list(range(1, 9002))
    assert [(p.table, p.rows) for p in items if isinstance(p, SnapshotProgress) and p.table_done] == [
        ("public.a", 5000), ("public.b", 1), ("public.c", 4000)]


def test_progress_is_reported_at_every_ten_thousand_rows(pg_db, snapshot):
    _one_column_tables(pg_db, {"a": 25_000})
    snap = snapshot()
    items = list(snap.reader(ConverterSettings(), worker_min_bytes=0).read(
        _tables(snap.conn, ["a"], ConverterSettings())))
    assert [(p.rows, p.table_done) for p in items if isinstance(p, SnapshotProgress)] == [
        (10_000, False), (20_000, False), (25_000, True)]
    assert isinstance(items[0], SchemaVersion)


def test_tables_without_columns_and_null_only_rows(pg_db, snapshot):
    with psycopg.connect(pg_db, autocommit=True) as conn:
        conn.execute("CREATE TABLE nocols ()")
        conn.execute("INSERT INTO nocols DEFAULT VALUES")
        conn.execute("INSERT INTO nocols DEFAULT VALUES")
        conn.execute("CREATE TABLE nulls (v text)")
        conn.execute("ALTER TABLE nulls REPLICA IDENTITY FULL")
        conn.execute("INSERT INTO nulls VALUES (NULL), (''), (NULL)")
    for worker_min_bytes in (0, 1 << 40):
        snap = snapshot()
        tables = _tables(snap.conn, ["nocols", "nulls"], ConverterSettings())
        reader = snap.reader(ConverterSettings(), worker_min_bytes=worker_min_bytes)
        got = records(list(reader.read(tables)))
        assert got == per_row(snap.conn, tables, reader.run.ts_us)
        assert [r[2].split(',"source"')[0] for r in got] == [
            '{"before":null,"after":{}', '{"before":null,"after":{}', '{"before":null,"after":{"v":null}',
            '{"before":null,"after":{"v":""}', '{"before":null,"after":{"v":null}']


# -- worker errors and clean-up --------------------------------------------------------------------

def test_permission_denied_in_a_worker_is_an_auth_error_naming_the_table(pg_db, snapshot):
    _one_column_tables(pg_db, {"secret": 3})
    with psycopg.connect(pg_db, autocommit=True) as conn:
        conn.execute("DROP ROLE IF EXISTS snap_reader")
        conn.execute("CREATE ROLE snap_reader LOGIN")
    try:
        snap = snapshot()
        tables = _tables(snap.conn, ["secret"], ConverterSettings())
        reader = snap.reader(ConverterSettings(), worker_min_bytes=0,
                             connection=_settings(pg_db, user="snap_reader"))
        with pytest.raises(PostgresAuthError, match=r"snapshotting table public\.secret: .*permission denied"):
            list(reader.read(tables))
    finally:
        with psycopg.connect(pg_db, autocommit=True) as conn:
            conn.execute("DROP ROLE snap_reader")


def test_an_unreachable_server_is_a_retriable_connect_error(pg_db, snapshot):
    _one_column_tables(pg_db, {"a": 3})
    snap = snapshot()
    tables = _tables(snap.conn, ["a"], ConverterSettings())
    from pipelines.local_postgres import free_port

    reader = snap.reader(ConverterSettings(), worker_min_bytes=0, connection=_settings(pg_db, port=free_port()))
    with pytest.raises(PostgresConnectError, match=r"snapshotting table public\.a"):
        list(reader.read(tables))


def test_an_unknown_snapshot_fails_naming_the_table(pg_db, snapshot):
    _one_column_tables(pg_db, {"a": 3})
    snap = snapshot()
    tables = _tables(snap.conn, ["a"], ConverterSettings())
    reader = snap.reader(ConverterSettings(), worker_min_bytes=0)
    reader.snapshot_name = "00000003-0000BEEF-1"
    with pytest.raises(PostgresError, match=r"snapshotting table public\.a: .*snapshot") as err:
        list(reader.read(tables))
    assert not isinstance(err.value, PostgresConnectError)


def test_permission_denied_in_process_names_the_table(pg_db):
    _one_column_tables(pg_db, {"secret": 3})
    with psycopg.connect(pg_db, autocommit=True) as conn:
        conn.execute("DROP ROLE IF EXISTS snap_reader2")
        conn.execute("CREATE ROLE snap_reader2 LOGIN")
    try:
        admin = connect_sql(_settings(pg_db), autocommit=True)
        tables = _tables(admin, ["secret"], ConverterSettings())
        admin.close()
        conn = connect_sql(_settings(pg_db, user="snap_reader2"), autocommit=False)
        conn.execute("BEGIN ISOLATION LEVEL REPEATABLE READ")
        reader = PostgresColumnarSnapshotReader(
            conn=conn, connection=_settings(pg_db), snapshot_name=None, settings=ConverterSettings(),
            source=SourceInfo("it", "db"), lsn=LSN, tx_id=TX_ID, slot=SLOT, worker_min_bytes=0)
        with pytest.raises(PostgresAuthError, match=r"snapshotting table public\.secret"):
            list(reader.read(tables))
        conn.close()
    finally:
        with psycopg.connect(pg_db, autocommit=True) as c:
            c.execute("DROP ROLE snap_reader2")


def _workers() -> list[psutil.Process]:
    """Live copy workers started by this process."""
    found = []
    for p in psutil.Process().children(recursive=True):
        try:
            if p.status() != psutil.STATUS_ZOMBIE and any(a.endswith("copy_worker.py") for a in p.cmdline()):
                found.append(p)
        except psutil.Error:  # gone meanwhile
            continue
    return found


def _worker_backends(pg_db: str) -> int:
    with psycopg.connect(pg_db, autocommit=True) as conn:
        row = conn.execute("SELECT count(*) FROM pg_stat_activity WHERE query LIKE 'COPY (SELECT%' "
                           "AND pid <> pg_backend_pid()").fetchone()
    return int(row[0]) if row else 0


def _eventually(check: Any, timeout_s: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.05)
    return bool(check())


def test_closing_the_reader_mid_table_stops_the_worker_and_its_copy(pg_db, snapshot, monkeypatch):
    with psycopg.connect(pg_db, autocommit=True) as conn:  # far more rows than the worker can send ahead
        conn.execute("CREATE TABLE big (id int PRIMARY KEY, pad text)")
        conn.execute("INSERT INTO big SELECT g, repeat('x', 200) FROM generate_series(1, 200000) g")
    monkeypatch.setattr(copy_source, "BLOCK_BYTES", 8 << 10)
    monkeypatch.setattr(copy_process, "AHEAD_BYTES", 1 << 20)
    snap = snapshot()
    items = snap.reader(ConverterSettings(), worker_min_bytes=0).read(_tables(snap.conn, ["big"], ConverterSettings()))
    first_block = next(i for i in items if isinstance(i, ChangeBlock))
    assert len(first_block) > 0
    assert len(_workers()) == 1
    items.close()  # type: ignore[attr-defined]
    assert _workers() == []
    assert _eventually(lambda: _worker_backends(pg_db) == 0)


def test_a_failing_table_leaves_no_worker_behind(pg_db, snapshot):
    _one_column_tables(pg_db, {"a": 3})
    snap = snapshot()
    (table,) = _tables(snap.conn, ["a"], ConverterSettings())
    broken = dataclasses.replace(table, select="SELECT id / 0 FROM a")
    with pytest.raises(PostgresError, match=r"snapshotting table public\.a: .*division by zero"):
        list(snap.reader(ConverterSettings(), worker_min_bytes=0).read([broken]))
    assert _workers() == []


def test_a_worker_exits_when_its_parent_closes_stdin(pg_db, snapshot):
    """The parent's death closes the worker's stdin: the worker must not go on alone."""
    _one_column_tables(pg_db, {"a": 3})
    snap = snapshot()
    import json
    import subprocess
    import sys

    proc = subprocess.Popen([sys.executable, "-P", copy_process.copy_worker.__file__], stdin=subprocess.PIPE,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    assert proc.stdin is not None
    connect = {**_settings(pg_db).libpq_kwargs(), "options": copy_process.SESSION_OPTIONS}
    request = {"connect": connect, "snapshot": snap.name, "copy": "COPY (SELECT pg_sleep(30)) TO STDOUT"}
    proc.stdin.write(json.dumps(request).encode() + b"\n")
    proc.stdin.flush()
    deadline = time.monotonic() + 30  # until the worker's COPY runs on the server
    with psycopg.connect(pg_db, autocommit=True) as conn:
        while not conn.execute("SELECT count(*) FROM pg_stat_activity WHERE query LIKE 'COPY (SELECT pg_sleep(30))%'"
                               ).fetchone()[0]:
            assert time.monotonic() < deadline and proc.poll() is None, proc.stderr.read() if proc.stderr else ""
            time.sleep(0.02)
    proc.stdin.close()
    assert proc.wait(10) == 4


def test_the_worker_session_uses_the_converter_settings(pg_db, snapshot):
    with psycopg.connect(pg_db, autocommit=True) as conn:
        conn.execute("CREATE TABLE s (name text PRIMARY KEY, setting text)")
    snap = snapshot()
    (table,) = _tables(snap.conn, ["s"], ConverterSettings())
    names = ", ".join(f"'{k}'" for k in SESSION_SETTINGS)
    probe = dataclasses.replace(table, select=f"SELECT name, setting FROM pg_settings WHERE name IN ({names})")
    got = records(list(snap.reader(ConverterSettings(), worker_min_bytes=0).read([probe])))
    import json

    seen = {json.loads(r[2])["after"]["name"].lower(): json.loads(r[2])["after"]["setting"] for r in got}
    assert seen == {k.lower(): v for k, v in SESSION_SETTINGS.items()}
