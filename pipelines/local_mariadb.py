"""A private, throwaway MariaDB server for the tests, benchmarks and demos.

It runs the installed ``mariadbd`` with a data directory of its own (``mariadb-install-db``),
listening on 127.0.0.1 on a free port, with the settings the MySQL connector needs: binlog on,
``binlog_format=ROW``, ``binlog_row_image=FULL``, ``binlog_row_metadata=FULL`` and annotated
row events. ``root`` has no password and connects over TCP. It never touches the machine's own
server.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from cdc_sources.spi import CdcError
from pipelines.local_postgres import free_port

SERVER_SETTINGS: dict[str, str] = {
    "log-bin": "mysql-bin",
    "server-id": "1",
    "binlog-format": "ROW",
    "binlog-row-image": "FULL",
    "binlog-row-metadata": "FULL",
    "binlog-annotate-row-events": "ON",
    "innodb-buffer-pool-size": "128M",
    "innodb-log-file-size": "64M",
    "innodb-flush-log-at-trx-commit": "2",
    "sync-binlog": "0",
    "max-connections": "200",
    "max-allowed-packet": "256M",
    "default-time-zone": "+02:00",  # not UTC, so time-zone mistakes show; no tz tables needed
    "character-set-server": "utf8mb4",
    "collation-server": "utf8mb4_general_ci",
    "skip-name-resolve": "ON",
}
"""The server options; tests override single ones (``binlog-format=MIXED``...) to check start-up errors."""


class LocalMariaDBError(CdcError):
    """The private MariaDB server could not be set up or started."""


@dataclass
class LocalMariaDB:
    """One private MariaDB server.

    Attributes:
        data_dir: the data directory (created and initialised if missing).
        port: the TCP port on 127.0.0.1.
        settings: server options merged over `SERVER_SETTINGS` (a value of None removes one).
    """

    data_dir: Path
    port: int = field(default_factory=free_port)
    settings: dict[str, str | None] = field(default_factory=dict)
    proc: subprocess.Popen[bytes] | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        self.data_dir = Path(self.data_dir)

    @property
    def tmp_dir(self) -> Path:
        """The server's own temporary directory: bootstraps running side by side in one ``/tmp``
        collide on their ``#sql-temptable`` files."""
        return self.data_dir.with_name(self.data_dir.name + "-tmp")

    @property
    def socket_path(self) -> Path:
        return self.data_dir / "mysqld.sock"

    def init(self) -> LocalMariaDB:
        """Create the system tables if the data directory is new."""
        if (self.data_dir / "mysql").is_dir():
            return self
        installer = shutil.which("mariadb-install-db") or shutil.which("mysql_install_db")
        if installer is None:
            raise LocalMariaDBError("mariadb-install-db was not found; install the mariadb-server package")
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.tmp_dir.mkdir(parents=True, exist_ok=True)
        out = subprocess.run(
            [installer, "--no-defaults", f"--datadir={self.data_dir}", f"--tmpdir={self.tmp_dir}", "--user=root",
             "--auth-root-authentication-method=normal", "--skip-test-db", "--skip-name-resolve"],
            capture_output=True, text=True,
        )
        if out.returncode != 0:
            raise LocalMariaDBError(f"mariadb-install-db failed in {self.data_dir}: {out.stderr.strip()[-2000:]}")
        return self

    def command(self) -> list[str]:
        server = shutil.which("mariadbd") or "/usr/sbin/mariadbd"
        merged = {**SERVER_SETTINGS, **self.settings}
        opts = [f"--{k}={v}" for k, v in merged.items() if v is not None]
        self.tmp_dir.mkdir(parents=True, exist_ok=True)
        return [server, "--no-defaults", f"--datadir={self.data_dir}", f"--tmpdir={self.tmp_dir}",
                f"--port={self.port}", "--bind-address=127.0.0.1", f"--socket={self.socket_path}", "--user=root",
                f"--pid-file={self.data_dir / 'mysqld.pid'}", f"--log-error={self.data_dir / 'error.log'}",
                *opts]

    def start(self, timeout: float = 60.0) -> LocalMariaDB:
        """Start the server (initialising the data directory first) and wait until it accepts clients."""
        self.init()
        self.proc = subprocess.Popen(self.command(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                     start_new_session=True)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise LocalMariaDBError(f"MariaDB exited with {self.proc.returncode} on port {self.port}: "
                                        f"{self._log_tail()}")
            if self._ping():
                return self
            time.sleep(0.1)
        self.stop(kill=True)
        raise LocalMariaDBError(f"MariaDB did not accept connections on port {self.port} within {timeout:.0f} s: "
                                f"{self._log_tail()}")

    def _ping(self) -> bool:
        import pymysql

        try:
            conn = pymysql.connect(host="127.0.0.1", port=self.port, user="root", password="", connect_timeout=1)
        except pymysql.MySQLError:
            return False
        conn.close()
        return True

    def _log_tail(self) -> str:
        log = self.data_dir / "error.log"
        return log.read_text(errors="replace")[-2000:] if log.exists() else "(no error log)"

    def stop(self, *, kill: bool = False, timeout: float = 60.0) -> None:
        """Stop the server: a clean shutdown, or SIGKILL (a crash) with ``kill=True``."""
        if self.proc is None or self.proc.poll() is not None:
            self.proc = None
            return
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.proc.pid, signal.SIGKILL if kill else signal.SIGTERM)
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.proc = None

    def restart(self, *, kill: bool = False) -> None:
        self.stop(kill=kill)
        self.start()

    def connect_args(self, database: str | None = None, user: str = "root", password: str = "") -> dict[str, object]:
        """Keyword arguments for ``pymysql.connect`` to this server."""
        args: dict[str, object] = {"host": "127.0.0.1", "port": self.port, "user": user, "password": password}
        if database is not None:
            args["database"] = database
        return args
