"""Pipeline YAML for a lakehouse on the tests' S3 server, its credentials as ``${VAR}`` storage options."""

from __future__ import annotations

import pytest

from pipelines.local_s3 import LocalS3

S3_VARS = {"CDC_TEST_S3_ENDPOINT": "AWS_ENDPOINT_URL", "CDC_TEST_S3_KEY": "AWS_ACCESS_KEY_ID",
           "CDC_TEST_S3_SECRET": "AWS_SECRET_ACCESS_KEY"}
"""The variables the storage options refer to -> the option each one fills."""


def with_storage(text: str, root: str, **extra: str) -> str:
    """Pipeline ``text`` (its lakehouse on the second line, as one line) with its lakehouse on
    ``root``, the endpoint and credentials as ``${VAR}`` references (`S3_VARS`), plus ``extra``."""
    options = {**{key: f"${{{var}}}" for var, key in S3_VARS.items()}, "AWS_REGION": "us-east-1",
               "AWS_ALLOW_HTTP": "true", **extra}
    lines = "".join(f'    {k}: "{v}"\n' for k, v in options.items())
    head, lakehouse, body = text.split("\n", 2)
    assert lakehouse.startswith("lakehouse:"), text
    return f'{head}\nlakehouse:\n  root: "{root}"\n  storage_options:\n{lines}{body}'


def set_s3_vars(server: LocalS3, monkeypatch: pytest.MonkeyPatch) -> None:
    """Set `S3_VARS` to reach ``server``; unset the AWS_* variables (so only the file's options count)."""
    options = server.storage_options()
    for var, key in S3_VARS.items():
        monkeypatch.setenv(var, options[key])
    for key in options:  # set first, so that the end of the test also removes what the code under test exports
        monkeypatch.setenv(key, "")
        monkeypatch.delenv(key)
