"""End to end on an S3 lakehouse (the tests' SeaweedFS server), from the command line: a real
PostgreSQL workload captured into bronze on S3, silver built by the embedded Sail engine on S3,
in increments; every silver table equals its source table row for row, value for value, and
`verify` agrees, then finds a silver row deleted on purpose.

The S3 endpoint and credentials are in the pipeline file only, as ``${VAR}`` storage options:
capture, the lease, the status file and Sail (through `export_for_sail`) all get them there.
"""

from __future__ import annotations

import datetime as dt
import json
import os
from decimal import Decimal
from typing import Any

import psycopg
import pytest
from deltalake import DeltaTable

from pipelines.capture import run_capture
from pipelines.cli import main
from pipelines.config import parse_pipeline
from pipelines.local_s3 import LocalS3
from pipelines.object_store import hadoop_s3a_conf
from pipelines.silver_runner import run_silver
from tests.pipelines.test_end_to_end import ACCOUNT_COLS, EVENT_COLS, SETUP, Workload, _same
from tests.support.object_store_verify import verify_finds_silver_equal_then_a_deleted_row
from tests.support.pipeline_yaml import pipeline_text
from tests.support.s3_pipeline import S3_VARS, set_s3_vars, with_storage

pytestmark = [pytest.mark.integration, pytest.mark.postgres, pytest.mark.spark]


def _value(v: Any) -> Any:
    """A Python value of PostgreSQL or of a Delta table, in one comparable form."""
    if isinstance(v, dt.datetime) and v.tzinfo is not None:
        return v.astimezone(dt.UTC).replace(tzinfo=None)
    if isinstance(v, (bytes, bytearray, memoryview)):
        return bytes(v)
    if isinstance(v, Decimal):
        return v.normalize()
    if isinstance(v, dict):
        return json.dumps(v, sort_keys=True)
    if isinstance(v, str) and v.startswith("{"):
        return json.dumps(json.loads(v), sort_keys=True)
    return v


def _silver(server: LocalS3, root: str, table: str, cols: list[str]) -> list[tuple[Any, ...]]:
    rows = DeltaTable(f"{root}/silver/{table}", storage_options=server.storage_options()).to_pyarrow_table(
        columns=cols).to_pylist()
    return sorted((tuple(_value(r[c]) for c in cols) for r in rows), key=lambda r: r[0])


def _step(config: str) -> None:
    assert main(["-q", "capture", "-c", config, "--until-idle"]) == 0
    assert main(["-q", "silver", "-c", config, "--once"]) == 0


def test_capture_and_sail_silver_on_s3_equal_the_source(pg_db, tmp_path, s3_server, s3_root, capsys, monkeypatch):
    set_s3_vars(s3_server, monkeypatch)
    assert set(S3_VARS) <= set(os.environ)
    config = tmp_path / "pipeline.yaml"
    parts = dict(p.split("=", 1) for p in pg_db.split())
    text = pipeline_text("lake", pg_db, **{"slot.name": f"e2e_{parts['dbname'][-20:]}", "skipped.operations": "none"},
                         capture={"commit_max_records": 300})
    text += ("silver:\n  - {table: accounts, source: pg.public.accounts}\n"
             "  - {table: events, source: pg.public.events}\n")
    config.write_text(with_storage(text, s3_root))
    with psycopg.connect(pg_db, autocommit=True) as conn:
        conn.execute(SETUP)
        work = Workload(conn, seed=20261127)
        work.round(80)
        _step(str(config))
        work.round(80)
        conn.execute("DELETE FROM events WHERE id IN (SELECT id FROM events LIMIT 3)")
        _step(str(config))
        conn.execute("SET TIME ZONE 'UTC'")
        expected = {
            "accounts": [tuple(_value(v) for v in r) for r in conn.execute(
                f"SELECT {', '.join(ACCOUNT_COLS)} FROM accounts ORDER BY id").fetchall()],
            "events": [tuple(_value(v) for v in r) for r in conn.execute(
                f"SELECT {', '.join(EVENT_COLS)} FROM events ORDER BY id").fetchall()],
        }
    captured = capsys.readouterr()
    assert s3_server.secret_access_key not in captured.out + captured.err
    for table, cols in {"accounts": ACCOUNT_COLS, "events": EVENT_COLS}.items():
        got = _silver(s3_server, s3_root, table, cols)
        assert len(got) == len(expected[table]) > 0, table
        diffs = [(g[0], n, gv, ev) for g, e in zip(got, expected[table], strict=True)
                 for n, gv, ev in zip(cols, g, e, strict=True) if not _same(gv, ev)]
        assert diffs == [], f"{table}: {diffs[:10]}"
    verify_finds_silver_equal_then_a_deleted_row(config, f"{s3_root}/silver/events", s3_server.storage_options(),
                                                 s3_server.secret_access_key, capsys)


@pytest.mark.classic_spark  # the classic half of scripts/test.sh runs it; the Sail half leaves it out
@pytest.mark.parametrize("engine", ["spark"], indirect=True)
def test_classic_spark_silver_on_s3_equals_the_source(pg_db, tmp_path, s3_server, s3_root, spark, monkeypatch):
    """Classic Spark + Delta reads bronze and writes silver on S3 through Hadoop's S3A connector
    (`hadoop_s3a_conf`: the storage options as S3A settings, ``s3://`` served by S3A), here set
    on the test session's running context."""
    for key, value in s3_server.env().items():
        monkeypatch.setenv(key, value)
    conf = {k.removeprefix("spark.hadoop."): v for k, v in hadoop_s3a_conf(s3_server.storage_options()).items()}
    parts = dict(p.split("=", 1) for p in pg_db.split())
    text = pipeline_text(s3_root, pg_db, **{"slot.name": f"c_{parts['dbname'][-20:]}", "skipped.operations": "none"},
                         capture={"commit_max_records": 300})
    text += "silver:\n  - {table: accounts, source: pg.public.accounts}\n"
    cfg = parse_pipeline(text, env={})
    try:
        for key, value in conf.items():
            spark.conf.set(key, value)
        with psycopg.connect(pg_db, autocommit=True) as conn:
            conn.execute(SETUP)
            work = Workload(conn, seed=20261128)
            work.round(60)
            run_capture(cfg, until_idle=True)
            result = run_silver(root=s3_root, engine=cfg.engine, tables=cfg.silver, options=cfg.silver_options,
                                sources={"pg": "pg"}, once=True, spark=spark)
            assert result.ok, [t.error for t in result.errors]
            conn.execute("SET TIME ZONE 'UTC'")
            expected = [tuple(_value(v) for v in r) for r in conn.execute(
                f"SELECT {', '.join(ACCOUNT_COLS)} FROM accounts ORDER BY id").fetchall()]
    finally:
        for key in conf:
            spark.conf.unset(key)
    got = _silver(s3_server, s3_root, "accounts", ACCOUNT_COLS)
    assert len(got) == len(expected) > 0
    diffs = [(g[0], n, gv, ev) for g, e in zip(got, expected, strict=True)
             for n, gv, ev in zip(ACCOUNT_COLS, g, e, strict=True) if not _same(gv, ev)]
    assert diffs == [], diffs[:10]
