"""The Oracle connector (LogMiner through python-oracledb), Debezium 3.6.3 compatible.

Importing this package imports no database driver: `OracleConnector.open` connects, with
python-oracledb in thin mode unless given another ``connect`` function (a connection that
behaves like python-oracledb's; the tests give a fake one). See docs/oracle.md for what is built
and how each part is verified.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

from cdc_sources.oracle.config import OracleSourceConfig, build_oracle_config
from cdc_sources.oracle.gateway import Connection
from cdc_sources.oracle.offset import OracleOffset
from cdc_sources.oracle.session import OracleCaptureSession
from cdc_sources.spi import HistoryEntry, SourceError
from cdc_sources.spi.errors import Retriable
from cdc_sources.spi.retry import RetryPolicy

__all__ = ["OracleConnectError", "OracleConnector", "OracleOffset", "OracleSourceConfig", "build_oracle_config"]


class OracleConnectError(SourceError, Retriable):
    """The database could not be reached (names where, never the password)."""


def _thin_connect(config: OracleSourceConfig) -> Connection:
    import oracledb

    c = config.connection
    try:
        conn: Connection = oracledb.connect(user=c.user, password=c.password, host=c.host, port=c.port,
                                            service_name=c.service)
    except oracledb.Error as exc:
        raise OracleConnectError(f"cannot connect to Oracle as {c.describe()}: {str(exc).splitlines()[0]}") from None
    return conn


@dataclass(frozen=True)
class OracleConnector:
    """A configured Oracle connector (implements `cdc_sources.spi.Connector`)."""

    config: OracleSourceConfig
    connect: Callable[[], Connection] | None = None

    @property
    def name(self) -> str:
        return self.config.name

    @property
    def retry(self) -> RetryPolicy:
        return self.config.retry

    def open(self, stored_offset: Mapping[str, Any] | None,
             history: Sequence[HistoryEntry] = ()) -> OracleCaptureSession:
        """Connect and open a session; ``history`` is the connector's stored schema history (the
        captured tables' structures, `cdc_sources.oracle.schema_changes`)."""
        connect = self.connect if self.connect is not None else partial(_thin_connect, self.config)
        return OracleCaptureSession(self.config, connect(), stored_offset, history, connect=connect)

    def send_signal(self, signal_id: str, kind: str, data: str | None) -> str:
        """See `cdc_sources.spi.operations.SignalSender`: the signal table's insert, or the signal file."""
        from cdc_sources.oracle.signal_sender import send_signal

        connect = self.connect if self.connect is not None else partial(_thin_connect, self.config)
        return send_signal(self.config, connect, signal_id, kind, data)
