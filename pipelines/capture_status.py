"""The capture's status file: state, heartbeat and last error, beside bronze's offsets.

A running capture rewrites ``<root>/bronze/_cdc/<source>/status.json`` every few seconds
(`StatusRecorder`) and when it ends, from its `pipelines.metrics.SourceMetrics`. ``status``
reads it: a heartbeat older than `STALE_AFTER` heartbeats means the process is gone
(``stopped``), whatever state it last wrote. The file holds no connection settings: an error
message is the connector's, which never carries a password (``ConnectionSettings.describe``).

Local roots are written atomically (a temporary file renamed over the old one); object-store
roots through delta-rs's object store (a single PUT), with the lakehouse's ``storage_options``
(and the environment's credentials) like the bronze tables.
"""

from __future__ import annotations

import datetime as dt
import logging
import os
import socket
import tempfile
import threading
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import orjson
import pyarrow as pa
import pyarrow.fs as pafs

from bronze.schema import offsets_path
from pipelines.metrics import CaptureMetrics, CaptureState, MetricsView

log = logging.getLogger(__name__)

STATUS_FILE = "status.json"
HEARTBEAT_SECONDS = 5.0
STALE_AFTER = 3
"""Heartbeats missed before ``status`` calls a capture stopped."""


@dataclass(frozen=True)
class CaptureStatus:
    """What the last capture process of a source wrote about itself.

    Attributes:
        source / plugin: the source and its connector.
        state: its state when written.
        pid / host: the process.
        started_at / heartbeat_at: when the process started, when it last wrote this (UTC).
        heartbeat_seconds: how often it writes.
        connected: whether it was connected to the source.
        transactions_committed: source transactions committed to bronze, over every run.
        last_error / last_error_at: the last error of any run, and when.
    """

    source: str
    plugin: str
    state: CaptureState
    pid: int
    host: str
    started_at: dt.datetime
    heartbeat_at: dt.datetime
    heartbeat_seconds: float
    connected: bool
    transactions_committed: int
    last_error: str | None = None
    last_error_at: dt.datetime | None = None

    def live_state(self, now: dt.datetime) -> CaptureState:
        """The state, or ``stopped`` when a running capture has stopped writing its heartbeat."""
        running = self.state in (CaptureState.STARTING, CaptureState.SNAPSHOTTING, CaptureState.STREAMING)
        stale = (now - self.heartbeat_at).total_seconds() > STALE_AFTER * self.heartbeat_seconds
        return CaptureState.STOPPED if running and stale else self.state

    def to_json(self) -> bytes:
        data: dict[str, Any] = asdict(self)
        data["state"] = str(self.state)
        return orjson.dumps(data, option=orjson.OPT_INDENT_2)

    @classmethod
    def from_json(cls, text: bytes) -> CaptureStatus:
        """Parse a status file.

        Raises:
            ValueError: not a status file.
        """
        try:
            d = orjson.loads(text)
            error_at = d.get("last_error_at")
            return cls(str(d["source"]), str(d["plugin"]), CaptureState(d["state"]), int(d["pid"]), str(d["host"]),
                       dt.datetime.fromisoformat(d["started_at"]), dt.datetime.fromisoformat(d["heartbeat_at"]),
                       float(d["heartbeat_seconds"]), bool(d["connected"]), int(d["transactions_committed"]),
                       d.get("last_error"), dt.datetime.fromisoformat(error_at) if error_at else None)
        except (KeyError, TypeError, orjson.JSONDecodeError) as exc:
            raise ValueError(f"not a capture status file: {exc}") from None


def status_path(root: str, source: str) -> str:
    """Where a source's status file lives (beside its offsets table)."""
    return f"{offsets_path(root, source).rsplit('/', 1)[0]}/{STATUS_FILE}"


def _is_local(path: str) -> bool:
    return "://" not in path or path.startswith("file://")


def _local(path: str) -> Path:
    return Path(path.removeprefix("file://"))


def _object_store(path: str, storage_options: Mapping[str, str] | None) -> tuple[pafs.FileSystem, str]:
    """An object-store file: a file system on its folder, and its name there."""
    from deltalake.fs import DeltaStorageHandler

    folder, name = path.rsplit("/", 1)
    return pafs.PyFileSystem(DeltaStorageHandler(folder, dict(storage_options or {}) or None)), name


