"""The columnar snapshot reader against a real MariaDB, differentially against the row reader.

The reference is `SnapshotRowReader`: every row read by pymysql with `SNAPSHOT_CONVERSIONS` and
rendered with ``TableCodec.row_tuple`` / ``key_tuple``. Inside one snapshot (the snapshot
connection and a `SnapshotWorker` that joined its read view under the global read lock), both
readers read the same tables; their records must be equal byte for byte (processing-time
``ts_*`` of the envelope aside): keys, values, positions, order keys, headers, markers, schema
versions and progress. Every type and handling mode the converters support is covered, with the
edge values of the converter round-trip test.
"""

from __future__ import annotations

import dataclasses
import random
import re
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import psutil
import pymysql
import pytest
from deltalake import DeltaTable

from bronze.schema import topic_path
from cdc_sources.common.envelope import VERSION
from cdc_sources.mysql import connection, snapshot_prepare, snapshot_process
from cdc_sources.mysql.codec import build_codec
from cdc_sources.mysql.config import MySqlConnectionSettings
from cdc_sources.mysql.converters import SNAPSHOT_CONVERSIONS, MySqlConverterSettings, ValueConversionError
from cdc_sources.mysql.ddl import SchemaModel
from cdc_sources.mysql.envelope import SourceInfo
from cdc_sources.mysql.errors import MySqlAuthError, MySqlError
from cdc_sources.mysql.model import TableId
from cdc_sources.mysql.offset import MySqlOffset
from cdc_sources.mysql.policy import MySqlFilterPolicy
from cdc_sources.mysql.session import MySqlCaptureSession
from cdc_sources.mysql.snapshot import SnapshotRowReader, SnapshotTable
from cdc_sources.mysql.snapshot_columnar import MySqlColumnarSnapshotReader
from cdc_sources.mysql.snapshot_prepare import PreparedSnapshot, SnapshotReadViewError, prepare_snapshot
from cdc_sources.mysql.snapshot_process import SnapshotWorker, worker_settings
from cdc_sources.spi import ChangeBlock, ChangeRecord, SchemaVersion, SnapshotProgress, StreamItem
from pipelines.capture import run_capture
from pipelines.config import parse_pipeline
from tests.cdc_sources.mysql.converters.test_mariadb_roundtrip import COLUMNS, ROWS

pytestmark = [pytest.mark.integration, pytest.mark.mariadb]

HEADERS = {"__debezium.context.taskId": '"0"'}
_TS = re.compile(r',"ts_ms":\d+,"ts_us":\d+,"ts_ns":\d+}$')
RNG_SEED = 20261206

EXTRA_DDL = """CREATE TABLE extra (
  id INT NOT NULL PRIMARY KEY, bi BIGINT, biu BIGINT UNSIGNED, iz INT(6) ZEROFILL, d2 DECIMAL(12,2),
  d0 DECIMAL(10,0) NOT NULL DEFAULT 0, vc VARCHAR(60), dt DATE, dtm3 DATETIME(3), dtm6 DATETIME(6), ts0 TIMESTAMP NULL,
  ts3 TIMESTAMP(3) NULL, yr YEAR, f DOUBLE, tm TIME(3), bl VARBINARY(16)
) DEFAULT CHARSET=utf8mb4"""


def _extra_rows(n: int) -> list[str]:
    """Random rows of the vectorised types, NULLs and escapes included (seeded)."""
    rng = random.Random(RNG_SEED)

    def maybe(text: str) -> str:
        return "NULL" if rng.random() < 0.1 else text

    def quoted(text: str) -> str:
        return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"

    alphabet = "abcXYZ 019é☃😀\"\\\t\n\x01,"
    rows = []
    for i in range(1, n + 1):
        micros = rng.randint(-(10**15), 10**15)
        rows.append("(" + ", ".join([
            str(i), maybe(str(rng.randint(-(2**63), 2**63 - 1))), maybe(str(rng.randint(0, 2**64 - 1))),
            maybe(str(rng.randint(0, 999999))), maybe(f"{rng.randint(-10**10, 10**10)}.{rng.randint(0, 99):02d}"),
            str(rng.randint(-10**9, 10**9)),
            maybe(quoted("".join(rng.choice(alphabet) for _ in range(rng.randint(0, 20))))),
            maybe(f"'{rng.randint(1000, 9999)}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}'"),
            maybe(f"FROM_UNIXTIME(0) + INTERVAL {micros} MICROSECOND"),
            maybe(f"'1970-01-01' + INTERVAL {micros} MICROSECOND"),
            maybe(f"FROM_UNIXTIME({rng.randint(1, 2**31 - 2)})"),
            maybe(f"FROM_UNIXTIME({rng.randint(1, 2**31 - 2)}.{rng.randint(0, 999):03d})"),
            maybe(str(rng.randint(1901, 2155))), maybe(repr(rng.uniform(-1e6, 1e6))),
            maybe(f"'{rng.randint(-838, 838)}:{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d}"
                  f".{rng.randint(0, 999)}'"),
            maybe(f"x'{rng.randbytes(rng.randint(0, 16)).hex()}'"),
        ]) + ")")
    return rows


