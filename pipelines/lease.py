"""One writer per source: a lease stored in the lakehouse beside the source's bronze tables.

Layout: ``<root>/bronze/_cdc/<source>/lease/<generation>.json``, one file per generation
(zero-padded, so names sort by generation). The current lease is the highest generation. A
file names its holder (host, pid, the process's start time), when it was acquired, when the
holder last renewed it and for how long a renewal holds (``ttl_s``).

The protocol needs only what every store offers, so it carries over to object stores:

* **create-if-absent** of ``<generation + 1>.json`` takes a lease (a free one, or one whose
  holder is gone). Of two processes racing for the same generation exactly one creates it;
  the other reads the winner and is refused. On S3 this is ``PutObject`` with
  ``If-None-Match: *``; on GCS ``ifGenerationMatch=0``; on Azure ``If-None-Match: *``;
* **overwrite** of its own file by the holder only (renewals), **delete** of it (release);
* **list** and **get** of the folder.

Releasing deletes the file (and the folders left empty: a capture that failed to start
leaves nothing in the lakehouse). A lease is taken over, with a warning, when its renewal
has expired, or when its holder ran on this host and that process no longer exists (a
``kill -9``: no need to wait for the expiry). A holder that finds the newest file is not its
own (another generation or another token: generations restart after a release) has lost the
lease (it was presumed dead, e.g. suspended longer than the TTL) and must stop writing.

Local roots (a path or ``file://``) use the file system; object-store roots use obstore (the
``objectstore`` extra) with the lakehouse's ``storage_options``. Where neither works, the
lease is not enforced and `acquire` says so in a warning.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import html
import logging
import os
import re
import socket
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any, Protocol

import orjson
import psutil

from bronze.obstore_client import open_obstore
from bronze.schema import CDC_DIR, bronze_root
from cdc_sources.spi import CdcError, Fatal

log = logging.getLogger(__name__)

LEASE_DIR = "lease"
DEFAULT_TTL_S = 30.0
"""How long a renewal holds; the holder renews every third of it."""


class LeaseHeldError(CdcError, Fatal):
    """Another process holds the source's lease."""


class LeaseStoreError(CdcError, Fatal):
    """The lease's object store cannot be read or written (credentials, permissions, endpoint...)."""


def first_line(exc: BaseException, limit: int = 400) -> str:
    """An object-store error's first line, without the response body and debug dump that follow;
    a body's XML ``<Message>`` (GCS, S3, Azure: what the store says is wrong) ends the line instead."""
    full = str(exc).strip()
    text = full.splitlines()[0] if full else type(exc).__name__
    head, body, _ = text.partition(" <?xml")
    if body:
        said = _XML_MESSAGE.search(full)
        reason = html.unescape(said.group(1)).strip().splitlines()[0].strip() if said and said.group(1).strip() else ""
        text = head.rstrip().rstrip(":") + (f": {reason}" if reason else "")
    return text if len(text) <= limit else text[:limit] + "..."


_XML_MESSAGE = re.compile(r"<Message>(.*?)</Message>", re.DOTALL)


class LeaseLostError(CdcError, Fatal):
    """This process's lease was taken over by another one; it must stop writing."""


@dataclass(frozen=True)
class LeaseRecord:
    """One lease file's content.

    Attributes:
        source: the source name.
        generation: the lease's generation (its file name).
        host / pid / started: the holder process (``started``: its start time, Unix seconds,
            which tells a live holder from a later process that reused its pid).
        token: unique per acquisition.
        acquired_at / renewed_at: UTC ISO-8601 times.
        ttl_s: a renewal holds this long.
        purpose: what the holder does (``capture``, ``reset``, ...), for messages.
    """

    source: str
    generation: int
    host: str
    pid: int
    started: float
    token: str
    acquired_at: str
    renewed_at: str
    ttl_s: float
    purpose: str = "capture"

    def expired(self, now: dt.datetime) -> bool:
        return now > dt.datetime.fromisoformat(self.renewed_at) + dt.timedelta(seconds=self.ttl_s)

    def describe(self) -> str:
        return (f"{self.purpose} on host {self.host} pid {self.pid} since {self.acquired_at} "
                f"(last renewed {self.renewed_at})")


