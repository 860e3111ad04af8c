"""Our PostgreSQL connector against the real Debezium engine: same database, same workload,
``key`` and ``value`` compared field by field (processing-time fields and ``source.version``
excepted, see `compare.DEFAULT_IGNORE`).

Both connectors get their own slot before the workload runs: ours snapshots first, then
Debezium snapshots and streams the workload, then ours streams it.
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Callable, Sequence

import psycopg
import pyarrow as pa
import pytest
from deltalake import DeltaTable, write_deltalake

from bronze.schema import CDC_DIR, bronze_root, topic_path
from pipelines.capture import run_capture
from pipelines.config import parse_pipeline
from tests.conformance.compare import DEFAULT_IGNORE, diff_records
from tests.conformance.debezium_runner import DbzRecord, run_debezium_postgres

pytestmark = [pytest.mark.integration, pytest.mark.postgres, pytest.mark.conformance]

PREFIX = "conf"

# Where we knowingly differ from Debezium (each documented in docs/postgres.md):
IGNORE = DEFAULT_IGNORE | frozenset({
    # Debezium lists END's data_collections in Java HashMap order; we reproduce that order,
    # but the comparison of the list is exact anyway. Nothing else is ignored.
})


def _dsn_parts(dsn: str) -> dict[str, str]:
    return dict(p.split("=", 1) for p in dsn.split())


def _ours(root: str, dsn: str, options: dict[str, str]) -> Callable[[], None]:
    parts = _dsn_parts(dsn)
    opts = "".join(f"      {k}: \"{v}\"\n" for k, v in {"slot.name": "ours", **options}.items())
    text = (f"pipeline: conf\nlakehouse: {{root: \"{root}\"}}\nsources:\n  - name: {PREFIX}\n"
            f"    connector: postgres\n    connection: {{host: 127.0.0.1, port: {parts['port']}, "
            f"database: {parts['dbname']}, user: postgres}}\n    options:\n{opts}")
    config = parse_pipeline(text, env={})
    return lambda: run_capture(config, until_idle=True) and None


def _bronze_topics(root: str) -> set[str]:
    """Every topic our capture wrote a bronze table for (the ``_cdc`` bookkeeping left out)."""
    bronze = bronze_root(root)
    return {name for name in os.listdir(bronze) if name != CDC_DIR} if os.path.isdir(bronze) else set()


def _bronze(root: str, topics: Sequence[str]) -> list[tuple[str, str | None, str | None, dict[str, str]]]:
    out = []
    for topic in topics:
        path = topic_path(root, topic)
        if not os.path.exists(path):
            continue
        rows = sorted(DeltaTable(path).to_pyarrow_table().to_pylist(), key=lambda r: r["seq"])
        out.extend((topic, r["key"], r["value"], dict(r["headers"] or [])) for r in rows)
    return out


SNAPSHOT_TIMING = ("ts_ms", "ts_us", "ts_ns", "sequence", "txId", "lsn")


def _neutral_snapshot(value: str | None) -> str | None:
    """Blank the fields that depend on when each connector took its snapshot.

    The two snapshots run at different moments (different LSN, xid and time), so those
    fields of ``r`` records can't match; everything else must.
    """
    if value is None:
        return None
    doc = json.loads(value)
    if doc.get("op") == "r":
        for name in SNAPSHOT_TIMING:
            doc["source"][name] = "<snapshot>"
    return json.dumps(doc)


def _event_time_compared(topic: str, value: str | None) -> str | None:
    """A transaction record's ``ts_ms`` under a name the comparison does not skip.

    ``value.ts_ms`` is skipped as processing time, which it is in change events; in BEGIN and
    END records Debezium sets it from the source (the event's or the commit's timestamp), so
    there it must match.
    """
    if value is None or not topic.endswith(".transaction"):
        return value
    doc = json.loads(value)
    doc["source_ts_ms"] = doc.pop("ts_ms")
    return json.dumps(doc)


def _compare(root: str, theirs: list[DbzRecord]) -> list[str]:
    """Differences over the union of both sides' topics: a topic only one side wrote is a difference."""
    assert theirs, "Debezium produced no records: nothing would be compared"
    topics = sorted({r.topic for r in theirs} | _bronze_topics(root))
    ours = [(t, k, _event_time_compared(t, _neutral_snapshot(v)), h) for t, k, v, h in _bronze(root, topics)]
    neutral = [dataclasses.replace(r, value=_event_time_compared(r.topic, _neutral_snapshot(r.value)))
               for r in theirs]
    return diff_records(ours, neutral, ignore=IGNORE)