def execute(db: dict[str, Any], *statements: str) -> None:
    conn = pymysql.connect(**db, autocommit=True)
    try:
        with conn.cursor() as cur:
            cur.execute("SET SESSION sql_mode = ''")
            for sql in statements:
                cur.execute(sql)
    finally:
        conn.close()


def settings_of(db: dict[str, Any], **kw: Any) -> MySqlConnectionSettings:
    return MySqlConnectionSettings(host=str(db["host"]), port=int(db["port"]), user=str(db["user"]),
                                   password=str(db.get("password") or ""), database=str(db["database"]), **kw)


@dataclasses.dataclass
class Snapshot:
    """One open snapshot: its connection, the joined worker, and what the session would build."""

    db: dict[str, Any]
    conn: Any
    worker: SnapshotWorker
    prepared: PreparedSnapshot
    model: SchemaModel

    def tables(self, names: Sequence[str], settings: MySqlConverterSettings,
               options: dict[str, str] | None = None) -> list[SnapshotTable]:
        policy, problems = MySqlFilterPolicy.from_options(options or {})
        assert not problems
        out = []
        for name in names:
            table = self.model.table(TableId(self.db["database"], name))
            assert table is not None
            codec = build_codec(prefix="my", connector="mariadb", table=table, settings=settings, policy=policy,
                                origin="snapshot")
            cols = ", ".join(f"`{c.name}`" for c in table.columns)
            out.append(SnapshotTable(table.id, codec, f"SELECT {cols} FROM `{self.db['database']}`.`{name}`"))
        return out

    def rows_reader(self) -> SnapshotRowReader:
        point = self.prepared.point
        offset = MySqlOffset.for_snapshot(point.file, point.pos, point.gtids, ts_sec=1_700_000_000).to_dict()
        return SnapshotRowReader(self.conn, lambda: connection.unbuffered_cursor(self.conn),
                                 SourceInfo("mariadb", "my", VERSION), point, offset, 100, HEADERS)


def open_snapshot(db: dict[str, Any], locking_mode: str = "minimal") -> Snapshot:
    settings = settings_of(db)
    worker = SnapshotWorker.start(settings)
    assert worker is not None, "mysql-connector-python's C extension must be installed for these tests"
    conn = connection.connect(settings, autocommit=False, conversions=SNAPSHOT_CONVERSIONS)
    prepared = prepare_snapshot(
        conn, flavor="mariadb", locking_mode=locking_mode, lock_timeout_ms=10_000,
        captures_database=lambda d: d == db["database"], captures=lambda t: t.database == db["database"],
        store_only_captured_tables=True, binlog_status_sql="SHOW MASTER STATUS",
        gtid_position=lambda cur, f, p: "", reader=worker)
    model = SchemaModel()
    for statement in prepared.statements:
        if statement.ddl.startswith("CREATE TABLE"):
            model.apply(statement.ddl, database=statement.database)
    return Snapshot(db, conn, worker, prepared, model)


