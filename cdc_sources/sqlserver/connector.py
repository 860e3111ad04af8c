"""The configured SQL Server connector (implements `cdc_sources.spi.Connector`).

It opens its server through a gateway factory: by default pyodbc with Microsoft's ODBC driver
(``ODBC Driver 18 for SQL Server``; ``driver.Driver`` names another) and the T-SQL as it is.
A test hands in a factory reaching its emulator of SQL Server's CDC objects instead.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from cdc_sources.spi import Fatal, HistoryEntry, Retriable, SourceError
from cdc_sources.spi.retry import RetryPolicy
from cdc_sources.sqlserver.config import SqlServerConnectionSettings, SqlServerSourceConfig
from cdc_sources.sqlserver.databases import MultiDatabaseSession, open_sessions
from cdc_sources.sqlserver.gateway import Gateway
from cdc_sources.sqlserver.offset import OffsetError
from cdc_sources.sqlserver.session import SqlServerCaptureSession

__all__ = ["DEFAULT_ODBC_DRIVER", "SqlServerConnectError", "SqlServerConnector", "SqlServerDriverError",
           "SqlServerOffsetError", "connection_string", "odbc_gateway"]

DEFAULT_ODBC_DRIVER = "ODBC Driver 18 for SQL Server"


def _attribute(value: str) -> str:
    """An ODBC connection-string value, braced when it holds a separator (``}`` doubled)."""
    if any(c in value for c in ";{}= ") or value != value.strip():
        return "{" + value.replace("}", "}}") + "}"
    return value


def connection_string(settings: SqlServerConnectionSettings) -> str:
    """The ODBC connection string of ``settings`` (holds the password: never log it)."""
    server = f"{settings.host}\\{settings.instance}" if settings.instance else f"{settings.host},{settings.port}"
    parts: dict[str, str] = {"Driver": DEFAULT_ODBC_DRIVER, "Server": server, "UID": settings.user}
    if settings.password is not None:
        parts["PWD"] = settings.password
    if settings.databases:
        parts["Database"] = settings.databases[0]
    parts.update(settings.attributes)
    return ";".join(f"{k}={_attribute(v)}" for k, v in parts.items())


class SqlServerDriverError(SourceError, Fatal):
    """The ODBC driver named for the connection is not installed."""


class SqlServerConnectError(SourceError, Retriable):
    """The server could not be reached or refused the login."""


def odbc_gateway(settings: SqlServerConnectionSettings) -> Gateway:
    """A gateway on a new pyodbc connection (autocommit) to the real server.

    Raises:
        SqlServerDriverError: the ODBC driver is not installed (names it and how to pick another).
        SqlServerConnectError: the server refused or could not be reached (the driver's message,
            never the password).
    """
    import pyodbc

    driver = settings.attributes.get("Driver", DEFAULT_ODBC_DRIVER)
    try:
        connection = pyodbc.connect(connection_string(settings), autocommit=True, timeout=30)
    except pyodbc.Error as exc:
        text = " ".join(str(a) for a in exc.args)
        if settings.password:
            text = text.replace(settings.password, "***")
        if "Can't open lib" in text or "Data source name not found" in text:
            raise SqlServerDriverError(
                f"the ODBC driver {driver!r} is not installed on this machine (unixODBC knows: "
                f"{', '.join(pyodbc.drivers()) or 'none'}); install Microsoft's ODBC Driver for SQL Server, or "
                "name an installed driver with the option driver.Driver") from None
        raise SqlServerConnectError(f"cannot connect to SQL Server {settings.describe()}: {text}") from None
    if settings.query_timeout_s:
        connection.timeout = int(settings.query_timeout_s)
    return Gateway(connection)


@dataclass(frozen=True)
class SqlServerConnector:
    """A configured SQL Server connector.

    Attributes:
        config: the validated source configuration.
        gateway_factory: opens the gateway for a run (default `odbc_gateway`).
    """

    config: SqlServerSourceConfig
    gateway_factory: Callable[[SqlServerConnectionSettings], Gateway] = odbc_gateway

    @property
    def name(self) -> str:
        return self.config.name

    @property
    def retry(self) -> RetryPolicy:
        return self.config.retry

    def open(self, stored_offset: Mapping[str, Any] | None,
             history: Sequence[HistoryEntry] = ()) -> SqlServerCaptureSession | MultiDatabaseSession:
        """Connect and return a session ready to plan (``history``: the tables the connector
        described, `cdc_sources.sqlserver.history`; the schema itself comes from the server's capture
        instances at each start). Several databases in ``database.names``: one connection and
        session per database (`cdc_sources.sqlserver.databases`)."""
        databases = self.config.connection.databases
        if len(databases) <= 1:
            return self._open_one(databases[0] if databases else None, stored_offset, history)
        try:
            return open_sessions(self.config, stored_offset,
                                 lambda db, offset: self._open_one(db, offset, history), databases)
        except OffsetError as exc:
            raise SqlServerOffsetError(f"source {self.config.name}: {exc}") from None

    def send_signal(self, signal_id: str, kind: str, data: str | None) -> str:
        """See `cdc_sources.spi.operations.SignalSender`."""
        from cdc_sources.sqlserver.signal_sender import send_signal

        return send_signal(self.config, self.gateway_factory, signal_id, kind, data)

    def _open_one(self, database: str | None, stored_offset: Mapping[str, Any] | None,
                  history: Sequence[HistoryEntry] = ()) -> SqlServerCaptureSession:
        settings = self.config.connection
        if database is not None:
            settings = replace(settings, databases=(database,))
        gateway = self.gateway_factory(settings)
        try:
            return SqlServerCaptureSession(self.config, gateway, stored_offset, database=database,
                                           open_gateway=lambda: self.gateway_factory(settings), history=history)
        except BaseException:
            gateway.connection.close()
            raise


class SqlServerOffsetError(SourceError, Fatal):
    """The stored offset does not fit the configured databases."""
