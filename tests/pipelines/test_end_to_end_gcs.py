"""A lakehouse on Google Cloud Storage (the tests' local GCS server), from the command line: a
real PostgreSQL workload captured into bronze there, silver built by the embedded Sail engine
there, in increments, every silver table equal to its source table; `status` reads the capture's
status back; a service-account key the server does not accept ends the capture with one line and
no traceback, the key never printed.

The service-account key and the server's URL are in the pipeline file only, as ``${VAR}``
storage options: capture, the lease, the status file and Sail (through `export_for_sail`) all
get them there.
"""

from __future__ import annotations

import json
import os
from typing import Any, cast

import obstore
import psycopg
import pytest
from deltalake import DeltaTable
from obstore.store import GCSStore

from pipelines.capture import run_capture
from pipelines.cli import main
from pipelines.config import parse_pipeline
from pipelines.gcs_spark import hadoop_gcs_conf
from pipelines.local_gcs import LocalGCS
from pipelines.silver_runner import run_silver
from tests.pipelines.test_end_to_end import ACCOUNT_COLS, EVENT_COLS, SETUP, Workload, _same
from tests.pipelines.test_end_to_end_s3 import _value
from tests.support.gcs_pipeline import GCS_VARS, private_key, set_gcs_vars, with_gcs_storage
from tests.support.pipeline_yaml import pipeline_text

pytestmark = [pytest.mark.integration, pytest.mark.postgres, pytest.mark.spark]


def _silver(server: LocalGCS, root: str, table: str, cols: list[str]) -> list[tuple[Any, ...]]:
    rows = DeltaTable(f"{root}/silver/{table}", storage_options=server.storage_options()).to_pyarrow_table(
        columns=cols).to_pylist()
    return sorted((tuple(_value(r[c]) for c in cols) for r in rows), key=lambda r: r[0])


def _objects(server: LocalGCS, root: str) -> list[str]:
    store = GCSStore(server.bucket, config=cast(Any, {
        "google_service_account_key": server.service_account_key, "google_base_url": server.endpoint}),
        client_options={"allow_http": True})
    prefix = root.removeprefix(f"gs://{server.bucket}/")
    return [str(m["path"]) for batch in obstore.list(store, prefix=prefix + "/") for m in batch]


def test_capture_sail_silver_and_status_on_gcs(pg_db, tmp_path, gcs_server, gcs_root, capsys, monkeypatch):
    set_gcs_vars(gcs_server, monkeypatch)
    assert set(GCS_VARS) <= set(os.environ)
    config = tmp_path / "pipeline.yaml"
    parts = dict(p.split("=", 1) for p in pg_db.split())
    text = pipeline_text("lake", pg_db, **{"slot.name": f"gs_{parts['dbname'][-20:]}", "skipped.operations": "none"},
                         capture={"commit_max_records": 300})
    text += ("silver:\n  - {table: accounts, source: pg.public.accounts}\n"
             "  - {table: events, source: pg.public.events}\n")
    config.write_text(with_gcs_storage(text, gcs_root))
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
        got = _silver(gcs_server, gcs_root, table, cols)
        assert len(got) == len(expected[table]) > 0, table
        diffs = [(g[0], n, gv, ev) for g, e in zip(got, expected[table], strict=True)
                 for n, gv, ev in zip(cols, g, e, strict=True) if not _same(gv, ev)]
        assert diffs == [], f"{table}: {diffs[:10]}"
    objects = _objects(gcs_server, gcs_root)
    assert any(o.endswith("/bronze/_cdc/pg/status.json") for o in objects), objects
    assert not any("/lease/" in o for o in objects), objects  # released at the end

    assert main(["status", "-c", str(config), "--json"]) == 0
    status_out = capsys.readouterr()
    status = json.loads(status_out.out)
    (source,) = status["sources"]
    assert status["root"] == gcs_root
    assert source["state"] == "stopped" and source["snapshot_completed"] and source["last_error"] is None
    assert source["heartbeat_at"] is not None  # read from the status file on GCS
    key = private_key(gcs_server.service_account_key)
    for out in (captured, status_out):
        assert key not in out.out and key not in out.err


