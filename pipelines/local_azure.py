"""A private Azure Blob Storage server (Azurite) for tests, the benchmarks and trying an Azure root.

Azurite is Microsoft's Azure Storage emulator, a Node.js program; `scripts/setup.sh` installs the
version pinned in ``azurite/package-lock.json`` into ``.cache/azurite`` (``npm ci``). `LocalAzure`
starts its Blob service alone (``azurite-blob``) in its own folder on a free port of 127.0.0.1,
with one storage account whose name and key are the server's own (not the emulator's well-known
development account, so that a wrong key is really refused), creates one container, and `stop`
ends the process and its group. Azurite serves the Blob endpoint only: no ADLS Gen2 ``dfs``
endpoint (hierarchical namespace, atomic directory rename, ACLs). Its access log (one line per
request) gives the request counts the object-store benchmark prints.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import os
import re
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from cdc_sources.spi import CdcError
from pipelines.local_postgres import free_port
from pipelines.server_process import start_server_process, stop_server_process, wait_until_ready

_CHECKOUT = Path(__file__).resolve().parents[1]

AZURITE_ENV = "CDC_AZURITE"
"""Names an ``azurite-blob`` executable to use instead of the checkout's ``.cache/azurite``."""

_ACCESS_LINE = re.compile(r'"(GET|PUT|HEAD|DELETE|POST|PATCH|OPTIONS) (\S+) HTTP/[\d.]+" (\d{3})')


class LocalAzureError(CdcError):
    """The local Azure server could not be started."""


def azurite_binary() -> Path | None:
    """``azurite-blob``: ``$CDC_AZURITE``, else the checkout's ``.cache/azurite``, else on PATH."""
    override = os.environ.get(AZURITE_ENV)
    if override:
        return Path(override)
    cached = _CHECKOUT / ".cache" / "azurite" / "node_modules" / ".bin" / "azurite-blob"
    if cached.is_file():
        return cached
    found = shutil.which("azurite-blob")
    return Path(found) if found else None


def _default_key() -> str:
    return base64.b64encode(hashlib.sha256(b"cdc-lakehouse local azurite").digest()).decode()


@dataclass
class LocalAzure:
    """An Azurite Blob server with one account and one container, owned by the caller (see module doc).

    Attributes:
        base: the server's folder (data, log).
        container: the container created at start.
        account: the storage account's name; account_key: its key (base64).
    """

    base: Path
    container: str = "lakehouse"
    account: str = "cdctestaccount"
    account_key: str = field(default_factory=_default_key)
    port: int = 0
    _proc: subprocess.Popen[bytes] | None = field(default=None, repr=False)

    @property
    def endpoint(self) -> str:
        """The Blob endpoint, path style: ``http://127.0.0.1:<port>/<account>``."""
        return f"http://127.0.0.1:{self.port}/{self.account}"

    @property
    def log_path(self) -> Path:
        return self.base / "azurite.log"

    def uri(self, prefix: str) -> str:
        """``az://<container>/<prefix>``."""
        return f"az://{self.container}/{prefix.strip('/')}"

    def storage_options(self) -> dict[str, str]:
        """delta-rs / obstore options reaching this server with its account key."""
        return {"AZURE_STORAGE_ACCOUNT_NAME": self.account, "AZURE_STORAGE_ACCOUNT_KEY": self.account_key,
                "AZURE_STORAGE_ENDPOINT": self.endpoint, "AZURE_ALLOW_HTTP": "true"}

    def start(self, timeout: float = 60.0) -> LocalAzure:
        binary = azurite_binary()
        if binary is None:
            raise LocalAzureError("Azurite (`azurite-blob`) was not found: run scripts/setup.sh, which installs it "
                                  "into .cache/azurite with npm")
        self.base.mkdir(parents=True, exist_ok=True)
        data = self.base / "data"
        data.mkdir(exist_ok=True)
        self.port = free_port()
        args = [str(binary), "--blobHost", "127.0.0.1", "--blobPort", str(self.port), "--location", str(data),
                "--skipApiVersionCheck", "--disableProductStyleUrl", "--disableTelemetry"]
        env = {**os.environ, "AZURITE_ACCOUNTS": f"{self.account}:{self.account_key}"}
        self._proc = start_server_process(args, self.log_path, env=env, cwd=self.base)
        try:
            self._wait_ready(timeout)
        except BaseException:
            self.stop()
            raise
        return self

    def _wait_ready(self, timeout: float) -> None:
        import obstore
        from obstore.store import AzureStore

        def probe() -> None:
            self._create_container()
            store = AzureStore(self.container, config=cast(Any, self._obstore_config()),
                               client_options={"allow_http": True})
            obstore.put(store, ".cdc-container-ready", b"")
            obstore.delete(store, ".cdc-container-ready")

        assert self._proc is not None
        wait_until_ready(self._proc, probe, name="azurite-blob", what="Azure", log_path=self.log_path, timeout=timeout,
                         error=LocalAzureError)

    def _obstore_config(self) -> dict[str, str]:
        return {"account_name": self.account, "account_key": self.account_key, "endpoint": self.endpoint}

    def _create_container(self) -> None:
        """Create the container (Blob REST ``Create Container``, Shared Key signed); present is fine."""
        import email.utils
        import hmac
        import http.client

        date = email.utils.formatdate(usegmt=True)
        version = "2021-08-06"
        path = f"/{self.account}/{self.container}"
        canonical_headers = f"x-ms-date:{date}\nx-ms-version:{version}\n"
        canonical_resource = f"/{self.account}{path}\nrestype:container"
        to_sign = "PUT\n" + "\n" * 11 + canonical_headers + canonical_resource
        signature = base64.b64encode(hmac.new(base64.b64decode(self.account_key), to_sign.encode(),
                                              hashlib.sha256).digest()).decode()
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        try:
            conn.request("PUT", f"{path}?restype=container", headers={
                "x-ms-date": date, "x-ms-version": version, "Content-Length": "0",
                "Authorization": f"SharedKey {self.account}:{signature}"})
            response = conn.getresponse()
            response.read()
        finally:
            conn.close()
        if response.status not in (201, 409):  # 409: it exists already
            raise LocalAzureError(f"cannot create container {self.container}: HTTP {response.status}")

    def request_counts(self) -> dict[str, int]:
        """Blob requests served so far, by HTTP method (``PUT``, ``GET``, ``HEAD``, ``DELETE``...;
        listings are counted as ``LIST``), from the server's access log."""
        counts: dict[str, int] = {}
        with contextlib.suppress(FileNotFoundError), self.log_path.open(errors="replace") as lines:
            for line in lines:
                match = _ACCESS_LINE.search(line)
                if match is None:
                    continue
                method, target = match[1], match[2]
                kind = "LIST" if method == "GET" and "comp=list" in target else method
                counts[kind] = counts.get(kind, 0) + 1
        return counts

    def stop(self) -> None:
        proc, self._proc = self._proc, None
        stop_server_process(proc)
