"""The rows of binlog rows events rendered as blocks (writes, updates) or from the event's templates
(deletes) equal the row-by-row rendering.

Two pipelines stream the same binlog from the same point (each snapshots the empty tables
first): one as the connector runs (every write event becomes one `ChangeBlock`), one with the
block path switched off (`stream.INSERT_BLOCKS`: one record per row, the path the conformance
suite compares with Debezium). Blocks of consecutive events are joined up to a small limit here,
so that joins are cut, and runs of any length become blocks (`stream.BLOCK_MIN_ROWS`). Their
bronze tables must hold the same records, byte for byte (processing-time ``ts_*`` aside), and
end at the same order key. A third pipeline streams the same binlog as the connector runs by
default: runs shorter than the minimum (one-row transactions) go as records, and its bronze
tables must hold the same records too.
"""

from __future__ import annotations

import re
from typing import Any

import pymysql
import pytest

from bronze.writer import BronzeWriter
from cdc_sources.mysql import stream, stream_blocks
from pipelines.capture import run_capture
from pipelines.config import parse_pipeline
from tests.support.bronze_rows import read_topic

pytestmark = [pytest.mark.integration, pytest.mark.mariadb]

_TS = re.compile(r',"ts_ms":\d+,"ts_us":\d+,"ts_ns":\d+}$')
TABLES = ("kinds", "nokey", "masked")

DDL = [
    """CREATE TABLE kinds (
        id INT PRIMARY KEY, ti TINYINT, bu BIGINT UNSIGNED, de DECIMAL(12,2), vc VARCHAR(60), ch CHAR(3),
        txt TEXT, bl BLOB, en ENUM('a','b,c','ü'), st SET('x','y','z'), bt BIT(10), yr YEAR, dt DATE,
        tm TIME(3), dtm DATETIME(6), ts TIMESTAMP(3) NULL, js JSON, f FLOAT, d DOUBLE,
        nn INT NOT NULL DEFAULT 7)""",
    "CREATE TABLE nokey (a INT, b VARCHAR(20))",
    "CREATE TABLE masked (id INT PRIMARY KEY, secret VARCHAR(20), code VARCHAR(10) NOT NULL, plain TEXT)",
]

SPECIAL = ("INSERT INTO kinds VALUES "
           "(1, -128, 18446744073709551615, -9999999999.99, 'quote \" back \\\\ tab \\t nl \\n ü ☃ 😀', 'abc',"
           " REPEAT('long ', 200), x'00ff10', 'b,c', '', b'1010101010', 1901, '1000-01-01', '-838:59:59.000',"
           " '9999-12-31 23:59:59.999999', '2000-01-01 00:00:01.001', '{\"k\": [1, \"v\"]}', -3.5, 1e300, 0),"
           "(2, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,"
           " NULL, NULL, DEFAULT),"
           "(3, 0, 0, 0.00, '', '', '', '', 'a', 'x,y,z', b'0', 2155, '2024-02-29', '00:00:00.001',"
           " '2024-02-29 12:34:56.000001', '2038-01-01 03:14:07.999', '[]', 0, -0.0, 3)")


def generated(first: int, last: int) -> str:
    return (f"INSERT INTO kinds (id, ti, de, vc, st, dtm, js) SELECT seq, seq % 100, seq * 1.25, "
            f"CONCAT('row ', seq, REPEAT(' x', seq % 9)), IF(seq % 3 = 0, '', 'y'), "
            f"TIMESTAMP('2026-01-01') + INTERVAL seq SECOND, IF(seq % 5 = 0, NULL, JSON_ARRAY(seq)) "
            f"FROM seq_{first}_to_{last}")


