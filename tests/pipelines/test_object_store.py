"""An S3 lakehouse root from the command line: settings that would make concurrent commits unsafe
are refused before anything is written; credentials given as ``${VAR}`` storage options reach
every part of the capture and ``status`` and never appear in their output."""

from __future__ import annotations

import json
from typing import Any, cast

import obstore
import psycopg
import pytest
from obstore.store import S3Store

from pipelines.cli import main
from pipelines.local_s3 import LocalS3
from pipelines.object_store import export_for_sail, hadoop_s3a_conf
from tests.support.pipeline_yaml import pipeline_text
from tests.support.s3_pipeline import S3_VARS, set_s3_vars, with_storage

pytestmark = [pytest.mark.integration]

def _objects(server: LocalS3, root: str) -> list[str]:
    store = S3Store(server.bucket, config=cast(Any, {k.lower(): v for k, v in server.storage_options().items()}))
    prefix = root.removeprefix(f"s3://{server.bucket}/")
    return [o["path"] for batch in obstore.list(store, prefix=prefix) for o in batch]


OFFLINE_DSN = "host=127.0.0.1 port=1 dbname=shop user=postgres"


@pytest.mark.parametrize(("key", "value", "says"), [
    ("conditional_put", "disabled", "turns S3 conditional writes off"),
    ("AWS_S3_LOCKING_PROVIDER", "dynamodb", "locking provider is not supported"),
    ("AWS_S3_ALLOW_UNSAFE_RENAME", "true", "asks for unsafe commits"),
])
def test_settings_that_allow_unsafe_concurrent_commits_are_refused(tmp_path, capsys, monkeypatch, key, value, says):
    monkeypatch.setenv("CDC_TEST_S3_SECRET", "s3cr3t-value")
    monkeypatch.setenv("CDC_TEST_S3_KEY", "k")
    monkeypatch.setenv("CDC_TEST_S3_ENDPOINT", "http://127.0.0.1:1")
    config = tmp_path / "pipeline.yaml"
    text = with_storage(pipeline_text("lake", OFFLINE_DSN), "s3://bucket/lake", **{key: value})
    config.write_text(text)
    line = next(i for i, t in enumerate(text.splitlines(), 1) if t.strip().startswith(f"{key}:"))
    for command in (["validate"], ["capture", "--until-idle"]):
        assert main([*command, "-c", str(config)]) == 2
        err = capsys.readouterr().err
        assert f"{config}:{line}" in err and f"lakehouse.storage_options.{key}" in err and says in err, err
        assert "Traceback" not in err and "s3cr3t-value" not in err