def lease_dir(root: str, source: str) -> str:
    """Where a source's lease files live."""
    return f"{bronze_root(root)}/{CDC_DIR}/{source}/{LEASE_DIR}"


def local_path(uri: str) -> Path | None:
    """The local path of a root, or None for an object-store URI."""
    if uri.startswith("file://"):
        return Path(uri[len("file://"):])
    if "://" in uri:
        return None
    return Path(uri)


def _now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


def _process_started(pid: int) -> float | None:
    try:
        return float(psutil.Process(pid).create_time())
    except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
        return None


def _holder_gone(record: LeaseRecord, host: str) -> bool:
    """The holder ran on this host and that process (pid and start time) no longer exists."""
    if record.host != host:
        return False
    started = _process_started(record.pid)
    return started is None or abs(started - record.started) > 1.0


class LeaseStore(Protocol):
    """Where a source's lease files are: what the protocol needs of a store."""

    def generations(self) -> list[int]:
        """The generations present, ascending."""
        ...

    def read(self, generation: int) -> LeaseRecord | None:
        """A generation's record; None if absent or not readable yet."""
        ...

    def create(self, record: LeaseRecord) -> bool:
        """Create the record's generation if absent; False if it exists."""
        ...

    def overwrite(self, record: LeaseRecord) -> None:
        """Replace the record's generation (its holder only)."""
        ...

    def delete(self, generation: int) -> None:
        """Remove a generation (absent: nothing to do)."""
        ...

    def cleanup(self) -> None:
        """After a release: remove what the store created around the files (folders)."""
        ...


def _name(generation: int) -> str:
    return f"{generation:020d}.json"


def _parse(data: bytes) -> LeaseRecord | None:
    try:
        return LeaseRecord(**orjson.loads(data))
    except (orjson.JSONDecodeError, TypeError):  # being created this instant, or not a lease file
        return None


class LocalLeaseStore:
    """Lease files in a local folder: create-if-absent is a hard link of a complete temporary
    file (fails if the name exists), overwrite a rename over the file (readers never see half a
    file). ``keep``: the folder `cleanup` stops at (default: the lease folder itself)."""

    def __init__(self, folder: Path, keep: Path | None = None) -> None:
        self.folder = folder
        self.keep = keep or folder

    def generations(self) -> list[int]:
        try:
            names = os.listdir(self.folder)
        except FileNotFoundError:
            return []
        return sorted(int(n[:-5]) for n in names if n.endswith(".json") and n[:-5].isdigit())

    def read(self, generation: int) -> LeaseRecord | None:
        try:
            return _parse(self._file(generation).read_bytes())
        except FileNotFoundError:
            return None

    def create(self, record: LeaseRecord) -> bool:
        """Create the record's generation file; False if it exists already."""
        self.folder.mkdir(parents=True, exist_ok=True)
        tmp = self.folder / f".{record.generation:020d}.{record.token}.tmp"
        tmp.write_bytes(orjson.dumps(asdict(record)))
        try:
            os.link(tmp, self._file(record.generation))  # atomic, fails if the name exists
        except FileExistsError:
            return False
        finally:
            tmp.unlink(missing_ok=True)
        return True

    def overwrite(self, record: LeaseRecord) -> None:
        tmp = self.folder / f".{record.generation:020d}.{record.token}.tmp"
        tmp.write_bytes(orjson.dumps(asdict(record)))
        os.replace(tmp, self._file(record.generation))

    def delete(self, generation: int) -> None:
        self._file(generation).unlink(missing_ok=True)

    def cleanup(self) -> None:
        """Remove the lease folder and its parents up to ``keep`` (kept) while they are empty."""
        folder = self.folder
        while folder != self.keep and self.keep in folder.parents:
            try:
                folder.rmdir()
            except OSError:  # not empty (or gone): stop there
                return
            folder = folder.parent

    def _file(self, generation: int) -> Path:
        return self.folder / _name(generation)