@pytest.fixture
def snapshot(mariadb_db: dict[str, Any]) -> Iterator[Snapshot]:
    """The converter round-trip table ``t`` (every type, edge values), ``extra`` (random rows of the
    vectorised types) and small tables, inside an open snapshot whose worker joined the read view."""
    columns = ", ".join(f"{n} {d}" for n, d in COLUMNS)
    execute(mariadb_db, "SET SESSION time_zone = '+00:00'", f"CREATE TABLE t ({columns}) DEFAULT CHARSET=utf8mb4",
            *(f"INSERT INTO t VALUES {row}" for row in ROWS), EXTRA_DDL,
            "INSERT INTO extra VALUES " + ", ".join(_extra_rows(3000)),
            "CREATE TABLE empty (id INT PRIMARY KEY)", "CREATE TABLE one (id INT PRIMARY KEY, v VARCHAR(5))",
            "INSERT INTO one VALUES (1, 'x')", "CREATE TABLE nokey (a INT, b VARCHAR(5))",
            "INSERT INTO nokey VALUES (1, 'a'), (NULL, NULL), (3, 'c')",
            "CREATE TABLE many (id INT PRIMARY KEY, v INT)",
            "INSERT INTO many SELECT seq, seq * 7 FROM seq_1_to_5000")
    snap = open_snapshot(mariadb_db)
    try:
        assert snap.prepared.joined
        yield snap
    finally:
        snap.worker.close()
        snap.conn.close()


def flatten(items: Sequence[StreamItem]) -> tuple[list[tuple[Any, ...]], list[Any], list[Any]]:
    """(records as comparable tuples, schema versions, progress) of a reader's items."""
    records: list[tuple[Any, ...]] = []
    versions, progress = [], []
    for item in items:
        if isinstance(item, SchemaVersion):
            versions.append(item)
        elif isinstance(item, SnapshotProgress):
            progress.append(item)
        elif isinstance(item, ChangeBlock):
            keys = item.keys.to_pylist() if item.keys is not None else [None] * len(item)
            for i, (key, value, position) in enumerate(zip(keys, item.values.to_pylist(), item.positions.to_pylist(),
                                                           strict=True)):
                records.append((item.topic, key, _TS.sub("}", value), item.op, position,
                                (*item.order_prefix, item.first_index + i), item.schema_id, dict(item.headers or {})))
        else:
            run = item if isinstance(item, list) else [item]
            for r in run:
                assert isinstance(r, ChangeRecord)
                records.append((r.topic, r.key, _TS.sub("}", r.value or ""), r.op, r.position, r.order_key,
                                r.schema_id, dict(r.headers or {})))
    return records, versions, progress


def both(snap: Snapshot, tables: list[SnapshotTable], settings: MySqlConverterSettings,
         **reader_args: Any) -> tuple[list[StreamItem], list[StreamItem]]:
    """What the row reader and the columnar reader yield for ``tables``, in the same snapshot."""
    rows = snap.rows_reader()
    expected = list(rows.read(tables))
    columnar = MySqlColumnarSnapshotReader(rows, snap.worker, settings, **reader_args)
    got = list(columnar.read(tables))
    if flatten(expected)[0]:
        assert any(isinstance(i, ChangeBlock) for i in got), "the columnar reader did not read through the worker"
    return expected, got


VARIANTS: dict[str, tuple[MySqlConverterSettings, dict[str, str]]] = {
    "defaults": (MySqlConverterSettings(), {}),
    "strings_connect_precise": (
        MySqlConverterSettings(decimal_handling_mode="string", time_precision_mode="connect",
                               bigint_unsigned_handling_mode="precise", binary_handling_mode="base64",
                               enable_time_adjuster=False),
        {"column.mask.with.5.chars": ".*\\.t\\.vc", "column.truncate.to.3.chars": ".*\\.extra\\.vc",
         "column.mask.hash.SHA-256.with.salt.s4lt": ".*\\.t\\.ch", "column.propagate.source.type": ".*\\.extra\\.d2",
         "message.key.columns": ".*\\.extra:id,d0"}),
    "double_micros_hex": (MySqlConverterSettings(decimal_handling_mode="double", time_precision_mode="microseconds",
                                                 binary_handling_mode="hex"), {}),
    "isostring_urlsafe": (MySqlConverterSettings(time_precision_mode="isostring",
                                                 binary_handling_mode="base64-url-safe"),
                          {"column.exclude.list": ".*\\.t\\.txt"}),
    "nanoseconds_skip": (MySqlConverterSettings(time_precision_mode="nanoseconds",
                                                event_converting_failure_handling_mode="skip"), {}),
}


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_columnar_records_equal_the_row_path(snapshot: Snapshot, variant: str) -> None:
    settings, options = VARIANTS[variant]
    tables = snapshot.tables(["t", "extra", "nokey"], settings, options)
    expected, got = both(snapshot, tables, settings, block_rows=700)
    assert flatten(got) == flatten(expected)
    assert len(flatten(got)[0]) == len(ROWS) + 3000 + 3


