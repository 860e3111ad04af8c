"""A ``gs://`` lakehouse whose service account is given twice, as key content and as a key file
path (in the pipeline file and the environment, or both in the file), is refused by ``validate``
with exit 2, naming the file, line and key, never the key; delta-rs itself (the oracle, against
the tests' GCS server) refuses the same combination only when it first touches the lakehouse."""

from __future__ import annotations

import json

import pyarrow as pa
import pytest
from deltalake import write_deltalake

from pipelines.cli import EXIT_CONFIG, main
from pipelines.local_gcs import LocalGCS
from tests.support.gcs_pipeline import private_key
from tests.support.pipeline_yaml import pipeline_text

DSN = "host=127.0.0.1 port=5432 dbname=d user=u"


def _config(tmp_path, options: dict[str, str]) -> str:
    text = pipeline_text("lake", DSN)
    head, _lakehouse, body = text.split("\n", 2)
    lines = "".join(f'    {k}: "{v}"\n' for k, v in options.items())
    path = tmp_path / "pipeline.yaml"
    path.write_text(f'{head}\nlakehouse:\n  root: "gs://lakehouse/t"\n  storage_options:\n{lines}{body}')
    return str(path)


def _clear_google_env(monkeypatch: pytest.MonkeyPatch, gcs_server: LocalGCS) -> None:
    for name in ("GOOGLE_SERVICE_ACCOUNT", "GOOGLE_SERVICE_ACCOUNT_PATH", "GOOGLE_SERVICE_ACCOUNT_KEY",
                 "GOOGLE_BASE_URL", "GOOGLE_ALLOW_HTTP"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("CDC_TEST_GCS_KEY", gcs_server.service_account_key)
    monkeypatch.setenv("CDC_TEST_GCS_URL", gcs_server.endpoint)


def _options() -> dict[str, str]:
    return {"GOOGLE_SERVICE_ACCOUNT_KEY": "${CDC_TEST_GCS_KEY}", "GOOGLE_BASE_URL": "${CDC_TEST_GCS_URL}",
            "GOOGLE_ALLOW_HTTP": "true"}


def test_a_key_in_the_file_and_a_key_file_in_the_environment_is_refused_at_validate(tmp_path, gcs_server, capsys,
                                                                                    monkeypatch):
    _clear_google_env(monkeypatch, gcs_server)
    config = _config(tmp_path, _options())
    assert main(["validate", "-c", config]) == 0, capsys.readouterr().err  # given once: valid
    capsys.readouterr()
    monkeypatch.setenv("GOOGLE_SERVICE_ACCOUNT", str(gcs_server.key_file))
    assert main(["validate", "-c", config]) == EXIT_CONFIG
    err = capsys.readouterr().err
    assert f"{config}:5: lakehouse.storage_options.GOOGLE_SERVICE_ACCOUNT_KEY: the GCS service account is given " \
           "twice" in err, err
    assert "environment variable GOOGLE_SERVICE_ACCOUNT" in err, err
    key = private_key(gcs_server.service_account_key)
    assert key not in err and "PRIVATE KEY" not in err and str(gcs_server.key_file) not in err, err
    assert "Traceback" not in err

    # the oracle: delta-rs, given the same, refuses it when it first writes
    options = {"GOOGLE_SERVICE_ACCOUNT_KEY": gcs_server.service_account_key, "GOOGLE_BASE_URL": gcs_server.endpoint,
               "GOOGLE_ALLOW_HTTP": "true"}
    with pytest.raises(OSError, match="One of service account path or service account key may be provided"):
        write_deltalake(f"gs://{gcs_server.bucket}/{tmp_path.name}-twice", pa.table({"x": [1]}),
                        storage_options=options)


def test_a_key_and_a_key_file_both_in_the_file_are_refused_at_validate(tmp_path, gcs_server, capsys, monkeypatch):
    _clear_google_env(monkeypatch, gcs_server)
    config = _config(tmp_path, {**_options(), "service_account_path": str(gcs_server.key_file)})
    assert main(["validate", "-c", config]) == EXIT_CONFIG
    err = capsys.readouterr().err
    assert "lakehouse.storage_options.GOOGLE_SERVICE_ACCOUNT_KEY: the GCS service account is given twice" in err, err
    assert "lakehouse.storage_options.service_account_path" in err, err
    assert json.loads(gcs_server.service_account_key)["private_key_id"] not in err
    assert private_key(gcs_server.service_account_key) not in err
