"""A lakehouse on Azure Blob Storage (the tests' Azurite server), from the command line: a real
PostgreSQL workload captured into bronze there, silver built by the embedded Sail engine there,
in increments, every silver table equal to its source table, which `verify` confirms before
finding a silver row deleted on purpose; `status` reads the capture's status
back; a wrong account key ends the capture with one line and no traceback, the key never printed.

The account, key and endpoint are in the pipeline file only, as ``${VAR}`` storage options:
capture, the lease, the status file and Sail (through `export_for_sail`) all get them there.
"""

from __future__ import annotations

import base64
import json
import os
import time
from typing import Any, cast

import obstore
import psycopg
import pytest
from deltalake import DeltaTable
from obstore.store import AzureStore

from pipelines.azure_spark import hadoop_abfs_conf
from pipelines.capture import run_capture
from pipelines.cli import main
from pipelines.config import parse_pipeline
from pipelines.local_azure import LocalAzure
from pipelines.silver_runner import run_silver
from tests.pipelines.test_end_to_end import ACCOUNT_COLS, EVENT_COLS, SETUP, Workload, _same
from tests.pipelines.test_end_to_end_s3 import _value
from tests.support.azure_pipeline import AZURE_VARS, set_azure_vars, with_azure_storage
from tests.support.object_store_verify import verify_finds_silver_equal_then_a_deleted_row
from tests.support.pipeline_yaml import pipeline_text

pytestmark = [pytest.mark.integration, pytest.mark.postgres, pytest.mark.spark]


def _silver(server: LocalAzure, root: str, table: str, cols: list[str]) -> list[tuple[Any, ...]]:
    rows = DeltaTable(f"{root}/silver/{table}", storage_options=server.storage_options()).to_pyarrow_table(
        columns=cols).to_pylist()
    return sorted((tuple(_value(r[c]) for c in cols) for r in rows), key=lambda r: r[0])


def _objects(server: LocalAzure, root: str) -> list[str]:
    store = AzureStore(server.container, config=cast(Any, {
        "account_name": server.account, "account_key": server.account_key, "endpoint": server.endpoint}),
        client_options={"allow_http": True})
    prefix = root.removeprefix(f"az://{server.container}/")
    return [str(m["path"]) for batch in obstore.list(store, prefix=prefix + "/") for m in batch]


def test_capture_sail_silver_and_status_on_azure(pg_db, tmp_path, azure_server, azure_root, capsys, monkeypatch):
    set_azure_vars(azure_server, monkeypatch)
    assert set(AZURE_VARS) <= set(os.environ)
    config = tmp_path / "pipeline.yaml"
    parts = dict(p.split("=", 1) for p in pg_db.split())
    text = pipeline_text("lake", pg_db, **{"slot.name": f"az_{parts['dbname'][-20:]}", "skipped.operations": "none"},
                         capture={"commit_max_records": 300})
    text += ("silver:\n  - {table: accounts, source: pg.public.accounts}\n"
             "  - {table: events, source: pg.public.events}\n")
    config.write_text(with_azure_storage(text, azure_root))
    with psycopg.connect(pg_db, autocommit=True) as conn:
        conn.execute(SETUP)
        work = Workload(conn, seed=20261127)
        for step in range(2):
            work.round(80)
            if step:
                conn.execute("DELETE FROM events WHERE id IN (SELECT id FROM events LIMIT 3)")
            assert main(["-q", "capture", "-c", str(config), "--until-idle"]) == 0
            assert main(["-q", "silver", "-c", str(config), "--once"]) == 0
        conn.execute("SET TIME ZONE 'UTC'")
        expected = {
            "accounts": [tuple(_value(v) for v in r) for r in conn.execute(
                f"SELECT {', '.join(ACCOUNT_COLS)} FROM accounts ORDER BY id").fetchall()],
            "events": [tuple(_value(v) for v in r) for r in conn.execute(
                f"SELECT {', '.join(EVENT_COLS)} FROM events ORDER BY id").fetchall()],
        }
    captured = capsys.readouterr()
    for table, cols in {"accounts": ACCOUNT_COLS, "events": EVENT_COLS}.items():
        got = _silver(azure_server, azure_root, table, cols)
        assert len(got) == len(expected[table]) > 0, table
        diffs = [(g[0], n, gv, ev) for g, e in zip(got, expected[table], strict=True)
                 for n, gv, ev in zip(cols, g, e, strict=True) if not _same(gv, ev)]
        assert diffs == [], f"{table}: {diffs[:10]}"
    objects = _objects(azure_server, azure_root)
    assert any(o.endswith("/bronze/_cdc/pg/status.json") for o in objects), objects
    assert not any("/lease/" in o for o in objects), objects  # released at the end

    assert main(["status", "-c", str(config), "--json"]) == 0
    status_out = capsys.readouterr()
    status = json.loads(status_out.out)
    (source,) = status["sources"]
    assert status["root"] == azure_root
    assert source["state"] == "stopped" and source["snapshot_completed"] and source["last_error"] is None
    assert source["heartbeat_at"] is not None  # read from the status file on Azure
    key = azure_server.account_key
    for out in (captured, status_out):
        assert key not in out.out and key not in out.err
    verify_finds_silver_equal_then_a_deleted_row(config, f"{azure_root}/silver/events",
                                                 azure_server.storage_options(), key, capsys)


