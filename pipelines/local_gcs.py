"""A private Google Cloud Storage server for tests, the benchmarks and trying a ``gs://`` root.

`scripts/setup.sh` builds ``gcs-server/`` (a Go program) into ``.cache/gcs-server``: the storage
of fake-gcs-server (pinned in ``gcs-server/go.mod``), in memory, behind the part of GCS's XML API
that object_store (delta-rs, obstore, Sail) speaks, which fake-gcs-server does not serve for
writes by itself. Uploads keep GCS's generation preconditions (``x-goog-if-generation-match``,
which object_store sends for a create-if-absent Delta commit and for a compare-and-swap),
checked by fake-gcs-server's storage under its lock. `LocalGCS` starts it on a free port of
127.0.0.1 with one bucket and a service account of its own: the server writes the account's key
file (and the key file of an account it does not know) and refuses a request not signed by the
accepted key, as GCS does. `stop` ends the process and its group. The server counts requests
by type, which the object-store benchmark reads.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import orjson

from cdc_sources.spi import CdcError
from pipelines.local_postgres import free_port
from pipelines.server_process import start_server_process, stop_server_process, wait_until_ready

_CHECKOUT = Path(__file__).resolve().parents[1]

FAKE_GCS_ENV = "CDC_FAKE_GCS"
"""Names a ``cdc-fake-gcs`` executable to use instead of the checkout's ``.cache/gcs-server``."""


class LocalGCSError(CdcError):
    """The local GCS server could not be started."""


def fake_gcs_binary() -> Path | None:
    """``cdc-fake-gcs``: ``$CDC_FAKE_GCS``, else the checkout's ``.cache/gcs-server``, else on PATH."""
    override = os.environ.get(FAKE_GCS_ENV)
    if override:
        return Path(override)
    cached = _CHECKOUT / ".cache" / "gcs-server" / "cdc-fake-gcs"
    if cached.is_file():
        return cached
    found = shutil.which("cdc-fake-gcs")
    return Path(found) if found else None


@dataclass
class LocalGCS:
    """A local GCS server with one bucket and one service account, owned by the caller (see module doc).

    Attributes:
        base: the server's folder (key files, log).
        bucket: the bucket created at start.
    """

    base: Path
    bucket: str = "lakehouse"
    port: int = 0
    _proc: subprocess.Popen[bytes] | None = field(default=None, repr=False)

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def log_path(self) -> Path:
        return self.base / "fake-gcs.log"

    @property
    def key_file(self) -> Path:
        """The service-account key file the server accepts."""
        return self.base / "credentials" / "service-account.json"

    @property
    def unknown_key_file(self) -> Path:
        """A well-formed service-account key file the server does not accept."""
        return self.base / "credentials" / "unknown-service-account.json"

    @property
    def service_account_key(self) -> str:
        """The accepted key file's content (JSON, holds the private key)."""
        return self.key_file.read_text()

    def uri(self, prefix: str) -> str:
        """``gs://<bucket>/<prefix>``."""
        return f"gs://{self.bucket}/{prefix.strip('/')}"

    def storage_options(self) -> dict[str, str]:
        """delta-rs / obstore options (object_store's ``GOOGLE_*`` names) reaching this server as
        its service account."""
        return {"GOOGLE_SERVICE_ACCOUNT_KEY": self.service_account_key, "GOOGLE_BASE_URL": self.endpoint,
                "GOOGLE_ALLOW_HTTP": "true"}

    def start(self, timeout: float = 60.0) -> LocalGCS:
        binary = fake_gcs_binary()
        if binary is None:
            raise LocalGCSError("the local GCS server `cdc-fake-gcs` was not found: run scripts/setup.sh, which "
                                "builds it from gcs-server/ with Go into .cache/gcs-server")
        self.base.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        args = [str(binary), "-host", "127.0.0.1", "-port", str(self.port), "-bucket", self.bucket,
                "-credentials", str(self.key_file.parent)]
        self._proc = start_server_process(args, self.log_path, cwd=self.base)
        try:
            self._wait_ready(timeout)
        except BaseException:
            self.stop()
            raise
        return self

    def _wait_ready(self, timeout: float) -> None:
        import obstore
        from obstore.store import GCSStore

        def probe() -> None:  # fails until it listens and has written its key files
            store = GCSStore(self.bucket, config=cast(Any, {"google_service_account_key": self.service_account_key,
                                                            "google_base_url": self.endpoint}),
                             client_options={"allow_http": True})
            obstore.put(store, ".cdc-bucket-ready", b"")
            obstore.delete(store, ".cdc-bucket-ready")

        assert self._proc is not None
        wait_until_ready(self._proc, probe, name="cdc-fake-gcs", what="GCS", log_path=self.log_path, timeout=timeout,
                         error=LocalGCSError, interval=0.2)

    def request_counts(self) -> dict[str, int]:
        """Requests served so far, by type (``PUT``, ``GET``, ``HEAD``, ``LIST``, ``DELETE``, ``POST``,
        ``COPY``), as the server counts them."""
        try:
            body = urllib.request.urlopen(f"{self.endpoint}/_cdc/requests", timeout=10).read()
        except urllib.error.URLError as exc:
            raise LocalGCSError(f"cannot read the local GCS server's request counts: {exc.reason}") from None
        return {str(k): int(v) for k, v in orjson.loads(body).items()}

    def stop(self) -> None:
        proc, self._proc = self._proc, None
        stop_server_process(proc)