def _write_bronze(root: str, topic: str, values: Sequence[str]) -> None:
    """A bronze-shaped table of ``topic`` (seq, key, value, headers), for the checks of `_compare`."""
    headers = pa.map_(pa.string(), pa.string())
    write_deltalake(topic_path(root, topic), pa.table({
        "seq": pa.array(range(1, len(values) + 1), pa.int64()), "key": pa.array(['{"id":1}'] * len(values)),
        "value": pa.array(values), "headers": pa.array([None] * len(values), headers)}))


def test_a_topic_only_we_wrote_is_a_difference(tmp_path):
    """A table our connector captured but Debezium did not (a filter we got wrong) is reported."""
    root = str(tmp_path)
    value = '{"op":"c","after":{"id":1}}'
    _write_bronze(root, f"{PREFIX}.public.kept", [value])
    _write_bronze(root, f"{PREFIX}.public.excluded", [value])
    theirs = [DbzRecord(f"{PREFIX}.public.kept", '{"id":1}', value, {}, None, None)]
    assert _compare(root, theirs) == [f"{PREFIX}.public.excluded: ours has 1 records, Debezium 0",
                                      f'{PREFIX}.public.excluded[0]: only in ours: op=c key={{"id":1}}']


def test_no_records_from_debezium_fails_the_comparison(tmp_path):
    with pytest.raises(AssertionError, match="Debezium produced no records"):
        _compare(str(tmp_path), [])


def _run(pg_db: str, tmp_path, setup: str, workload: Sequence[str], options: dict[str, str]) -> list[str]:
    with psycopg.connect(pg_db, autocommit=True) as conn:
        conn.execute(setup)
    root = str(tmp_path / "lake")
    ours = _ours(root, pg_db, options)
    ours()  # snapshot, and our slot now exists

    def run_workload() -> None:
        with psycopg.connect(pg_db, autocommit=True) as conn:
            for statement in workload:
                conn.execute(statement)

    parts = _dsn_parts(pg_db)
    theirs = run_debezium_postgres(
        host="127.0.0.1", port=int(parts["port"]), dbname=parts["dbname"], user="postgres", password="",
        properties={"topic.prefix": PREFIX, **options}, workload=run_workload, idle_timeout_s=5.0)
    ours()  # stream the workload
    return _compare(root, theirs)


BASIC_SETUP = """
CREATE TABLE alpha (id int PRIMARY KEY, v text, n int NOT NULL DEFAULT 0);
CREATE TABLE beta (id bigint PRIMARY KEY, name varchar(40) NOT NULL, price numeric(10,2), ratio numeric,
                   at timestamp, at_tz timestamptz, d date, flag boolean, payload bytea, doc jsonb, u uuid);
CREATE TABLE full_ri (id int PRIMARY KEY, v text, n int);
ALTER TABLE full_ri REPLICA IDENTITY FULL;
INSERT INTO alpha VALUES (1, 'a', 1), (2, 'b', 2), (3, 'c', 3);
INSERT INTO beta VALUES (1, 'one', 12.34, 3.14159, '2024-01-02 03:04:05.123456', '2024-01-02 03:04:05.5+02',
                         '2024-02-29', true, '\\x0001ff', '{"a": [1, 2]}', '00000000-0000-0000-0000-000000000001');
INSERT INTO beta (id, name) VALUES (2, 'nulls');
INSERT INTO full_ri VALUES (1, 'x', 1);
"""

BASIC_WORKLOAD = [
    "INSERT INTO alpha VALUES (4, 'd', 4)",
    "UPDATE alpha SET v = 'bb' WHERE id = 2",
    "DELETE FROM alpha WHERE id = 3",
    "UPDATE alpha SET id = 10 WHERE id = 1",
    "INSERT INTO beta VALUES (3, 'three', -0.01, -12345678901234567890.5, '1970-01-01 00:00:00', "
    "'1999-12-31 23:59:59.5-00', '1900-01-01', false, '', '[]', gen_random_uuid())",
    "UPDATE beta SET price = 99999999.99, doc = '{\"k\": \"v\"}' WHERE id = 1",
    "DELETE FROM beta WHERE id = 2",
    "UPDATE full_ri SET v = 'y', n = 2 WHERE id = 1",
    "DELETE FROM full_ri WHERE id = 1",
    "BEGIN; INSERT INTO alpha VALUES (20, 'tx', 5); INSERT INTO beta (id, name) VALUES (20, 'tx'); "
    "UPDATE alpha SET n = 6 WHERE id = 20; COMMIT",
    "SELECT pg_logical_emit_message(true, 'my-prefix', 'transactional payload')",
    "SELECT pg_logical_emit_message(false, 'other-prefix', 'non-transactional payload')",
    "TRUNCATE alpha",
]