def test_values_the_converters_reject_fail_alike(snapshot: Snapshot) -> None:
    settings = MySqlConverterSettings(time_precision_mode="connect", event_converting_failure_handling_mode="fail")
    tables = snapshot.tables(["t"], settings)
    with pytest.raises(ValueConversionError) as row_error:
        list(snapshot.rows_reader().read(tables))
    with pytest.raises(ValueConversionError) as columnar_error:
        list(MySqlColumnarSnapshotReader(snapshot.rows_reader(), snapshot.worker, settings).read(tables))
    assert str(columnar_error.value) == str(row_error.value)


@pytest.mark.parametrize("order", [["empty", "one", "many", "nokey"], ["many", "one"], ["one"], ["empty"],
                                   ["many", "empty"]])
def test_markers_order_keys_and_progress_across_tables_and_batches(snapshot: Snapshot, order: list[str]) -> None:
    settings = MySqlConverterSettings()
    tables = snapshot.tables(order, settings)
    expected, got = both(snapshot, tables, settings, block_rows=1000)
    assert flatten(got) == flatten(expected)
    kinds = [type(i).__name__ for i in got if not isinstance(i, ChangeBlock | SnapshotProgress)]
    assert kinds == ["SchemaVersion"] * len(order)


@pytest.mark.parametrize(("order", "expected"), [
    (["one", "nokey", "empty"], ["first", "first_in_data_collection", "true", "last"]),
    (["one", "empty"], ["last"]),
    (["empty", "one", "empty"], ["last"]),
    (["one"], ["last"]),
])
@pytest.mark.parametrize("columnar", [True, False], ids=["columnar", "row-by-row"])
def test_the_last_row_emitted_is_last_also_when_the_tables_after_it_are_empty(
        snapshot: Snapshot, order: list[str], expected: list[str], columnar: bool) -> None:
    """As Debezium marks it when its snapshot completes: the last row it emitted is ``last``,
    whichever table it belongs to, also when it is the only one."""
    settings = MySqlConverterSettings()
    rows = snapshot.rows_reader()
    reader = MySqlColumnarSnapshotReader(rows, snapshot.worker, settings, block_rows=2) if columnar else rows
    records, _, _ = flatten(list(reader.read(snapshot.tables(order, settings))))
    assert [re.search(r'"snapshot":"(\w+)"', r[2])[1] for r in records] == expected  # type: ignore[index]


def test_markers_follow_the_row_readers_precedence(snapshot: Snapshot) -> None:
    settings = MySqlConverterSettings()
    records, _, progress = flatten(list(MySqlColumnarSnapshotReader(
        snapshot.rows_reader(), snapshot.worker, settings, block_rows=2).read(snapshot.tables(["one", "nokey"],
                                                                                              settings))))
    markers = [re.search(r'"snapshot":"(\w+)"', r[2])[1] for r in records]  # type: ignore[index]
    assert markers == ["first", "first_in_data_collection", "true", "last"]
    assert [r[5][-1] for r in records] == [0, 1, 2, 3]
    assert [(p.table, p.rows, p.table_done) for p in progress] == [
        (f"{snapshot.db['database']}.one", 1, True), (f"{snapshot.db['database']}.nokey", 3, True)]
    assert [r[1] for r in records] == ['{"id":1}', None, None, None]


def test_the_worker_reads_the_snapshots_read_view(snapshot: Snapshot) -> None:
    """Writes committed after the snapshot opened (the lock is released by now) are not seen."""
    execute(snapshot.db, "INSERT INTO one VALUES (2, 'new')", "UPDATE one SET v = 'upd' WHERE id = 1",
            "DELETE FROM many WHERE id <= 100", "INSERT INTO empty VALUES (1)")
    settings = MySqlConverterSettings()
    expected, got = both(snapshot, snapshot.tables(["one", "many", "empty"], settings), settings)
    records = flatten(got)[0]
    assert flatten(got) == flatten(expected)
    assert len(records) == 1 + 5000 and '"v":"x"' in records[0][2]