def test_an_unsafe_setting_from_the_environment_names_the_variable(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("AWS_CONDITIONAL_PUT", "disabled")
    config = tmp_path / "pipeline.yaml"
    config.write_text(pipeline_text("s3://bucket/lake", OFFLINE_DSN))
    assert main(["validate", "-c", str(config)]) == 2
    err = capsys.readouterr().err
    assert "environment variable AWS_CONDITIONAL_PUT: turns S3 conditional writes off" in err, err


def test_safe_settings_and_local_roots_are_accepted(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("AWS_S3_ALLOW_UNSAFE_RENAME", "true")  # only S3 roots care
    local = tmp_path / "local.yaml"
    local.write_text(pipeline_text("lake", OFFLINE_DSN))
    assert main(["validate", "-c", str(local)]) == 0
    monkeypatch.delenv("AWS_S3_ALLOW_UNSAFE_RENAME")
    for var in S3_VARS:
        monkeypatch.setenv(var, "x")
    s3 = tmp_path / "s3.yaml"
    s3.write_text(with_storage(pipeline_text("lake", OFFLINE_DSN), "s3://bucket/lake", conditional_put="etag"))
    assert main(["validate", "-c", str(s3)]) == 0, capsys.readouterr().err


def test_export_for_sail_sets_the_aws_options_not_yet_set():
    environ = {"AWS_REGION": "eu-west-1"}
    names = export_for_sail({"aws_endpoint_url": "http://h:1", "AWS_REGION": "us-east-1", "timeout": "30s"}, environ)
    assert names == ["AWS_ENDPOINT_URL"]
    assert environ == {"AWS_REGION": "eu-west-1", "AWS_ENDPOINT_URL": "http://h:1"}


@pytest.mark.postgres
def test_capture_and_status_on_s3_with_credentials_in_storage_options(pg_db, tmp_path, s3_server, s3_root, capsys,
                                                                      monkeypatch):
    set_s3_vars(s3_server, monkeypatch)
    with psycopg.connect(pg_db, autocommit=True) as conn:
        conn.execute("CREATE TABLE items (id int PRIMARY KEY, name text)")
        conn.execute("INSERT INTO items SELECT g, 'item ' || g FROM generate_series(1, 40) g")
    config = tmp_path / "pipeline.yaml"
    config.write_text(with_storage(pipeline_text("lake", pg_db, **{"provide.transaction.metadata": "false"}),
                                    s3_root))
    assert main(["-v", "capture", "-c", str(config), "--until-idle"]) == 0
    with psycopg.connect(pg_db, autocommit=True) as conn:
        conn.execute("DELETE FROM items WHERE id <= 5")
    assert main(["-v", "capture", "-c", str(config), "--until-idle"]) == 0
    captured = capsys.readouterr()
    objects = _objects(s3_server, s3_root)
    assert any(o.endswith("/bronze/_cdc/pg/status.json") for o in objects), objects
    assert any(o.endswith(".parquet") and "/bronze/pg.public.items/" in o for o in objects), objects
    assert not any("/lease/" in o for o in objects), objects  # released at the end

    assert main(["status", "-c", str(config), "--json"]) == 0
    status_out = capsys.readouterr()
    status = json.loads(status_out.out)
    (source,) = status["sources"]
    assert status["root"] == s3_root
    assert source["state"] == "stopped" and source["snapshot_completed"] and source["last_error"] is None
    assert source["heartbeat_at"] is not None  # read from the status file on S3
    (table,) = [t for t in source["tables"] if t["topic"] == "pg.public.items"]
    assert table["rows"] == 40 + 5 + 5  # snapshot, deletes and their tombstones
    assert main(["status", "-c", str(config)]) == 0
    text = capsys.readouterr()
    assert f"lakehouse root: {s3_root}" in text.out
    secret = s3_server.secret_access_key
    for out in (captured, status_out, text):
        assert secret not in out.out and secret not in out.err


@pytest.mark.postgres
def test_a_wrong_secret_fails_the_capture_without_printing_it(pg_db, tmp_path, s3_server, s3_root, capsys,
                                                              monkeypatch):
    set_s3_vars(s3_server, monkeypatch)
    monkeypatch.setenv("CDC_TEST_S3_SECRET", "wrong-secret-never-printed")
    config = tmp_path / "pipeline.yaml"
    config.write_text(with_storage(pipeline_text("lake", pg_db), s3_root))
    assert main(["-v", "capture", "-c", str(config), "--until-idle"]) == 1
    captured = capsys.readouterr()
    assert "wrong-secret-never-printed" not in captured.out + captured.err
    assert "Traceback" not in captured.err, captured.err
    assert _objects(s3_server, s3_root) == []
    assert main(["status", "-c", str(config)]) == 1
    captured = capsys.readouterr()
    assert "wrong-secret-never-printed" not in captured.out + captured.err
    assert captured.err.startswith("error: ") and "privileges" in captured.err and "Traceback" not in captured.err, \
        captured.err


def test_hadoop_s3a_conf_gives_classic_spark_the_storage_options():
    conf = hadoop_s3a_conf({"AWS_ENDPOINT_URL": "http://s3.local:9000", "aws_region": "eu-west-1",
                            "AWS_ACCESS_KEY_ID": "k", "AWS_SECRET_ACCESS_KEY": "s", "AWS_ALLOW_HTTP": "true",
                            "timeout": "30s"})
    assert conf == {
        "spark.hadoop.fs.s3.impl": "org.apache.hadoop.fs.s3a.S3AFileSystem",
        "spark.hadoop.fs.s3a.endpoint": "http://s3.local:9000",
        "spark.hadoop.fs.s3a.endpoint.region": "eu-west-1",
        "spark.hadoop.fs.s3a.access.key": "k",
        "spark.hadoop.fs.s3a.secret.key": "s",
        "spark.hadoop.fs.s3a.connection.ssl.enabled": "false",
        "spark.hadoop.fs.s3a.path.style.access": "true",
    }
    token = hadoop_s3a_conf({"AWS_SESSION_TOKEN": "t"})
    assert token["spark.hadoop.fs.s3a.aws.credentials.provider"].endswith("TemporaryAWSCredentialsProvider")
    assert "spark.hadoop.fs.s3a.path.style.access" not in token  # AWS itself: S3A's defaults