def test_a_wrong_account_key_fails_the_capture_without_printing_it(pg_db, tmp_path, azure_server, azure_root, capsys,
                                                                   monkeypatch):
    set_azure_vars(azure_server, monkeypatch)
    wrong = base64.b64encode(b"a wrong key, never printed, 32 b").decode()
    monkeypatch.setenv("CDC_TEST_AZURE_KEY", wrong)
    config = tmp_path / "pipeline.yaml"
    config.write_text(with_azure_storage(pipeline_text("lake", pg_db), azure_root))
    assert main(["-v", "capture", "-c", str(config), "--until-idle"]) == 1
    captured = capsys.readouterr()
    assert wrong not in captured.out + captured.err
    assert "Traceback" not in captured.err, captured.err
    assert _objects(azure_server, azure_root) == []
    assert main(["status", "-c", str(config)]) == 1
    captured = capsys.readouterr()
    assert wrong not in captured.out + captured.err
    assert captured.err.startswith("error: ") and "privileges" in captured.err and "Traceback" not in captured.err, \
        captured.err


@pytest.mark.classic_spark  # the classic half of scripts/test.sh runs it; the Sail half leaves it out
@pytest.mark.parametrize("engine", ["spark"], indirect=True)
def test_classic_spark_silver_on_azure_equals_the_source(pg_db, tmp_path, azure_server, spark, monkeypatch):
    """Classic Spark + Delta reads bronze and writes silver on Azurite through Hadoop's ABFS
    connector over the Blob endpoint (`hadoop_abfs_conf`), here set on the test session's running
    context; the root names the account, as Hadoop needs (delta-rs and the lease take it too)."""
    for key, value in azure_server.storage_options().items():
        monkeypatch.setenv(key, value)
    root = (f"abfs://{azure_server.container}@{azure_server.account}.dfs.core.windows.net/"
            f"classic-{os.getpid()}-{time.monotonic_ns()}")
    conf = {k.removeprefix("spark.hadoop."): v
            for k, v in hadoop_abfs_conf(root, azure_server.storage_options()).items()}
    parts = dict(p.split("=", 1) for p in pg_db.split())
    text = pipeline_text(root, pg_db, **{"slot.name": f"c_{parts['dbname'][-20:]}", "skipped.operations": "none"},
                         capture={"commit_max_records": 300})
    text += "silver:\n  - {table: accounts, source: pg.public.accounts}\n"
    cfg = parse_pipeline(text, env={})
    try:
        for key, value in conf.items():
            spark.conf.set(key, value)
        with psycopg.connect(pg_db, autocommit=True) as conn:
            conn.execute(SETUP)
            work = Workload(conn, seed=20261129)
            work.round(60)
            run_capture(cfg, until_idle=True)
            result = run_silver(root=root, engine=cfg.engine, tables=cfg.silver, options=cfg.silver_options,
                                sources={"pg": "pg"}, once=True, spark=spark)
            assert result.ok, [t.error for t in result.errors]
            conn.execute("SET TIME ZONE 'UTC'")
            expected = [tuple(_value(v) for v in r) for r in conn.execute(
                f"SELECT {', '.join(ACCOUNT_COLS)} FROM accounts ORDER BY id").fetchall()]
    finally:
        for key in conf:
            spark.conf.unset(key)
    got = _silver(azure_server, root, "accounts", ACCOUNT_COLS)
    assert len(got) == len(expected) > 0
    diffs = [(g[0], n, gv, ev) for g, e in zip(got, expected, strict=True)
             for n, gv, ev in zip(ACCOUNT_COLS, g, e, strict=True) if not _same(gv, ev)]
    assert diffs == [], diffs[:10]