def test_a_read_view_opened_after_a_commit_is_refused(snapshot: Snapshot) -> None:
    """Step 3b's check, with a second worker whose transaction starts after a write."""
    execute(snapshot.db, "INSERT INTO one VALUES (3, 'late')")
    late = SnapshotWorker.start(settings_of(snapshot.db))
    assert late is not None
    try:
        with pytest.raises(SnapshotReadViewError, match="read view"):
            snapshot_prepare._join(late, "mariadb", "SHOW MASTER STATUS", snapshot.prepared.point)
    finally:
        late.close()


def test_without_a_global_read_lock_the_worker_does_not_join(mariadb_db: dict[str, Any]) -> None:
    execute(mariadb_db, "CREATE TABLE t (id INT PRIMARY KEY)")
    snap = open_snapshot(mariadb_db, locking_mode="none")
    try:
        assert not snap.prepared.joined
    finally:
        snap.worker.close()
        snap.conn.close()


def test_an_unknown_table_fails_naming_it(snapshot: Snapshot) -> None:
    settings = MySqlConverterSettings()
    [table] = snapshot.tables(["one"], settings)
    missing = dataclasses.replace(table, select=f"SELECT id, v FROM `{snapshot.db['database']}`.nothere")
    with pytest.raises(MySqlError, match=r"snapshotting table .*one: error 1146") as info:
        list(MySqlColumnarSnapshotReader(snapshot.rows_reader(), snapshot.worker, settings).read([missing]))
    assert not isinstance(info.value, MySqlAuthError)


def test_permission_denied_is_an_auth_error(mariadb_server: Any, mariadb_db: dict[str, Any]) -> None:
    execute(mariadb_db, "CREATE TABLE secret (id INT PRIMARY KEY)", "DROP USER IF EXISTS 'cdc_nosel'@'%'",
            "CREATE USER 'cdc_nosel'@'%' IDENTIFIED BY 'pw-nosel'",
            "GRANT SHOW DATABASES ON *.* TO 'cdc_nosel'@'%'")
    limited = {**mariadb_db, "user": "cdc_nosel", "password": "pw-nosel"}
    limited.pop("database")
    worker = SnapshotWorker.start(settings_of({**limited, "database": ""}))
    assert worker is not None
    try:
        with pytest.raises(MySqlAuthError, match="secret"):
            list(worker.read(f"{mariadb_db['database']}.secret", f"SELECT id FROM `{mariadb_db['database']}`.secret"))
    finally:
        worker.close()


def test_leaving_a_table_midway_ends_the_worker(snapshot: Snapshot) -> None:
    settings = MySqlConverterSettings()
    [table] = snapshot.tables(["many"], settings)
    batches = snapshot.worker.read(str(table.id), table.select, block_rows=100)
    next(batches)
    pid = snapshot.worker._proc.pid
    batches.close()
    assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE


def test_a_worker_exits_when_its_parent_closes_stdin(mariadb_db: dict[str, Any]) -> None:
    worker = SnapshotWorker.start(settings_of(mariadb_db))
    assert worker is not None
    proc = worker._proc
    assert proc.stdin is not None
    proc.stdin.close()
    assert proc.wait(10) == 0
    worker.close()


def test_tls_modes_the_worker_cannot_reproduce_read_row_by_row(mariadb_db: dict[str, Any]) -> None:
    assert worker_settings(settings_of(mariadb_db, ssl_mode="required")) is None
    assert SnapshotWorker.start(settings_of(mariadb_db, ssl_mode="verify_ca")) is None
    kwargs, statements = worker_settings(settings_of(mariadb_db, initial_statements=("SET @a = 1",))) or ({}, [])
    assert kwargs["ssl_disabled"] is True and statements == ["SET SESSION time_zone = '+00:00'", "SET @a = 1"]