def test_basic_workload_matches_debezium(pg_db, tmp_path):
    diffs = _run(pg_db, tmp_path, BASIC_SETUP, BASIC_WORKLOAD, {"skipped.operations": "none"})
    assert diffs == [], "\n".join(diffs[:60])


def test_transaction_metadata_matches_debezium(pg_db, tmp_path):
    diffs = _run(pg_db, tmp_path, BASIC_SETUP, BASIC_WORKLOAD[:4] + BASIC_WORKLOAD[9:10],
                 {"provide.transaction.metadata": "true"})
    assert diffs == [], "\n".join(diffs[:60])


SHAPES_SETUP = """
CREATE TABLE gamma (id int PRIMARY KEY, secret text, long_text text, big text, code varchar(10), n int);
CREATE UNIQUE INDEX gamma_code ON gamma (code);
ALTER TABLE gamma ALTER COLUMN code SET NOT NULL;
CREATE TABLE idx_ri (id int PRIMARY KEY, code int NOT NULL, v text);
CREATE UNIQUE INDEX idx_ri_code ON idx_ri (code);
ALTER TABLE idx_ri REPLICA IDENTITY USING INDEX idx_ri_code;
CREATE TABLE nothing_ri (id int PRIMARY KEY, v text);
ALTER TABLE nothing_ri REPLICA IDENTITY NOTHING;
INSERT INTO gamma VALUES (1, 'hunter2', 'abcdefgh',
                          (SELECT string_agg(md5(g::text), '') FROM generate_series(1, 400) g), 'c1', 1);
INSERT INTO idx_ri VALUES (1, 100, 'a');
INSERT INTO nothing_ri VALUES (1, 'a');
"""

SHAPES_WORKLOAD = [
    "UPDATE gamma SET n = 2 WHERE id = 1",  # big is TOASTed and unchanged
    "INSERT INTO gamma VALUES (2, 's', 'xy', 'small', 'c2', 3)",
    "ALTER TABLE gamma ADD COLUMN added int DEFAULT 7",
    "UPDATE gamma SET n = 4 WHERE id = 2",
    "UPDATE idx_ri SET v = 'b' WHERE id = 1",
    "UPDATE idx_ri SET code = 101 WHERE id = 1",
    "DELETE FROM idx_ri WHERE id = 1",
    "INSERT INTO nothing_ri VALUES (2, 'b')",
]


def test_filters_toast_identities_and_schema_change_match_debezium(pg_db, tmp_path):
    options = {
        "table.include.list": "public.gamma,public.idx_ri",
        "column.exclude.list": "public.gamma.secret",
        "column.truncate.to.3.chars": "public.gamma.long_text",
        "column.mask.with.5.chars": "public.idx_ri.v",
        "message.key.columns": "public.gamma:code",
        "column.propagate.source.type": "public.gamma.code",
    }
    diffs = _run(pg_db, tmp_path, SHAPES_SETUP, SHAPES_WORKLOAD, options)
    assert diffs == [], "\n".join(diffs[:60])


