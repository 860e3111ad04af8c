"""The MySQL and MariaDB connector: binlog streaming with python-mysql-replication, snapshots with pymysql.

Reproduces Debezium 3.6.3's MySQL connector (``connector: mysql``) and, with MariaDB's
defaults and ``source.connector = "mariadb"``, its MariaDB connector (``connector: mariadb``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from cdc_sources.mysql import operations
from cdc_sources.mysql.config import MySqlSourceConfig, build_mysql_config
from cdc_sources.mysql.session import MySqlCaptureSession
from cdc_sources.spi import HistoryEntry
from cdc_sources.spi.operations import Rewind
from cdc_sources.spi.retry import RetryPolicy

__all__ = ["MySqlCaptureSession", "MySqlConnector", "MySqlSourceConfig", "build_mysql_config"]


@dataclass(frozen=True)
class MySqlConnector:
    """A configured MySQL/MariaDB connector (implements `cdc_sources.spi.Connector`)."""

    config: MySqlSourceConfig

    @property
    def name(self) -> str:
        return self.config.name

    @property
    def retry(self) -> RetryPolicy:
        return self.config.retry

    def open(self, stored_offset: Mapping[str, Any] | None,
             history: Sequence[HistoryEntry] = ()) -> MySqlCaptureSession:
        """Connect, check the server, rebuild the schema model from ``history`` and return a session."""
        return MySqlCaptureSession(self.config, stored_offset, history)

    def rewind(self, position: str, stored: Mapping[str, Any] | None) -> Rewind:
        """See `cdc_sources.spi.operations.SourceOperations` and `cdc_sources.mysql.operations`."""
        return operations.rewind(self.config, position, stored)

    def decommission(self) -> list[str]:
        """Nothing to drop on the server; says so."""
        return operations.decommission(self.config)

    def send_signal(self, signal_id: str, kind: str, data: str | None) -> str:
        """See `cdc_sources.spi.operations.SignalSender`."""
        from cdc_sources.mysql.signal_sender import send_signal

        return send_signal(self.config, signal_id, kind, data)