WORKLOAD = [
    # one transaction: a multi-event insert, inserts interleaved with other tables, updates,
    # deletes, a primary key change
    ["BEGIN", SPECIAL, generated(10, 700), "INSERT INTO nokey VALUES (1, 'one'), (NULL, NULL)", generated(701, 720),
     "UPDATE kinds SET vc = 'changed' WHERE id = 10", "DELETE FROM kinds WHERE id = 11", generated(721, 730),
     "UPDATE kinds SET id = 5000 WHERE id = 12", "COMMIT"],
    # a schema change between inserts
    [generated(731, 740), "ALTER TABLE kinds ADD COLUMN extra VARCHAR(5) DEFAULT 'x'", generated(741, 760)],
    ["INSERT INTO masked SELECT seq, CONCAT('secret ', seq), CONCAT('c', seq), REPEAT('p', seq) FROM seq_1_to_40",
     "INSERT INTO nokey SELECT seq, CONCAT('b', seq) FROM seq_1_to_30"],
    *[[f"INSERT INTO masked VALUES ({i}, NULL, 'single', NULL)"] for i in range(100, 104)],
    ["DELETE FROM nokey WHERE a < 5", "UPDATE masked SET plain = 'u' WHERE id < 5", generated(761, 770)],
    # updates: of many rows (several events), of a keyless table, of a column some runs exclude
    # (unchanged rows then), of keys (row by row), between inserts
    ["UPDATE kinds SET vc = CONCAT(vc, '+'), st = '' WHERE id BETWEEN 20 AND 600",
     "UPDATE nokey SET b = CONCAT(b, '!') WHERE a > 20", "UPDATE kinds SET ti = ti + 1 WHERE id BETWEEN 100 AND 150",
     "UPDATE kinds SET id = id + 10000 WHERE id BETWEEN 13 AND 15", generated(771, 780),
     "UPDATE kinds SET de = de + 1 WHERE id BETWEEN 771 AND 780"],
]


def pipeline(root: str, db: dict[str, Any], server_id: int, options: dict[str, str]) -> Any:
    opts = {"database.include.list": db["database"], "database.server.id": str(server_id), **options}
    lines = "".join(f'      {k}: "{v}"\n' for k, v in opts.items())
    return parse_pipeline(f'pipeline: t\nlakehouse: {{root: "{root}"}}\nsources:\n  - name: my\n'
                          f"    connector: mariadb\n"
                          f"    connection: {{host: 127.0.0.1, port: {db['port']}, user: root}}\n"
                          f"    options:\n{lines}", env={})


def execute(db: dict[str, Any], statements: list[str]) -> None:
    conn = pymysql.connect(**db, autocommit=True)
    try:
        with conn.cursor() as cur:
            for sql in statements:
                cur.execute(sql)
    finally:
        conn.close()


def bronze(root: str, topics: list[str]) -> dict[str, list[tuple[Any, ...]]]:
    out = {}
    for topic in topics:
        rows = read_topic(root, topic, ("key", "value", "op", "seq", "position", "headers", "schema_id"))
        out[topic] = [(r["key"], None if r["value"] is None else _TS.sub("}", r["value"]), r["op"], r["seq"],
                       r["position"], _headers(r["headers"]), r["schema_id"]) for r in rows]
    return out


def _headers(headers: Any) -> Any:
    """Headers without the run id (each capture run has its own)."""
    return None if headers is None else [h for h in headers if h[0] != "__debezium.context.runId"]


def last_order_keys(root: str, topics: list[str]) -> dict[str, tuple[int, ...]]:
    writer = BronzeWriter(root, "my")
    try:
        return {t: writer.table_state(t).order_key for t in topics}
    finally:
        writer.close()


