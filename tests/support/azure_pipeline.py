"""Pipeline YAML for a lakehouse on the tests' Azure server, its account as ``${VAR}`` storage options."""

from __future__ import annotations

import pytest

from pipelines.local_azure import LocalAzure

AZURE_VARS = {"CDC_TEST_AZURE_ACCOUNT": "AZURE_STORAGE_ACCOUNT_NAME", "CDC_TEST_AZURE_KEY": "AZURE_STORAGE_ACCOUNT_KEY",
              "CDC_TEST_AZURE_ENDPOINT": "AZURE_STORAGE_ENDPOINT"}
"""The variables the storage options refer to -> the option each one fills."""


def with_azure_storage(text: str, root: str) -> str:
    """Pipeline ``text`` (its lakehouse on the second line, as one line) with its lakehouse on
    ``root``, the account, key and endpoint as ``${VAR}`` references (`AZURE_VARS`)."""
    options = {**{key: f"${{{var}}}" for var, key in AZURE_VARS.items()}, "AZURE_ALLOW_HTTP": "true"}
    lines = "".join(f'    {k}: "{v}"\n' for k, v in options.items())
    head, lakehouse, body = text.split("\n", 2)
    assert lakehouse.startswith("lakehouse:"), text
    return f'{head}\nlakehouse:\n  root: "{root}"\n  storage_options:\n{lines}{body}'


def set_azure_vars(server: LocalAzure, monkeypatch: pytest.MonkeyPatch) -> None:
    """Set `AZURE_VARS` to reach ``server``; unset the AZURE_* variables (so only the file's options
    count)."""
    options = server.storage_options()
    for var, key in AZURE_VARS.items():
        monkeypatch.setenv(var, options[key])
    for key in options:  # set first, so that the end of the test also removes what the code under test exports
        monkeypatch.setenv(key, "")
        monkeypatch.delenv(key)