def test_an_unknown_service_account_key_fails_the_capture_without_printing_it(pg_db, tmp_path, gcs_server, gcs_root,
                                                                             capsys, monkeypatch):
    set_gcs_vars(gcs_server, monkeypatch)
    unknown = gcs_server.unknown_key_file.read_text()
    monkeypatch.setenv("CDC_TEST_GCS_KEY", unknown)
    wrong = private_key(unknown)
    config = tmp_path / "pipeline.yaml"
    config.write_text(with_gcs_storage(pipeline_text("lake", pg_db), gcs_root))
    assert main(["-v", "capture", "-c", str(config), "--until-idle"]) == 1
    captured = capsys.readouterr()
    assert wrong not in captured.out + captured.err and "PRIVATE KEY" not in captured.out + captured.err
    assert "Traceback" not in captured.err, captured.err
    assert captured.err.startswith("error: source pg: cannot take the writer lease in gs://") and \
        captured.err.rstrip().endswith("401 Unauthorized: the request's credentials were not accepted") and \
        captured.err.count("\n") == 1, captured.err
    assert _objects(gcs_server, gcs_root) == []
    assert main(["status", "-c", str(config)]) == 1
    captured = capsys.readouterr()
    assert wrong not in captured.out + captured.err
    assert captured.err.startswith("error: ") and "lacked valid authentication credentials" in captured.err, \
        captured.err
    assert captured.err.count("\n") == 1 and "Traceback" not in captured.err, captured.err


@pytest.mark.classic_spark  # the classic half of scripts/test.sh runs it; the Sail half leaves it out
@pytest.mark.parametrize("engine", ["spark"], indirect=True)
def test_classic_spark_silver_on_gcs_equals_the_source(pg_db, tmp_path, gcs_server, gcs_root, spark, monkeypatch):
    """Classic Spark + Delta reads bronze and writes silver on the local GCS server through
    Google's Hadoop connector (`hadoop_gcs_conf`: the key file, the endpoint), here set on the
    test session's running context; the connector exchanges the service account's signed JWT for
    an access token at the server's token endpoint, as at Google's."""
    options = {"GOOGLE_SERVICE_ACCOUNT": str(gcs_server.key_file), "GOOGLE_BASE_URL": gcs_server.endpoint,
               "GOOGLE_ALLOW_HTTP": "true"}
    for key, value in options.items():
        monkeypatch.setenv(key, value)
    conf = {k.removeprefix("spark.hadoop."): v for k, v in hadoop_gcs_conf(options).items()}
    conf["fs.gs.token.server.url"] = f"{gcs_server.endpoint}/token"
    parts = dict(p.split("=", 1) for p in pg_db.split())
    text = pipeline_text(gcs_root, pg_db, **{"slot.name": f"c_{parts['dbname'][-20:]}", "skipped.operations": "none"},
                         capture={"commit_max_records": 300})
    text += "silver:\n  - {table: accounts, source: pg.public.accounts}\n"
    cfg = parse_pipeline(text, env={})
    try:
        for key, value in conf.items():
            spark.conf.set(key, value)
        with psycopg.connect(pg_db, autocommit=True) as conn:
            conn.execute(SETUP)
            work = Workload(conn, seed=20261131)
            work.round(60)
            run_capture(cfg, until_idle=True)
            result = run_silver(root=gcs_root, engine=cfg.engine, tables=cfg.silver, options=cfg.silver_options,
                                sources={"pg": "pg"}, once=True, spark=spark)
            assert result.ok, [t.error for t in result.errors]
            conn.execute("SET TIME ZONE 'UTC'")
            expected = [tuple(_value(v) for v in r) for r in conn.execute(
                f"SELECT {', '.join(ACCOUNT_COLS)} FROM accounts ORDER BY id").fetchall()]
    finally:
        for key in conf:
            spark.conf.unset(key)
    rows = DeltaTable(f"{gcs_root}/silver/accounts", storage_options=options).to_pyarrow_table(
        columns=ACCOUNT_COLS).to_pylist()  # the key file, as the environment names it (not also the key itself)
    got = sorted((tuple(_value(r[c]) for c in ACCOUNT_COLS) for r in rows), key=lambda r: r[0])
    assert len(got) == len(expected) > 0
    diffs = [(g[0], n, gv, ev) for g, e in zip(got, expected, strict=True)
             for n, gv, ev in zip(ACCOUNT_COLS, g, e, strict=True) if not _same(gv, ev)]
    assert diffs == [], diffs[:10]