class ObjectLeaseStore:
    """Lease files in an object store (obstore): create-if-absent is a conditional put
    (``PutMode.Create``: S3 ``If-None-Match: *``, GCS ``ifGenerationMatch=0``, Azure
    ``If-None-Match: *``), overwrite a plain put."""

    def __init__(self, store: Any, prefix: str) -> None:
        self.store, self.prefix = store, prefix.strip("/")

    def generations(self) -> list[int]:
        import obstore

        names = [str(meta["path"]).rsplit("/", 1)[-1] for batch in obstore.list(self.store, prefix=self.prefix)
                 for meta in batch]
        return sorted(int(n[:-5]) for n in names if n.endswith(".json") and n[:-5].isdigit())

    def read(self, generation: int) -> LeaseRecord | None:
        import obstore

        try:
            return _parse(bytes(obstore.get(self.store, self._path(generation)).bytes()))
        except FileNotFoundError:
            return None

    def create(self, record: LeaseRecord) -> bool:
        import obstore
        from obstore.exceptions import AlreadyExistsError

        try:
            obstore.put(self.store, self._path(record.generation), orjson.dumps(asdict(record)), mode="create")
        except AlreadyExistsError:
            return False
        return True

    def overwrite(self, record: LeaseRecord) -> None:
        import obstore

        obstore.put(self.store, self._path(record.generation), orjson.dumps(asdict(record)), mode="overwrite")

    def delete(self, generation: int) -> None:
        import obstore

        with contextlib.suppress(FileNotFoundError):
            obstore.delete(self.store, self._path(generation))

    def cleanup(self) -> None:
        return None  # an object store has no folders to remove

    def _path(self, generation: int) -> str:
        return f"{self.prefix}/{_name(generation)}" if self.prefix else _name(generation)


class Lease:
    """A held lease, renewed by a daemon thread until `release`.

    ``on_lost`` is called (from the renewal thread) if another process took the lease over.
    """

    def __init__(self, store: LeaseStore, record: LeaseRecord, on_lost: Callable[[], None] | None) -> None:
        self.store, self.record, self.on_lost = store, record, on_lost
        self.lost = False
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._renew_loop, name=f"lease-{record.source}", daemon=True)
        self._thread.start()

    def _renew_loop(self) -> None:
        while not self._stop.wait(self.record.ttl_s / 3):
            try:
                self.renew()
            except OSError as exc:  # a store hiccup: the next renewal may work, before the expiry
                log.warning("source %s: could not renew the writer lease: %s", self.record.source, exc)
            if self.lost:
                return

    def _mine(self) -> bool:
        """Whether the newest lease file is this holder's."""
        newest = max(self.store.generations(), default=0)
        current = self.store.read(newest) if newest == self.record.generation else None
        return current is not None and current.token == self.record.token

    def renew(self) -> None:
        if not self._mine():
            self.lost = True
            newest = max(self.store.generations(), default=0)
            holder = self.store.read(newest) if newest else None
            log.error("source %s: the writer lease was taken over by %s; stopping", self.record.source,
                      holder.describe() if holder else f"generation {newest}")
            if self.on_lost is not None:
                self.on_lost()
            return
        self.record = replace(self.record, renewed_at=_now().isoformat())
        self.store.overwrite(self.record)

    def check(self) -> None:
        """Raise `LeaseLostError` if the lease was taken over."""
        if self.lost:
            raise LeaseLostError(f"source {self.record.source}: another process took over the writer lease while "
                                 "this one held it (was it suspended longer than the lease TTL?); stopped")

    def release(self) -> None:
        self._stop.set()
        self._thread.join()
        if not self.lost and self._mine():
            self.store.delete(self.record.generation)
            self.store.cleanup()


