"""Streamed runs of inserts and updates rendered column-wise equal the message-by-message rendering.

Two pipelines stream the same changes from two slots created at the same point: one as the
connector runs (runs of inserts, and of updates without old tuples, become `ChangeBlock`s, here
cut into blocks of 7 rows so that runs split, and short runs too), one with the columnar renderer switched off (every
message rendered by itself, the path the conformance suite compares with Debezium). Their bronze
tables must hold the same records, byte for byte (processing-time ``ts_*`` aside), and end at the
same order key.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest

from bronze.writer import BronzeWriter
from cdc_sources.postgres import stream
from cdc_sources.postgres.pgoutput import ColumnarUnsupportedError
from cdc_sources.postgres.stream_blocks import RowRunRenderer
from pipelines.capture import run_capture
from tests.support.bronze_rows import read_topic
from tests.support.pipeline_yaml import pipeline

pytestmark = [pytest.mark.integration, pytest.mark.postgres]

_TS = re.compile(r',"ts_ms":\d+,"ts_us":\d+,"ts_ns":\d+}$|(?<=^\{"op":"m"),"ts_ms":\d+')
TOPICS = ("pg.public.kinds", "pg.public.other", "pg.public.nokey", "pg.public.masked", "pg.transaction",
          "pg.message")

DDL = """
CREATE TYPE mood AS ENUM ('sad', 'ok', 'happy');
CREATE TABLE kinds (
    id bigint PRIMARY KEY, s smallint, i integer NOT NULL DEFAULT 7, b boolean, t text, v varchar(10),
    n numeric(12,2), nv numeric, f float8, tz timestamptz, ts timestamp, ts3 timestamp(3), d date, tm time,
    iv interval, u uuid, j jsonb, by bytea, ai int[], m mood, ip inet
);
CREATE TABLE other (id int PRIMARY KEY, name text NOT NULL);
CREATE TABLE nokey (a int, b text);
ALTER TABLE nokey REPLICA IDENTITY FULL;
CREATE TABLE masked (id int PRIMARY KEY, secret text, shortened varchar(20), plain text);
CREATE TABLE ignored (id int PRIMARY KEY);
"""

SPECIAL_ROWS = """
INSERT INTO kinds VALUES
 (1, -32768, -2147483648, true, 'plain', 'v', -1234567890.12, 1.500, 'NaN', 'infinity', '-infinity', 'infinity',
  'infinity', '24:00:00', 'P1Y2M', '11111111-2222-3333-4444-555555555555', '{"a": [1, "x\\"y"]}', '\\x00ff',
  '{1,NULL,3}', 'sad', '10.0.0.1/8'),
 (2, 32767, 2147483647, false, E'quote " back \\\\ tab \\t nl \\n ctl \\x01 end', '', 0.00, -0.001, 1e300,
  '2020-02-29 23:59:59.999999+00', '0044-03-15 12:00:00 BC', '2020-01-01 00:00:00.123', '0044-03-15 BC',
  '00:00:00.000001', 'P-1D', NULL, 'null', '', '{}', 'happy', '::1'),
 (3, NULL, DEFAULT, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
  NULL, NULL),
 (4, 0, 0, true, E'ünïcödé ☃ 😀 \\u2028 "quoted"', 'x', 99.99, 100, -0.0, '1970-01-01 00:00:00+00',
  '1969-12-31 23:59:59.999999', '1970-01-01 00:00:00.001', '2000-02-29', '12:34:56.789', 'PT0S',
  '00000000-0000-0000-0000-000000000000', '[1, 2, {"k": "v"}]', '\\x', '{{1,2},{3,4}}', 'ok', '192.168.0.1')
"""


def generated(first: int, last: int) -> str:
    return f"""
INSERT INTO kinds (id, s, i, b, t, v, n, nv, f, tz, ts, ts3, d, tm)
SELECT g, (g % 30000)::smallint, g * 7, g % 3 = 0, 'row ' || g || repeat(' x', g % 7), left(md5(g::text), 10),
       (g * 13.37)::numeric(12,2), g / 7.0, g * 0.1, timestamptz '2026-01-01 00:00:00+00' + g * interval '1.25 s',
       timestamp '1960-01-01 00:00:00' + g * interval '7 hours 0.5 s', timestamp '2001-01-01' + g * interval '1 ms',
       date '1990-01-01' + g, time '00:00:00' + g * interval '1.5 s'
