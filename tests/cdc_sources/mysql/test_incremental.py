"""Incremental snapshots of MariaDB tables started by signals, into bronze (real server)."""

from __future__ import annotations

import hashlib
import threading
import time
from collections.abc import Callable
from itertools import groupby
from typing import Any

import orjson
import pymysql
import pytest

from cdc_sources.common.envelope import VERSION
from cdc_sources.common.incremental_snapshot import Chunk, keyless_id
from cdc_sources.common.incremental_state import SnapshotCollection
from cdc_sources.mysql.codec import build_codec
from cdc_sources.mysql.converters import MySqlConverterSettings
from cdc_sources.mysql.ddl import SchemaModel
from cdc_sources.mysql.envelope import SourceInfo
from cdc_sources.mysql.incremental import MySqlChunkSource
from cdc_sources.mysql.policy import MySqlFilterPolicy
from cdc_sources.spi import ChangeBlock, SchemaVersion
from pipelines.capture import run_capture
from pipelines.config import PipelineConfig
from tests.support.incremental_mysql import (
    bronze,
    execute,
    incremental_rows,
    last_offset,
    pipeline,
    setup_items,
    signal,
    source_rows,
    topic,
)

pytestmark = [pytest.mark.integration, pytest.mark.mariadb]


def _started(db: dict[str, Any], root: str, rows: int, **options: str) -> PipelineConfig:
    setup_items(db, rows)
    cfg = pipeline(root, db, **options)
    run_capture(cfg, until_idle=True)
    return cfg


def _ids(root: str, db: dict[str, Any], by: Callable[[int], int] = lambda i: i) -> list[int]:
    """The ids of the incremental snapshot's rows, chunk by chunk (the rows of a chunk share their
    position) and within a chunk sorted by ``by`` (rows of a chunk are emitted in an order of their own)."""
    groups = groupby(incremental_rows(root, topic(db)), key=lambda r: r["position"])
    return [i for _, rows in groups for i in sorted((r["v"]["after"]["id"] for r in rows), key=by)]


def test_execute_snapshot_emits_every_row_once_as_the_initial_snapshot_renders_it(mariadb_db, tmp_path):
    root = str(tmp_path / "lake")
    execute(mariadb_db, "CREATE TABLE typed (id INT PRIMARY KEY, price DECIMAL(8,2), at DATETIME(3), d DATE, "
                        "t TIME, b VARBINARY(4), e ENUM('x','y'), j JSON, f DOUBLE)",
            "INSERT INTO typed VALUES (1, 12.5, '2024-01-02 03:04:05.678', '2024-02-29', '12:34:56', 0x00ff, 'y', "
            "'{\"a\": 1}', 1.5), (2, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL)")
    cfg = _started(mariadb_db, root, 230)  # initial snapshot: the reference rendering
    initial = {orjson.loads(r["key"])["id"]: orjson.loads(r["value"])["after"]
               for r in bronze(root, topic(mariadb_db, "typed"))}
    signal(mariadb_db, "ad-hoc-1", "execute-snapshot",
           {"data-collections": [f"{mariadb_db['database']}.items", f"{mariadb_db['database']}.typed"]})
    run_capture(cfg, until_idle=True)
    rows = incremental_rows(root, topic(mariadb_db))
    got = {r["v"]["after"]["id"]: (r["v"]["after"]["name"], r["v"]["after"]["qty"]) for r in rows}
    assert len(rows) == 230 and got == source_rows(mariadb_db)
    assert all(r["op"] == "r" and r["v"]["before"] is None for r in rows)
    assert all(r["v"]["source"]["connector"] == "mariadb" and r["v"]["source"]["file"] for r in rows)
    positions = [orjson.loads(r["position"]) for r in rows]
    ids = {p["incremental_snapshot_correlation_id"] for p in positions}
    assert len(ids) == 1 and ids.pop().startswith("ad-hoc-1@")
    assert [p["incremental_snapshot_last_chunk"] for p in positions] == [False] * 200 + [True] * 30
    starts = {p["incremental_snapshot_table_start_commit"] for p in positions}
    assert len(starts) == 1 and isinstance(starts.pop(), int)
    again = {r["v"]["after"]["id"]: r["v"]["after"] for r in incremental_rows(root, topic(mariadb_db, "typed"))}
    assert again == initial  # every type rendered exactly as the snapshot renders it
    signals = bronze(root, topic(mariadb_db, "dbz_signal"))  # the signal table goes to bronze like any table
    kinds = [orjson.loads(r["value"])["after"]["type"] for r in signals]
    assert kinds[0] == "execute-snapshot" and kinds.count("snapshot-window-open") == 6  # 5 chunks + 1
    assert "incremental_snapshot_collections" not in last_offset(root)  # finished: no state left