TYPES_SETUP = """
CREATE EXTENSION IF NOT EXISTS hstore;
CREATE EXTENSION IF NOT EXISTS ltree;
CREATE EXTENSION IF NOT EXISTS citext;
CREATE TYPE mood AS ENUM ('sad', 'ok', 'happy');
CREATE DOMAIN price AS numeric(6,2);
CREATE TABLE typed (
  id int PRIMARY KEY, b bool, bit1 bit(1), bit4 bit(4), vb varbit(8), i2 int2, i4 int4 DEFAULT 42, i8 int8,
  o oid, r real, d double precision, n102 numeric(10,2), n numeric, m money, c5 char(5), vc varchar(10),
  t text DEFAULT 'dflt', dt date, tm time, tm3 time(3), ttz timetz, ts timestamp, ts3 timestamp(3),
  tstz timestamptz, tstz0 timestamptz(0), iv interval, by bytea, js json, jb jsonb, x xml, u uuid, ip inet,
  cidr_ cidr, mac macaddr, mac8 macaddr8, pt point, r4 int4range, r8 int8range, rn numrange, rts tsrange,
  rtstz tstzrange, rd daterange, mo mood, pr price, ia int[], ta text[], hs hstore, lt ltree, ci citext
);
INSERT INTO typed VALUES (1, true, B'1', B'1010', B'101', -32768, 2147483647, -9223372036854775808, 4294967295,
  1.5, -2.25e-10, -12345678.91, 3.14159265358979323846, 1234.56, 'ab', 'héllo', 'line
break "quoted" \\ back', '2024-02-29', '23:59:59.999999', '12:34:56.789', '10:00:00+02',
  '2024-01-02 03:04:05.123456', '2024-01-02 03:04:05.123', '2024-01-02 03:04:05.5+02', '2024-01-02 03:04:05+00',
  '1 year 2 months 3 days 04:05:06.78', '\\xdeadbeef', '{"a": [1, 2.5, null]}', '{"b": {"c": true}}',
  '<a>x</a>', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', '192.168.0.1/24', '10.0.0.0/8', '08:00:2b:01:02:03',
  '08:00:2b:01:02:03:04:05', '(1.5,-2)', '[1,10)', '[5,)', '(1.5,2.5]', '[2024-01-01 00:00,2024-02-01 00:00)',
  '[2024-01-01 00:00+00,2024-02-01 00:00+00)', '[2024-01-01,2024-02-01)', 'happy', 12.34, '{1,NULL,3}',
  '{"a b","c,d",NULL}', 'k=>v, n=>NULL', 'top.mid.leaf', 'MiXeD');
INSERT INTO typed (id) VALUES (2);
INSERT INTO typed (id, ts, tstz, dt, r, d, n) VALUES (3, 'infinity', '-infinity', '1970-01-01', 'NaN',
  'Infinity', 0);
"""

TYPES_WORKLOAD = [
    "INSERT INTO typed SELECT id + 100, b, bit1, bit4, vb, i2, i4, i8, o, r, d, n102, n, m, c5, vc, t, dt, tm, tm3, "
    "ttz, ts, ts3, tstz, tstz0, iv, by, js, jb, x, u, ip, cidr_, mac, mac8, pt, r4, r8, rn, rts, rtstz, rd, mo, "
    "pr, ia, ta, hs, lt, ci FROM typed WHERE id IN (1, 2, 3)",
    "UPDATE typed SET n102 = 0.01, ts = '1900-01-01 00:00:00', iv = '-1 day', hs = 'x=>y' WHERE id = 101",
    "DELETE FROM typed WHERE id = 102",
]


@pytest.mark.parametrize("options", [
    {},
    {"decimal.handling.mode": "string", "time.precision.mode": "connect", "binary.handling.mode": "hex",
     "hstore.handling.mode": "map", "interval.handling.mode": "string"},
    {"decimal.handling.mode": "double", "time.precision.mode": "adaptive_time_microseconds",
     "binary.handling.mode": "base64"},
    {"time.precision.mode": "microseconds", "binary.handling.mode": "base64-url-safe"},
], ids=["defaults", "string-connect-hex-map", "double-adaptive_us-base64", "micro-urlsafe"])
def test_every_type_matches_debezium(pg_db, tmp_path, options):
    diffs = _run(pg_db, tmp_path, TYPES_SETUP, TYPES_WORKLOAD, options)
    assert diffs == [], "\n".join(diffs[:80])


EMPTY_LAST_SETUP = """
CREATE TABLE a_rows (id int PRIMARY KEY, v text);
CREATE TABLE b_rows (id int PRIMARY KEY, v text);
CREATE TABLE y_empty (id int PRIMARY KEY);
CREATE TABLE z_empty (id int PRIMARY KEY);
INSERT INTO a_rows VALUES (1, 'a'), (2, 'b');
INSERT INTO b_rows VALUES (1, 'c'), (2, 'd'), (3, 'e');
"""


def test_snapshot_markers_when_the_last_tables_are_empty_match_debezium(pg_db, tmp_path):
    """One snapshot thread, the last tables in order empty: the last row emitted is ``last``."""
    diffs = _run(pg_db, tmp_path, EMPTY_LAST_SETUP, ["INSERT INTO z_empty VALUES (1)"], {})
    assert diffs == [], "\n".join(diffs[:60])