FROM generate_series({first}, {last}) AS g
"""


WORKLOAD = [
    # one transaction: runs of inserts interleaved with other tables, updates, deletes, a message,
    # an uncaptured table, and a schema change in the middle (a new Relation message)
    ["BEGIN", SPECIAL_ROWS, generated(10, 60), "INSERT INTO other VALUES (1, 'one')", generated(61, 70),
     "INSERT INTO ignored VALUES (1)", generated(71, 80), "UPDATE kinds SET t = 'changed' WHERE id = 10",
     "DELETE FROM kinds WHERE id = 11", "SELECT pg_logical_emit_message(true, 'app', 'in between')",
     generated(81, 90), "ALTER TABLE kinds ADD COLUMN extra text DEFAULT 'x'", generated(91, 99),
     "UPDATE kinds SET id = 1000 WHERE id = 12", generated(100, 103), "COMMIT"],
    # keyless, masked/truncated columns, a key-override table
    ["INSERT INTO nokey SELECT g, 'b' || g FROM generate_series(1, 20) g",
     "INSERT INTO masked SELECT g, 'secret ' || g, repeat('long', 5), 'p' || g FROM generate_series(1, 20) g"],
    # a value stored out of line (TOAST) is sent whole in an insert
    ["INSERT INTO other SELECT 2, string_agg(md5(g::text), '') FROM generate_series(1, 4000) g"],
    # single-row transactions
    *[[f"INSERT INTO other VALUES ({i}, 'single {i}')"] for i in range(10, 14)],
    # runs of updates without old tuples; one run holding an unchanged TOAST value (declined
    # as a whole, rendered message by message); updates with old tuples (REPLICA IDENTITY FULL)
    ["UPDATE kinds SET s = s + 1, t = coalesce(t, '') || '!' WHERE id BETWEEN 20 AND 50",
     "UPDATE other SET id = id WHERE id IN (2, 10, 11)", "UPDATE nokey SET b = b || 'x' WHERE a < 5",
     "UPDATE masked SET plain = plain || '+' WHERE id < 9"],
]


@pytest.fixture
def database(pg_db: str) -> Iterator[str]:
    with psycopg.connect(pg_db, autocommit=True) as conn:
        conn.execute(DDL)
    yield pg_db


def capture(root: str, dsn: str, slot: str, options: dict[str, str]) -> None:
    cfg = pipeline(root, dsn, **{"slot.name": slot, **options})
    run_capture(cfg, until_idle=True)


def run_workload(dsn: str) -> None:
    with psycopg.connect(dsn, autocommit=True) as conn:
        for transaction in WORKLOAD:
            for statement in transaction:
                conn.execute(statement)


def bronze(root: str) -> dict[str, list[tuple[Any, ...]]]:
    out = {}
    for topic in TOPICS:
        rows = read_topic(root, topic, ("key", "value", "op", "seq", "position", "headers", "schema_id"))
        out[topic] = [(r["key"], None if r["value"] is None else _TS.sub(_no_time, r["value"]), r["op"], r["position"],
                       _headers(r["headers"]), r["schema_id"]) for r in rows]
    return out


def _no_time(m: re.Match[str]) -> str:
    """The processing time taken out of an envelope (each rendering has its own)."""
    return "}" if m.group(0).endswith("}") else ""


def _headers(headers: Any) -> Any:
    """Headers without the run id (each capture run has its own)."""
    return None if headers is None else [h for h in headers if h[0] != "__debezium.context.runId"]


def last_order_keys(root: str) -> dict[str, tuple[int, ...]]:
    writer = BronzeWriter(root, "pg")
    try:
        return {t: writer.table_state(t).order_key for t in TOPICS}
    finally:
        writer.close()


@pytest.mark.parametrize("options", [
    {},
    {"decimal.handling.mode": "string", "time.precision.mode": "connect", "binary.handling.mode": "hex",
     "provide.transaction.metadata": "true"},
    {"decimal.handling.mode": "double", "time.precision.mode": "adaptive_time_microseconds",
     "provide.transaction.metadata": "true", "skipped.operations": "none", "tombstones.on.delete": "false",
     "column.mask.with.5.chars": "public.masked.secret", "column.truncate.to.3.chars": "public.masked.shortened",
     "message.key.columns": "public.masked:plain", "column.propagate.source.type": "public.kinds.n"},
], ids=["defaults", "string_connect_hex_tx", "double_micro_transforms"])
def test_columnar_runs_equal_the_message_by_message_rendering(database, tmp_path, monkeypatch, options):
    options = {"table.include.list": "public.kinds,public.other,public.nokey,public.masked",
               "snapshot.mode": "no_data", **options}
    columnar, per_message = str(tmp_path / "columnar"), str(tmp_path / "per_message")
    capture(columnar, database, "s_columnar", options)  # creates both slots before any change
    capture(per_message, database, "s_per_message", options)
    run_workload(database)

    rendered: list[tuple[str, int]] = []
    real_render = RowRunRenderer.render

    def counting(self: RowRunRenderer, payloads: Any, lsns: Any, run: Any) -> Any:
        block = real_render(self, payloads, lsns, run)
        rendered.append((run.op, len(block)))
        return block

    with monkeypatch.context() as m:
        m.setattr(stream, "RUN_ROWS", 7)
        m.setattr(stream, "RUN_MIN_ROWS", 1)  # runs of any length column-wise, the strictest comparison
        m.setattr(RowRunRenderer, "render", counting)
        capture(columnar, database, "s_columnar", options)
    # runs of both kinds were rendered column-wise, and split
    assert max(n for _, n in rendered) == 7 and sum(n for op, n in rendered if op == "c") > 100
    assert sum(n for op, n in rendered if op == "u") > 30

    def declined(*_args: Any) -> Any:
        raise ColumnarUnsupportedError("switched off by the test")

    with monkeypatch.context() as m:
        m.setattr(RowRunRenderer, "render", declined)
        capture(per_message, database, "s_per_message", options)

    got, want = bronze(columnar), bronze(per_message)
    assert sum(len(v) for v in want.values()) > 150
    for topic in TOPICS:
        assert got[topic] == want[topic], topic
    assert last_order_keys(columnar) == last_order_keys(per_message)
