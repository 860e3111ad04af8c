"""The PostgreSQL connector (pgoutput logical decoding), Debezium compatible.

Importing this package imports no database driver; connections are opened by `open`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from cdc_sources.postgres import operations
from cdc_sources.postgres.config import PostgresSourceConfig, build_postgres_config
from cdc_sources.postgres.offset import PostgresOffset
from cdc_sources.postgres.session import PostgresCaptureSession
from cdc_sources.spi import HistoryEntry
from cdc_sources.spi.operations import Rewind
from cdc_sources.spi.retry import RetryPolicy

__all__ = ["PostgresConnector", "PostgresOffset", "PostgresSourceConfig", "build_postgres_config"]


@dataclass(frozen=True)
class PostgresConnector:
    """A configured PostgreSQL connector (implements `cdc_sources.spi.Connector`)."""

    config: PostgresSourceConfig

    @property
    def name(self) -> str:
        return self.config.name

    @property
    def retry(self) -> RetryPolicy:
        return self.config.retry

    def open(self, stored_offset: Mapping[str, Any] | None,
             history: Sequence[HistoryEntry] = ()) -> PostgresCaptureSession:
        """Open a session; PostgreSQL keeps no private history (Relation messages carry schemas)."""
        return PostgresCaptureSession(self.config, stored_offset)

    def rewind(self, position: str, stored: Mapping[str, Any] | None) -> Rewind:
        """See `cdc_sources.spi.operations.SourceOperations` and `cdc_sources.postgres.operations`."""
        return operations.rewind(self.config, position, stored)

    def decommission(self) -> list[str]:
        """Drop the slot (and the publication capture created)."""
        return operations.decommission(self.config)

    def send_signal(self, signal_id: str, kind: str, data: str | None) -> str:
        """See `cdc_sources.spi.operations.SignalSender`."""
        from cdc_sources.postgres.signal_sender import send_signal

        return send_signal(self.config, signal_id, kind, data)