def read_status(root: str, source: str, storage_options: Mapping[str, str] | None = None) -> CaptureStatus | None:
    """The source's status file, or None if no capture has written one."""
    path = status_path(root, source)
    try:
        if _is_local(path):
            data = _local(path).read_bytes()
        else:
            filesystem, name = _object_store(path, storage_options)
            if filesystem.get_file_info(name).type == pafs.FileType.NotFound:
                return None
            with filesystem.open_input_stream(name) as stream:
                data = stream.read()
    except FileNotFoundError:
        return None
    return CaptureStatus.from_json(data)


def write_status(root: str, status: CaptureStatus, storage_options: Mapping[str, str] | None = None) -> None:
    """Replace the source's status file."""
    path = status_path(root, status.source)
    data = status.to_json()
    if _is_local(path):
        target = _local(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".status-", dir=target.parent)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            os.replace(tmp, target)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        return
    filesystem, name = _object_store(path, storage_options)
    # through a buffer (one upload): delta-rs's stream takes no pyarrow Buffer, which a direct write passes
    with pa.output_stream(filesystem.open_output_stream(name), buffer_size=max(len(data), 1 << 16)) as stream:
        stream.write(data)


def _utc(ts: float | None) -> dt.datetime | None:
    return None if ts is None else dt.datetime.fromtimestamp(ts, dt.UTC)


class StatusRecorder:
    """Writes every source's status file from its metrics, every `HEARTBEAT_SECONDS` and at the end.

    `seed` carries a source's previous status file over (transactions committed, the last
    error). A source gets its first status file once its capture has connected (snapshotting
    or streaming): a capture that fails before it ever reached its source writes nothing under
    the lakehouse root, and ``status`` shows that source as never run.
    """

    def __init__(self, metrics: CaptureMetrics, root: str, *, interval: float = HEARTBEAT_SECONDS,
                 storage_options: Mapping[str, str] | None = None) -> None:
        self.metrics, self.root, self.interval = metrics, root, interval
        self.storage_options = dict(storage_options or {})
        self.started = dt.datetime.now(dt.UTC)
        self._stop = threading.Event()
        self._writing: set[str] = set()
        self._thread = threading.Thread(target=self._loop, name="capture-status", daemon=True)

    def seed(self, source: str, plugin: str) -> None:
        """Create the source's metrics, carrying over what its previous status file recorded."""
        metrics = self.metrics.source(source, plugin)
        try:
            previous = read_status(self.root, source, self.storage_options)
        except (OSError, ValueError) as exc:
            log.warning("source %s: ignoring an unreadable status file: %s", source, exc)
            previous = None
        if previous is not None:
            self._writing.add(source)
            metrics.transactions_committed = previous.transactions_committed
            metrics.last_error = previous.last_error
            metrics.last_error_at = previous.last_error_at.timestamp() if previous.last_error_at else None

    def start(self) -> StatusRecorder:
        self.write_all()
        self._thread.start()
        return self

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            self.write_all()

    def write_all(self) -> None:
        now = dt.datetime.now(dt.UTC)
        for view in self.metrics.views():
            # a capture that never reached its source creates nothing in the lakehouse
            if view.source not in self._writing:
                if view.state not in (CaptureState.SNAPSHOTTING, CaptureState.STREAMING) and not view.commits:
                    continue
                self._writing.add(view.source)
            try:
                write_status(self.root, self._status(view, now), self.storage_options)
            except OSError as exc:  # a status file must never stop the capture
                log.warning("source %s: cannot write the status file: %s", view.source, exc)

    def _status(self, v: MetricsView, now: dt.datetime) -> CaptureStatus:
        return CaptureStatus(v.source, v.plugin, v.state, os.getpid(), socket.gethostname(), self.started, now,
                             self.interval, v.connected, v.transactions_committed, v.last_error,
                             _utc(v.last_error_at))

    def close(self) -> None:
        """Stop the heartbeat and write the final state."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()
        self.write_all()