def test_the_worker_session_is_utc(mariadb_db: dict[str, Any]) -> None:
    """TIMESTAMP text depends on the session time zone (the server runs at +02:00)."""
    execute(mariadb_db, "SET SESSION time_zone = '+00:00'", "CREATE TABLE z (id INT PRIMARY KEY, ts TIMESTAMP NULL)",
            "INSERT INTO z VALUES (1, '2024-01-02 03:04:05')")
    worker = SnapshotWorker.start(settings_of(mariadb_db))
    assert worker is not None
    try:
        [batch] = list(worker.read("z", "SELECT id, ts FROM z"))
        assert batch.arrays[1].to_pylist() == [b"2024-01-02 03:04:05"]
    finally:
        worker.close()


_VOLATILE = re.compile(r'"(ts_ms|ts_us|ts_ns|ts_sec)":\d+')


def _bronze(root: str, topic: str) -> list[dict[str, Any]]:
    rows = DeltaTable(topic_path(root, topic)).to_pyarrow_table().to_pylist()
    keep = ("key", "value", "op", "seq", "position", "schema_id", "headers")
    return [{k: _VOLATILE.sub(r'"\1":0', r[k]) if isinstance(r[k], str) else r[k] for k in keep}
            for r in sorted(rows, key=lambda r: r["seq"])]


@pytest.mark.parametrize("locking", ["minimal", "none"])
def test_bronze_holds_the_same_records_either_way(mariadb_db: dict[str, Any], tmp_path: Any, monkeypatch: Any,
                                                  caplog: Any, locking: str) -> None:
    """End to end: ``run_capture`` with the columnar snapshot and with the row reader (the session's
    ``columnar_snapshot`` off) write the same bronze rows (snapshot times aside)."""
    columns = ", ".join(f"{n} {d}" for n, d in COLUMNS)
    execute(mariadb_db, "SET SESSION time_zone = '+00:00'", f"CREATE TABLE t ({columns}) DEFAULT CHARSET=utf8mb4",
            *(f"INSERT INTO t VALUES {row}" for row in ROWS), EXTRA_DDL,
            "INSERT INTO extra VALUES " + ", ".join(_extra_rows(2500)), "CREATE TABLE empty (id INT PRIMARY KEY)")
    roots = {}
    for columnar in (True, False):
        monkeypatch.setattr(MySqlCaptureSession, "columnar_snapshot", columnar)
        root = str(tmp_path / f"lake-{columnar}")
        text = (f'pipeline: t\nlakehouse: {{root: "{root}"}}\nsources:\n  - name: my\n    connector: mariadb\n'
                f"    connection: {{host: 127.0.0.1, port: {mariadb_db['port']}, user: root}}\n"
                f'    options:\n      database.include.list: "{mariadb_db["database"]}"\n'
                f'      database.server.id: "5461"\n      snapshot.locking.mode: "{locking}"\n'
                f'      extended.headers.enabled: "false"\n')
        with caplog.at_level("INFO", logger="cdc_sources.mysql.session"):
            caplog.clear()
            result = run_capture(parse_pipeline(text, env={}), until_idle=True)["my"]
        db = mariadb_db["database"]
        assert (result.per_topic[f"my.{db}.t"], result.per_topic[f"my.{db}.extra"]) == (len(ROWS), 2500)
        by_columns = "column by column" in caplog.text
        assert by_columns == (columnar and locking == "minimal"), caplog.text
        roots[columnar] = root
    for name in ("t", "extra"):
        topic = f"my.{mariadb_db['database']}.{name}"
        assert _bronze(roots[True], topic) == _bronze(roots[False], topic)


def test_without_the_c_extension_there_is_no_worker(mariadb_db: dict[str, Any], monkeypatch: Any,
                                                    caplog: Any) -> None:
    """The worker run by an interpreter without mysql-connector-python reports it; the snapshot
    then reads row by row (`SnapshotWorker.start` gives None, with a warning)."""
    system_python = "/usr/bin/python3"
    if not Path(system_python).exists():
        pytest.fail(f"needs {system_python}, a Python without mysql-connector-python", pytrace=False)
    monkeypatch.setattr(snapshot_process.sys, "executable", system_python)
    with caplog.at_level("WARNING", logger="cdc_sources.mysql.snapshot_process"):
        assert SnapshotWorker.start(settings_of(mariadb_db)) is None
    assert "C extension cannot be loaded" in caplog.text and "mysql-connector-python" in caplog.text
