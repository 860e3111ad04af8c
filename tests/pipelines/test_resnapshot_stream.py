"""The Structured Streaming driver settles a re-snapshot too (it shares the apply path): rows deleted
while capture could not see them leave silver after ``reset`` and a new capture. Classic Spark in a
subprocess (``cdc-lakehouse silver --stream``, available-now); the oracle is `silver_problems`."""

from __future__ import annotations

import psycopg
import pytest

from pipelines.capture import run_capture
from pipelines.config import parse_pipeline
from pipelines.operations import reset
from tests.pipelines.exactly_once_support import create_schema
from tests.support.silver_processes import SilverProcess, pipeline_with_silver, silver_problems

pytestmark = [pytest.mark.integration, pytest.mark.postgres, pytest.mark.classic_spark]


def _stream_once(tmp_path, config) -> str:
    tmp_path.mkdir(parents=True, exist_ok=True)
    proc = SilverProcess(tmp_path).start_cli(config, "-v", "--stream", "--trigger", "available-now")
    status = proc.wait(600)
    assert status == 0, proc.tail()
    return proc.output()


def test_stream_settles_a_resnapshot_after_reset(pg_db, tmp_path):
    root = str(tmp_path / "lake")
    create_schema(pg_db, big=10, accounts=300, orders=300)
    text = pipeline_with_silver(root, pg_db, slot="rs_stream")
    config = tmp_path / "pipeline.yaml"
    config.write_text(text)
    cfg = parse_pipeline(text, env={})
    run_capture(cfg, until_idle=True)
    _stream_once(tmp_path / "one", config)
    assert silver_problems(root, pg_db) == []
    with psycopg.connect(pg_db, autocommit=True) as conn:  # while capture is stopped
        conn.execute("DELETE FROM orders WHERE id % 3 = 0")
        conn.execute("DELETE FROM accounts WHERE id % 5 = 0")
        conn.execute("UPDATE accounts SET balance = balance + 1 WHERE id % 7 = 0")
    reset(cfg, "pg", to=None, yes=True, say=lambda _line: None)
    run_capture(cfg, until_idle=True)
    _stream_once(tmp_path / "two", config)
    assert silver_problems(root, pg_db) == []
