"""Pipeline YAML for a lakehouse on the tests' GCS server, its service account as ``${VAR}`` storage options."""

from __future__ import annotations

import json

import pytest

from pipelines.local_gcs import LocalGCS

GCS_VARS = {"CDC_TEST_GCS_KEY": "GOOGLE_SERVICE_ACCOUNT_KEY", "CDC_TEST_GCS_URL": "GOOGLE_BASE_URL"}
"""The variables the storage options refer to -> the option each one fills."""


def with_gcs_storage(text: str, root: str) -> str:
    """Pipeline ``text`` (its lakehouse on the second line, as one line) with its lakehouse on
    ``root``, the service-account key and the server's URL as ``${VAR}`` references (`GCS_VARS`)."""
    options = {**{key: f"${{{var}}}" for var, key in GCS_VARS.items()}, "GOOGLE_ALLOW_HTTP": "true"}
    lines = "".join(f'    {k}: "{v}"\n' for k, v in options.items())
    head, lakehouse, body = text.split("\n", 2)
    assert lakehouse.startswith("lakehouse:"), text
    return f'{head}\nlakehouse:\n  root: "{root}"\n  storage_options:\n{lines}{body}'


def set_gcs_vars(server: LocalGCS, monkeypatch: pytest.MonkeyPatch) -> None:
    """Set `GCS_VARS` to reach ``server``; unset the GOOGLE_* variables (so only the file's options
    count)."""
    options = server.storage_options()
    for var, key in GCS_VARS.items():
        monkeypatch.setenv(var, options[key])
    for key in options:  # set first, so that the end of the test also removes what the code under test exports
        monkeypatch.setenv(key, "")
        monkeypatch.delenv(key)


def private_key(key_file_text: str) -> str:
    """The base64 body of a service-account key file's private key (what must never be printed)."""
    pem = json.loads(key_file_text)["private_key"]
    return "".join(line for line in pem.splitlines() if "-----" not in line)[40:120]