class NoLease:
    """What `acquire` returns where no lease can be kept (object-store roots)."""

    lost = False

    def check(self) -> None:
        return None

    def release(self) -> None:
        return None


def open_store(root: str, source: str, storage_options: Mapping[str, str] | None = None) -> LeaseStore | None:
    """The store of a source's lease files; None (with a warning) where none can be opened."""
    folder = local_path(root)
    if folder is not None:
        lease_folder = Path(lease_dir(str(folder), source))
        keep = lease_folder  # release removes the folders acquiring creates, not more
        while not keep.exists() and keep != keep.parent:
            keep = keep.parent
        return LocalLeaseStore(lease_folder, keep)
    try:
        return ObjectLeaseStore(open_obstore(lease_dir(root, source), storage_options), "")
    except ImportError:
        log.warning("source %s: one writer per source is not enforced on %s: install cdc-lakehouse[objectstore] "
                    "(the obstore package) for the lease on object stores", source, root)
    except Exception as exc:
        log.warning("source %s: one writer per source is not enforced on %s: the lease store cannot be "
                    "opened (%s)", source, root, type(exc).__name__)
    return None


def acquire(root: str, source: str, *, purpose: str = "capture", ttl_s: float = DEFAULT_TTL_S,
            on_lost: Callable[[], None] | None = None,
            storage_options: Mapping[str, str] | None = None) -> Lease | NoLease:
    """Take the source's writer lease, or raise `LeaseHeldError` naming its holder.

    A stale lease (expired, or its holder process gone from this host) is taken over with a
    warning. Where no lease store can be opened, a warning says one writer is not enforced.
    """
    store = open_store(root, source, storage_options)
    if store is None:
        return NoLease()
    if isinstance(store, LocalLeaseStore):
        return acquire_in(store, source, purpose=purpose, ttl_s=ttl_s, on_lost=on_lost)
    try:
        return acquire_in(store, source, purpose=purpose, ttl_s=ttl_s, on_lost=on_lost)
    except CdcError:
        raise
    except Exception as exc:  # the object store refused: credentials, permissions, endpoint, bucket
        raise LeaseStoreError(f"source {source}: cannot take the writer lease in {lease_dir(root, source)}: "
                              f"{first_line(exc)}") from None


def acquire_in(store: LeaseStore, source: str, *, purpose: str = "capture", ttl_s: float = DEFAULT_TTL_S,
               on_lost: Callable[[], None] | None = None) -> Lease:
    """`acquire` in a given store."""
    host = socket.gethostname()
    pid = os.getpid()
    started = _process_started(pid) or 0.0
    for _ in range(5):  # a lost race for a generation: look again
        generations = store.generations()
        newest = max(generations, default=0)
        current = store.read(newest) if newest else None
        if current is not None:
            now = _now()
            if current.expired(now):
                log.warning("source %s: taking over the writer lease of %s: it expired", source, current.describe())
            elif _holder_gone(current, host):
                log.warning("source %s: taking over the writer lease of %s: that process is gone", source,
                            current.describe())
            else:
                raise LeaseHeldError(f"source {source} is already being written by {current.describe()}; "
                                     "one writer per source: stop that process first (a crashed holder's lease "
                                     f"is taken over once it expires, {current.ttl_s:.0f}s after its last renewal)")
        elif current is None and newest:
            time.sleep(0.05)
            continue  # being written this instant
        now_text = _now().isoformat()
        record = LeaseRecord(source=source, generation=newest + 1, host=host, pid=pid, started=started,
                             token=uuid.uuid4().hex, acquired_at=now_text, renewed_at=now_text, ttl_s=ttl_s,
                             purpose=purpose)
        if store.create(record):
            for old in generations:
                store.delete(old)
            return Lease(store, record, on_lost)
    raise LeaseHeldError(f"source {source}: could not take the writer lease: other processes keep taking it")
