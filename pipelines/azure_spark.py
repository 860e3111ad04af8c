"""Classic Spark on an Azure lakehouse root: Hadoop's ABFS connector given the storage options
delta-rs uses.

delta-rs, obstore and Sail accept ``az://container/path``, ``abfs[s]://container/path`` and
``abfs[s]://container@account.dfs.core.windows.net/path``; Hadoop's ABFS connector only the last
(the account is part of the URI). So classic Spark needs a root of that form; `hadoop_abfs_conf`
gives ABFS the account key, and for a custom endpoint (Azurite, Azure Stack, a private proxy) the
endpoint as ABFS's ``fs.azure.abfs.endpoint`` (path-style addressing, the account as the first
path segment) over the Blob service (Hadoop 3.5's ABFS speaks the Blob endpoint of accounts
without hierarchical namespace; an emulator has no ``dfs`` endpoint), and with ABFS's client
metrics off (they are sent from a shutdown hook, which would hold the JVM once the endpoint is gone).
"""

from __future__ import annotations

from collections.abc import Mapping
from urllib.parse import urlsplit

from cdc_sources.spi import ConfigProblem

AZURE_SCHEMES = ("az://", "azure://", "abfs://", "abfss://", "adl://")

_ACCOUNT = ("azure_storage_account_name", "account_name")
_KEY = ("azure_storage_account_key", "azure_storage_access_key", "azure_storage_master_key", "account_key",
        "access_key", "master_key")
_ENDPOINT = ("azure_storage_endpoint", "azure_endpoint", "endpoint")
_EMULATOR = ("azure_storage_use_emulator", "use_emulator")
_EMULATOR_ENDPOINT = "http://127.0.0.1:10000"
_EMULATOR_ACCOUNT = "devstoreaccount1"


def is_azure(root: str) -> bool:
    """Whether a lakehouse root is on Azure Blob Storage / ADLS Gen2."""
    return root.lower().startswith(AZURE_SCHEMES)


def _get(options: Mapping[str, str], names: tuple[str, ...]) -> str | None:
    for key, value in options.items():
        if key.lower() in names:
            return value
    return None


def hadoop_account(root: str) -> str | None:
    """The storage account a Hadoop ABFS URI names (``abfs[s]://container@<account>.dfs...``), or None."""
    parts = urlsplit(root)
    if parts.scheme.lower() not in ("abfs", "abfss") or "@" not in parts.netloc:
        return None
    return parts.netloc.split("@", 1)[1].split(".", 1)[0] or None


def classic_root_problem(root: str) -> ConfigProblem | None:
    """Why classic Spark cannot use an Azure ``root``: Hadoop needs the account in the URI."""
    if not is_azure(root) or hadoop_account(root) is not None:
        return None
    parts = urlsplit(root)
    container = parts.netloc.split("@", 1)[0] or "container"
    return ConfigProblem("lakehouse.root", f"classic Spark reads Azure through Hadoop's ABFS connector, which needs "
                                           f"the storage account in the URI: write the root as "
                                           f"abfss://{container}@<account>.dfs.core.windows.net{parts.path}")


def hadoop_abfs_conf(root: str, options: Mapping[str, str]) -> dict[str, str]:
    """Spark settings (``spark.hadoop.*``) giving Hadoop's ABFS connector what ``options``
    (delta-rs's ``AZURE_*`` keys) give delta-rs, for ``root`` (see module doc). Keys the options
    leave out are left to ABFS's defaults."""
    account = hadoop_account(root) or _get(options, _ACCOUNT)
    emulator = (_get(options, _EMULATOR) or "").lower() == "true"
    if account is None and emulator:
        account = _EMULATOR_ACCOUNT
    conf: dict[str, str] = {}
    key = _get(options, _KEY)
    if account is not None and key is not None:
        conf[f"fs.azure.account.key.{account}.dfs.core.windows.net"] = key
    endpoint = _get(options, _ENDPOINT) or (_EMULATOR_ENDPOINT if emulator else None)
    if endpoint is not None:
        parts = urlsplit(endpoint)
        conf["fs.azure.abfs.endpoint"] = parts.netloc
        if parts.scheme == "http":
            conf["fs.azure.always.use.https"] = "false"
        conf["fs.azure.account.hns.enabled"] = "false"
        conf["fs.azure.fns.account.service.type"] = "BLOB"
        conf["fs.azure.networking.library"] = "JDK_HTTP_URL_CONNECTION"
        conf["fs.azure.ssl.channel.mode"] = "Default_JSSE"
        # ABFS sends its client metrics to the account from a JVM shutdown hook, retrying with
        # backoff: against an emulator or proxy that is gone (or never took them) the JVM then
        # lingers for many minutes after the job ended
        conf["fs.azure.metrics.collection.enabled"] = "false"
    return {f"spark.hadoop.{k}": v for k, v in conf.items()}
