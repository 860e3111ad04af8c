"""Classic Spark on a Google Cloud Storage lakehouse root: Google's Hadoop connector given the
storage options delta-rs uses.

delta-rs, obstore and Sail read ``GOOGLE_*`` options (object_store's names); Hadoop's GCS
connector (``com.google.cloud.bigdataoss:gcs-connector``, ``gs://``) its own ``fs.gs.*``
settings. `hadoop_gcs_conf` maps a service-account key file (``GOOGLE_SERVICE_ACCOUNT``, a path:
the connector reads keys from files only) and a custom endpoint (``GOOGLE_BASE_URL``: an
emulator or a private endpoint, as ``fs.gs.storage.root.url``). Without a key file the
connector's own default applies (application default credentials, the metadata server). The
block size is given as a number: Hadoop 3.5's defaults spell ``fs.gs.block.size`` as ``64m``,
which the connector's 3.0 line (the newest with a shaded jar) cannot parse; and Parquet's
vectored reads are turned off, since that line's vectored read calls a Hadoop method that Hadoop
3.5 no longer has (``NoSuchMethodError`` on the first Parquet read). The setting is the Hadoop
configuration's, so it applies to the session's other Parquet reads too.
"""

from __future__ import annotations

from collections.abc import Mapping

GCS_SCHEMES = ("gs://",)

GCS_FILESYSTEM = "com.google.cloud.hadoop.fs.gcs.GoogleHadoopFileSystem"
GCS_ABSTRACT_FILESYSTEM = "com.google.cloud.hadoop.fs.gcs.GoogleHadoopFS"

_KEY_FILE = ("google_service_account", "service_account", "google_service_account_path", "service_account_path")
_BASE_URL = ("google_base_url", "base_url")


def is_gcs(root: str) -> bool:
    """Whether a lakehouse root is on Google Cloud Storage."""
    return root.lower().startswith(GCS_SCHEMES)


def _get(options: Mapping[str, str], names: tuple[str, ...]) -> str | None:
    for key, value in options.items():
        if key.lower() in names:
            return value
    return None


def hadoop_gcs_conf(options: Mapping[str, str]) -> dict[str, str]:
    """Spark settings (``spark.hadoop.*``) giving Hadoop's GCS connector what ``options``
    (delta-rs's ``GOOGLE_*`` keys) give delta-rs (see module doc)."""
    conf = {"fs.gs.impl": GCS_FILESYSTEM, "fs.AbstractFileSystem.gs.impl": GCS_ABSTRACT_FILESYSTEM,
            "fs.gs.block.size": str(64 * 1024 * 1024), "parquet.hadoop.vectored.io.enabled": "false"}
    key_file = _get(options, _KEY_FILE)
    if key_file is not None:
        conf["fs.gs.auth.type"] = "SERVICE_ACCOUNT_JSON_KEYFILE"
        conf["fs.gs.auth.service.account.json.keyfile"] = key_file
    base_url = _get(options, _BASE_URL)
    if base_url is not None:
        conf["fs.gs.storage.root.url"] = base_url.rstrip("/")
    return {f"spark.hadoop.{k}": v for k, v in conf.items()}