def test_compound_key_filter_and_surrogate_key(mariadb_db, tmp_path):
    root = str(tmp_path / "lake")
    execute(mariadb_db, "CREATE TABLE pairs (a INT, b VARCHAR(10), v INT, PRIMARY KEY (a, b))",
            "INSERT INTO pairs SELECT seq DIV 10, CONCAT('k', LPAD(seq MOD 10, 2, '0')), seq FROM seq_1_to_95")
    cfg = _started(mariadb_db, root, 230, **{"incremental.snapshot.chunk.size": "7"})
    execute(mariadb_db, "ALTER TABLE items ADD COLUMN ord INT", "UPDATE items SET ord = 1000 - id")
    name = mariadb_db["database"]
    signal(mariadb_db, "c-1", "execute-snapshot", {"data-collections": [f"{name}.pairs"]})
    signal(mariadb_db, "f-1", "execute-snapshot", {
        "data-collections": [f"{name}.items"], "surrogate-key": "ord",
        # a % in the filter, as operator and in a LIKE pattern: not a placeholder of the driver
        "additional-conditions": [{"data-collection": f"{name}.items",
                                   "filter": "qty = 3 OR id % 1000 > 200 OR 'x' LIKE '%never%'"}]})
    run_capture(cfg, until_idle=True)
    groups = groupby(incremental_rows(root, topic(mariadb_db, "pairs")), key=lambda r: r["position"])
    pairs = [p for _, rows in groups for p in sorted((r["v"]["after"]["a"], r["v"]["after"]["b"]) for r in rows)]
    assert pairs == sorted((i // 10, f"k{i % 10:02d}") for i in range(1, 96))  # row-value order across chunks
    want = sorted((i for i in range(1, 231) if i % 17 == 3 or i > 200), reverse=True)
    assert _ids(root, mariadb_db, lambda i: -i) == want  # filtered, and in surrogate-key order across chunks


def test_restart_mid_snapshot_resumes_at_the_last_completed_chunk(mariadb_db, tmp_path):
    root = str(tmp_path / "lake")
    cfg = _started(mariadb_db, root, 400, **{"incremental.snapshot.chunk.size": "20"})
    # each chunk takes 50 ms at least, so the stop below lands mid-snapshot
    execute(mariadb_db, "CREATE TRIGGER slow BEFORE INSERT ON dbz_signal FOR EACH ROW "
                        "IF NEW.type = 'snapshot-window-open' THEN DO SLEEP(0.05); END IF")
    signal(mariadb_db, "r-1", "execute-snapshot", {"data-collections": [f"{mariadb_db['database']}.items"]})
    stop = threading.Event()

    def stopper() -> None:
        while not stop.is_set():
            try:
                if len(incremental_rows(root, topic(mariadb_db))) >= 60:
                    stop.set()
            except Exception:  # the table may not exist yet
                pass
            time.sleep(0.02)

    t = threading.Thread(target=stopper, daemon=True)
    t.start()
    result = run_capture(cfg, until_idle=True, stop=stop)["my"]
    stop.set()
    t.join()
    assert result.stopped
    before = _ids(root, mariadb_db)
    state = last_offset(root)
    assert 60 <= len(before) < 400 and state["incremental_snapshot_primary_key"] is not None
    assert orjson.loads(state["incremental_snapshot_primary_key"]) == [str(max(before))]
    run_capture(cfg, until_idle=True)
    ids = _ids(root, mariadb_db)
    assert set(before) <= set(ids) and sorted(ids) == list(range(1, 401))  # nothing read twice


def test_pause_resume_stop_and_the_file_channel(mariadb_db, tmp_path):
    root = str(tmp_path / "lake")
    path = tmp_path / "signals.jsonl"
    cfg = _started(mariadb_db, root, 230, **{"signal.enabled.channels": "source,file", "signal.file": str(path)})
    name = mariadb_db["database"]
    signal(mariadb_db, "p-1", "execute-snapshot", {"data-collections": [f"{name}.items"]})
    signal(mariadb_db, "p-2", "pause-snapshot", None)
    run_capture(cfg, until_idle=True)
    assert _ids(root, mariadb_db) == list(range(1, 51))  # the chunk read before the pause is emitted, no other
    assert last_offset(root)["incremental_snapshot_paused"] is True
    signal(mariadb_db, "p-3", "stop-snapshot", {})  # without its type Debezium ignores it, and so do we
    path.write_text('not json\n{"id": "p-4", "type": "resume-snapshot"}\n')
    run_capture(cfg, until_idle=True)
    assert _ids(root, mariadb_db) == list(range(1, 231)) and not path.exists()  # the file was consumed
    signal(mariadb_db, "s-1", "execute-snapshot", {"data-collections": [f"{name}.items"]})
    signal(mariadb_db, "s-2", "stop-snapshot", {"type": "incremental", "data-collections": [f"{name}.items"]})
    run_capture(cfg, until_idle=True)
    assert len(_ids(root, mariadb_db)) == 230  # stopped before its first chunk closed: nothing more
    assert "incremental_snapshot_collections" not in last_offset(root)


def _logged_statements(db: dict[str, Any], run: Callable[[], object]) -> list[str]:
    """The statements the server ran while ``run`` ran (its general log, kept in a table)."""
    execute(db, "SET GLOBAL log_output = 'TABLE'", "TRUNCATE TABLE mysql.general_log", "SET GLOBAL general_log = 1")
    try:
        run()
    finally:
        execute(db, "SET GLOBAL general_log = 0")
    conn = pymysql.connect(**db)
    try:
        with conn.cursor() as cur:
            cur.execute("SELECT CONVERT(argument USING utf8mb4) FROM mysql.general_log WHERE command_type = 'Query'")
            return [str(r[0]) for r in cur.fetchall()]
    finally:
        conn.close()
        execute(db, "TRUNCATE TABLE mysql.general_log")


def test_a_chunk_costs_its_two_watermark_inserts_and_its_query_and_the_binlog_end_is_read_once(mariadb_db, tmp_path):
    root, name = str(tmp_path / "lake"), mariadb_db["database"]
    cfg = _started(mariadb_db, root, 500)  # 10 chunks of 50
    signal(mariadb_db, "n-1", "execute-snapshot", {"data-collections": [f"{name}.items"]})
    statements = _logged_statements(mariadb_db, lambda: run_capture(cfg, until_idle=True))
    assert _ids(root, mariadb_db, lambda i: i) == list(range(1, 501))
    on_signals = [s for s in statements if f"`{name}`.`dbz_signal`" in s]
    assert sum(s.startswith("INSERT") and "snapshot-window-open" in s for s in on_signals) == 10
    assert sum(s.startswith("INSERT") and "snapshot-window-close" in s for s in on_signals) == 10
    assert not [s for s in on_signals if s.startswith("SELECT") and "WHERE" in s]  # no look-up per chunk
    chunk_queries = [s for s in statements if s.startswith("SELECT") and f"`{name}`.`items`" in s and "LIMIT 51" in s]
    assert len(chunk_queries) == 10
    # the binlog end: when streaming starts and when the snapshot is done, not after each chunk
    assert sum(s.strip().upper() == "SHOW MASTER STATUS" for s in statements) <= 3


def test_the_open_watermark_is_inserted_once_and_a_window_written_before_is_returned(mariadb_db):
    setup_items(mariadb_db, 0)
    name = mariadb_db["database"]
    src = MySqlChunkSource(connect=lambda: pymysql.connect(**mariadb_db, autocommit=True), table_def=lambda t: None,
                           codec_for=lambda d: None, source=SourceInfo("mariadb", "my", VERSION),  # type: ignore[arg-type,return-value]
                           signal_table=(name, "dbz_signal"))
    try:
        assert src.open_watermark("w1") == {}  # a new window
        assert src.open_watermark("w1") == {"w1-open": None}  # read again: there already, not inserted twice
        src.insert_watermark("w1", opens=False, data='{"upto": ["7"]}')
        execute(mariadb_db, "DELETE FROM dbz_signal WHERE id = 'w1-open'")
        assert src.open_watermark("w1") == {"w1-close": '{"upto": ["7"]}'}  # the close's range, the open added
    finally:
        src.close()
    conn = pymysql.connect(**mariadb_db)
    try:
        with conn.cursor() as cur:
            cur.execute("SELECT id, type, data FROM dbz_signal ORDER BY id")
            assert cur.fetchall() == (("w1-close", "snapshot-window-close", '{"upto": ["7"]}'),
                                      ("w1-open", "snapshot-window-open", None))
    finally:
        conn.close()


def test_signals_are_found_under_another_topic_delimiter(mariadb_db, tmp_path):
    root, name = str(tmp_path / "lake"), mariadb_db["database"]
    cfg = _started(mariadb_db, root, 30, **{"topic.delimiter": "_"})
    signal(mariadb_db, "d-1", "execute-snapshot", {"data-collections": [f"{name}.items"]})
    run_capture(cfg, until_idle=True)
    assert sorted(r["v"]["after"]["id"] for r in incremental_rows(root, f"my_{name}_items")) == list(range(1, 31))


def test_a_table_created_while_capture_streams_can_be_snapshotted_in_the_same_run(mariadb_db, tmp_path):
    root, name = str(tmp_path / "lake"), mariadb_db["database"]
    cfg = _started(mariadb_db, root, 10)
    execute(mariadb_db, "CREATE TABLE fresh (id INT PRIMARY KEY, v INT)",
            "INSERT INTO fresh SELECT seq, seq FROM seq_1_to_25")
    signal(mariadb_db, "n-1", "execute-snapshot", {"data-collections": [f"{name}.fresh"]})
    run_capture(cfg, until_idle=True)  # one run: streams the CREATE TABLE, then the signal naming it
    assert sorted(r["v"]["after"]["id"] for r in incremental_rows(root, topic(mariadb_db, "fresh"))) == \
        list(range(1, 26))


def test_a_keyless_table_chunked_by_its_surrogate_key_emits_every_row(mariadb_db, tmp_path):
    root, name = str(tmp_path / "lake"), mariadb_db["database"]
    cfg = _started(mariadb_db, root, 10, **{"incremental.snapshot.chunk.size": "8"})
    execute(mariadb_db, "CREATE TABLE nokey (n INT NOT NULL, v VARCHAR(10))",
            "INSERT INTO nokey SELECT seq, CONCAT('v', seq) FROM seq_1_to_30")
    signal(mariadb_db, "s-1", "execute-snapshot", {"data-collections": [f"{name}.nokey"], "surrogate-key": "n"})
    run_capture(cfg, until_idle=True)
    rows = incremental_rows(root, topic(mariadb_db, "nokey"))
    assert sorted(r["v"]["after"]["n"] for r in rows) == list(range(1, 31)) and all(r["key"] is None for r in rows)


def _chunk_events(table_sql: str, rows: dict[str | None, str]) -> tuple[list[Any], str]:
    """What `MySqlChunkSource.read_events` gives for a chunk of ``rows`` of the table ``table_sql``
    creates in database ``db`` (no server: the structure comes from the DDL), and the position."""
    model = SchemaModel()
    model.apply(table_sql, database="db")
    policy, _ = MySqlFilterPolicy.from_options({})
    src = MySqlChunkSource(
        connect=lambda: None, table_def=model.table,
        codec_for=lambda d: build_codec(prefix="my", connector="mariadb", table=d, settings=MySqlConverterSettings(),
                                        policy=policy, origin="snapshot"),
        source=SourceInfo("mariadb", "my", VERSION), signal_table=("db", "sig"), headers={"h": '"1"'})
    c = SnapshotCollection("db", "t")
    position = '{"file":"bin.000007","pos":4242,"server_id":9}'
    first = src.read_events(c, Chunk("my.db.t", rows, None, False), (7, 4242, 0), position)
    assert isinstance(first[0], SchemaVersion)
    again = src.read_events(c, Chunk("my.db.t", rows, None, False), (7, 4242, 0), position)
    assert not any(isinstance(i, SchemaVersion) for i in again)  # announced once
    return first[1:], position


def _flat(items: list[Any]) -> list[tuple[Any, ...]]:
    """(key, value, op, position, order key, schema id, headers) of every record, blocks unfolded."""
    out: list[tuple[Any, ...]] = []
    for item in items:
        if isinstance(item, ChangeBlock):
            keys = item.keys.to_pylist() if item.keys is not None else [None] * len(item)
            out.extend((k, v, item.op, p, item.order_key(i), item.schema_id, item.headers)
                       for i, (k, v, p) in enumerate(zip(keys, item.values.to_pylist(), item.positions.to_pylist(),
                                                         strict=True)))
        else:
            out.extend((r.key, r.value, r.op, r.position, r.order_key, r.schema_id, r.headers)
                       for r in (item if isinstance(item, list) else [item]))
    return out


def _hash(text: str) -> int:
    return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest()) >> 1


def test_a_chunks_events_leave_as_one_block_in_hash_order_after_the_close_watermark():
    rows = {f'{{"id":{i}}}': f'{{"id":{i},"v":"x{i}"}}' for i in range(1, 40)}
    items, position = _chunk_events("CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(5))", rows)
    assert len(items) == 1 and isinstance(items[0], ChangeBlock)  # one block, not a record per row
    records = _flat(items)
    assert sorted(r[0] for r in records) == sorted(rows)
    assert [r[4] for r in records] == sorted((7, 4242, 0, _hash(k)) for k in rows)  # stable per key, ascending
    for key, value, op, pos, _, schema_id, headers in records:
        v = orjson.loads(value)
        assert v["before"] is None and v["after"] == orjson.loads(rows[key]) and v["op"] == op == "r"
        assert v["transaction"] is None and isinstance(v["ts_ms"], int)
        assert (v["source"]["snapshot"], v["source"]["file"], v["source"]["pos"], v["source"]["server_id"],
                v["source"]["db"], v["source"]["table"]) == ("incremental", "bin.000007", 4242, 9, "db", "t")
        assert pos == position and schema_id is not None and headers == {"h": '"1"'}


def test_a_keyless_chunks_events_have_null_keys():
    rows = {keyless_id([str(i)]): f'{{"n":{i}}}' for i in range(1, 6)}
    items, _ = _chunk_events("CREATE TABLE t (n INT NOT NULL, v INT)", rows)
    records = _flat(items)
    assert [r[0] for r in records] == [None] * 5
    assert sorted(orjson.loads(r[1])["after"]["n"] for r in records) == [1, 2, 3, 4, 5]
