"""obstore stores opened with delta-rs's ``storage_options``, for requests delta-rs does not offer.

delta-rs's file system writes every file as a multipart upload (three requests however small
the file); the bronze writer puts a small data file in one request through obstore instead
(`bronze.data_files`), and the writer lease creates its files with obstore's conditional put.
Both take the lakehouse's ``storage_options`` as delta-rs does: `obstore_options` translates
them, `open_obstore` opens a store on a folder's URL with them.

obstore is optional (the ``objectstore`` extra): without it `open_obstore` raises `ImportError`.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from typing import Any, cast

__all__ = ["obstore_options", "open_obstore"]

log = logging.getLogger(__name__)

_CLIENT_KEYS = frozenset({
    "allow_http", "allow_invalid_certificates", "connect_timeout", "default_content_type", "http1_only",
    "http2_keep_alive_interval", "http2_keep_alive_timeout", "http2_keep_alive_while_idle", "http2_only",
    "pool_idle_timeout", "pool_max_idle_per_host", "proxy_url", "proxy_ca_certificate", "proxy_excludes",
    "timeout", "user_agent"})
"""object_store's HTTP client settings: obstore takes them apart from the store's own keys."""


def obstore_options(storage_options: Mapping[str, str]) -> tuple[dict[str, str], dict[str, str]]:
    """delta-rs ``storage_options`` as obstore's store config and client options: keys lower-cased
    (obstore aborts the process on an upper-case ``AWS_...`` key), client settings apart (also
    when spelled with delta-rs's ``AWS_`` prefix, e.g. ``AWS_ALLOW_HTTP``)."""
    config: dict[str, str] = {}
    client: dict[str, str] = {}
    for key, value in storage_options.items():
        name = key.lower()
        bare = name.removeprefix("aws_").removeprefix("azure_").removeprefix("google_")
        if bare in _CLIENT_KEYS:
            client[bare] = value
        else:
            config[name] = value
    return config, client


def open_obstore(url: str, storage_options: Mapping[str, str] | None) -> Any:
    """An obstore store rooted at ``url`` (``s3://``, ``az://``, ``gs://``...) with the lakehouse's
    ``storage_options``. Options obstore does not know (delta-rs's own, e.g.
    ``AWS_S3_LOCKING_PROVIDER``) are left out; any other refusal is raised as obstore raised it.

    Raises:
        ImportError: obstore is not installed.
    """
    from obstore.store import from_url

    options, client = obstore_options(storage_options or {})
    while True:
        try:
            return from_url(url, config=cast(Any, options), client_options=cast(Any, client) or None)
        except Exception as exc:
            unknown = re.search(r"Configuration key: '([^']+)' is not valid", str(exc))
            keys = [k for k in options if unknown and k.lower() == unknown[1].lower()]
            if not keys:
                raise
            log.debug("storage option %s is not used by obstore", keys[0])
            del options[keys[0]]