@pytest.mark.parametrize("options", [
    {},
    {"decimal.handling.mode": "string", "time.precision.mode": "connect", "binary.handling.mode": "hex",
     "tombstones.on.delete": "false", "bigint.unsigned.handling.mode": "precise",
     "column.mask.with.5.chars": "{db}.masked.secret", "column.truncate.to.3.chars": "{db}.masked.plain",
     "message.key.columns": "{db}.masked:code", "column.propagate.source.type": "{db}.kinds.de",
     "include.query": "true", "column.exclude.list": "{db}.kinds.ti", "skip.messages.without.change": "true"},
], ids=["defaults", "modes_transforms_query"])
def test_rows_events_as_blocks_equal_the_row_by_row_rendering(mariadb_db, tmp_path, monkeypatch, options):
    name = mariadb_db["database"]
    options = {k: v.replace("{db}", name) for k, v in options.items()}
    execute(mariadb_db, DDL)
    blocks, per_row, default = str(tmp_path / "blocks"), str(tmp_path / "per_row"), str(tmp_path / "default")
    run_capture(pipeline(blocks, mariadb_db, 5501, options), until_idle=True)  # offsets before any change
    run_capture(pipeline(per_row, mariadb_db, 5502, options), until_idle=True)
    run_capture(pipeline(default, mariadb_db, 5503, options), until_idle=True)
    for transaction in WORKLOAD:
        execute(mariadb_db, transaction)

    rendered: list[int] = []
    updated: list[int] = []
    real, real_update = stream_blocks.insert_block, stream_blocks.update_block

    def counting(*args: Any) -> Any:
        block = real(*args)
        rendered.append(0 if block is None else len(block))
        return block

    deleted: list[str | None] = []
    real_delete = stream_blocks.delete_records

    def counting_deletes(*args: Any, **kwargs: Any) -> Any:
        records = real_delete(*args, **kwargs)
        deleted.extend(r.op for r in records)
        return records

    def counting_updates(*args: Any, **kwargs: Any) -> Any:
        block = real_update(*args, **kwargs)
        updated.append(0 if block is None else len(block))
        return block

    handed: list[int] = []
    real_joined = stream_blocks.joined

    def joining(blocks: Any) -> Any:
        block = real_joined(blocks)
        handed.append(len(block))
        return block

    with monkeypatch.context() as m:
        m.setattr(stream_blocks, "insert_block", counting)
        m.setattr(stream_blocks, "update_block", counting_updates)
        m.setattr(stream_blocks, "delete_records", counting_deletes)
        m.setattr(stream_blocks, "joined", joining)
        m.setattr(stream, "BLOCK_ROWS", 300)
        m.setattr(stream, "BLOCK_MIN_ROWS", 1)  # runs of any length as blocks, the strictest comparison
        run_capture(pipeline(blocks, mariadb_db, 5501, options), until_idle=True)
    # write events of every table went through blocks, a large insert as several of them, and
    # consecutive ones were joined up to the limit
    assert sum(rendered) == 764 + 10 + 2 + 40 + 30 + 4 and len(rendered) > 15 and max(rendered) > 50
    # updates (the key changes aside) too; unchanged rows left out where asked
    skipped = 51 if "skip.messages.without.change" in options else 0
    assert sum(updated) == 1 + 4 + 581 + 10 + 10 + 51 - skipped and len(updated) > 5
    assert sum(handed) == sum(rendered) + sum(updated)
    # deletes (the key changes aside) as records made from the event's templates, with tombstones
    assert deleted == (["d"] if "tombstones.on.delete" in options else ["d", None]) * (1 + 5)
    assert len(handed) < len(rendered) + len(updated) and 300 <= max(handed) < 300 + max(rendered + updated)

    with monkeypatch.context() as m:
        m.setattr(stream, "INSERT_BLOCKS", False)
        m.setattr(stream_blocks, "insert_block", None)  # would fail if called
        m.setattr(stream_blocks, "update_block", None)
        m.setattr(stream_blocks, "delete_records", None)
        run_capture(pipeline(per_row, mariadb_db, 5502, options), until_idle=True)

    # as the connector runs: runs shorter than the minimum (the one-row transactions among them) as records
    handed.clear()
    with monkeypatch.context() as m:
        m.setattr(stream_blocks, "joined", joining)
        run_capture(pipeline(default, mariadb_db, 5503, options), until_idle=True)
    assert handed and min(handed) >= stream.BLOCK_MIN_ROWS > 1

    topics = [f"my.{name}.{t}" for t in TABLES]
    got, want, by_default = bronze(blocks, topics), bronze(per_row, topics), bronze(default, topics)
    assert sum(len(rows) for rows in want.values()) > 840
    for topic in topics:
        assert got[topic] == want[topic], topic
        assert by_default[topic] == want[topic], topic
    assert last_order_keys(blocks, topics) == last_order_keys(per_row, topics) == last_order_keys(default, topics)
