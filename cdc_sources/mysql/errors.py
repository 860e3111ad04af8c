"""MySQL/MariaDB connector errors, and the mapping from pymysql errors to them.

`classify` decides Retriable vs Fatal from the server or client error code: a lost or refused
connection, a server shutting down, too many connections, a lock wait timeout or a deadlock
may pass on their own (Retriable); wrong credentials, an unknown host or database, a missing
privilege, an SSL setup error or a purged binlog will not (Fatal). Messages name what failed
and where (``user@host:port``), never the password.
"""

from __future__ import annotations

import re

from cdc_sources.spi import ConfigError, ConfigProblem, Fatal, Retriable, SourceError

__all__ = [
    "BinlogUnavailableError",
    "MySqlAuthError",
    "MySqlConnectError",
    "MySqlError",
    "MySqlSetupError",
    "MySqlUnknownHostError",
    "NoTableMatchesError",
    "WrongConnectorError",
    "classify",
    "error_code",
]


class MySqlError(SourceError):
    """A MySQL/MariaDB operation failed.

    Attributes:
        code: the server or client error number, when known.
    """

    code: int | None = None


class MySqlConnectError(MySqlError, Retriable):
    """The server could not be reached, closed the connection or is busy; retrying may help."""


class MySqlAuthError(MySqlError, Fatal):
    """The server rejected the credentials, or the user lacks a privilege or database access."""


class MySqlUnknownHostError(MySqlError, Fatal):
    """The host name does not resolve, or the TLS setup failed: fix the connection settings."""


class MySqlSetupError(MySqlError, Fatal):
    """The server is not set up for change data capture (binlog settings, privileges, server id).

    Attributes:
        problems: the names of the failed checks.
    """

    problems: tuple[str, ...] = ()


class NoTableMatchesError(MySqlError, Fatal):
    """The table and database filters leave no table of the server to capture."""


class BinlogUnavailableError(MySqlError, Fatal):
    """The stored offset points at binlog the server no longer has (purged), or at a different
    server's history; a new snapshot is required (``snapshot.mode=when_needed`` does it)."""


class WrongConnectorError(ConfigError):
    """The source's ``connector:`` names the other flavour than the server it reaches
    (``connector: mysql`` at a MariaDB server, or the converse): a configuration error.

    Attributes:
        server_flavor: ``mysql`` or ``mariadb``, what the server is.
    """

    def __init__(self, source: str, connector: str, server_flavor: str, server: str, where: str) -> None:
        message = (f"source {source} is declared with `connector: {connector}`, but {where} is {server}: "
                   f"set `connector: {server_flavor}` (the two servers differ in GTIDs, binlog events and "
                   "start-up checks)")
        ConfigError.__init__(self, [ConfigProblem(f"sources[{source}].connector", message)])
        self.server_flavor = self.attrs["server_flavor"] = server_flavor


_RETRIABLE_CODES = frozenset({
    1040,  # ER_CON_COUNT_ERROR: too many connections
    1053,  # ER_SERVER_SHUTDOWN
    1205,  # ER_LOCK_WAIT_TIMEOUT
    1213,  # ER_LOCK_DEADLOCK
    1317,  # ER_QUERY_INTERRUPTED
    1927,  # ER_CONNECTION_KILLED (MariaDB)
    2002,  # CR_CONNECTION_ERROR (socket)
    2003,  # CR_CONN_HOST_ERROR: refused / unreachable (unless the name does not resolve)
    2006,  # CR_SERVER_GONE_ERROR
    2013,  # CR_SERVER_LOST
    2055,  # CR_SERVER_LOST_EXTENDED
    3169,  # ER_SESSION_WAS_KILLED (MySQL)
})
_AUTH_CODES = frozenset({
    1044,  # ER_DBACCESS_DENIED_ERROR
    1045,  # ER_ACCESS_DENIED_ERROR
    1142,  # ER_TABLEACCESS_DENIED_ERROR
    1143,  # ER_COLUMNACCESS_DENIED_ERROR
    1227,  # ER_SPECIFIC_ACCESS_DENIED_ERROR
    1251,  # ER_NOT_SUPPORTED_AUTH_MODE
    1698,  # ER_ACCESS_DENIED_NO_PASSWORD_ERROR
    1862,  # ER_MUST_CHANGE_PASSWORD_LOGIN
    3118,  # ER_ACCOUNT_HAS_BEEN_LOCKED (MySQL)
    4151,  # ER_ACCOUNT_HAS_BEEN_LOCKED (MariaDB)
})
_UNKNOWN_DATABASE = 1049
_BINLOG_READ_ERROR = 1236  # ER_MASTER_FATAL_ERROR_READING_BINLOG
_NAME_NOT_RESOLVED = re.compile(
    r"Name or service not known|nodename nor servname|No address associated with hostname|"
    r"getaddrinfo failed|\[Errno -2\]|\[Errno -5\]", re.IGNORECASE)
_SSL = re.compile(r"\bSSL\b|certificate|TLS", re.IGNORECASE)
_SECRET = re.compile(r"(password\s*[=:]\s*)\S+", re.IGNORECASE)


def error_code(exc: BaseException) -> int | None:
    """The MySQL error number of a pymysql error (its first argument), if any (an OSError's
    first argument is an errno, not a MySQL error number)."""
    if isinstance(exc, OSError):
        return None
    args = getattr(exc, "args", ())
    return args[0] if args and isinstance(args[0], int) else None


def _text(exc: BaseException) -> str:
    args: tuple[object, ...] = tuple(getattr(exc, "args", ()))
    text = str(args[1]) if len(args) > 1 and not isinstance(exc, OSError) else str(exc)
    first = text.strip().splitlines()[0] if text.strip() else type(exc).__name__
    return _SECRET.sub(r"\1***", first)


def classify(exc: BaseException, *, where: str) -> MySqlError:
    """Wrap a pymysql (or socket/SSL) error in the matching connector error.

    Args:
        exc: the driver error.
        where: what was being done, e.g. ``connecting to repl@db1:3306`` (no password).
    """
    code = error_code(exc)
    text = _text(exc)
    head = f"{where}: " + (f"error {code}: " if code is not None else "") + text
    if code in _AUTH_CODES:
        return MySqlAuthError(f"{head}; check the user, password and grants", code=code)
    if code == _UNKNOWN_DATABASE:
        return MySqlAuthError(f"{head}; check connection.database", code=code)
    if code == _BINLOG_READ_ERROR:
        return BinlogUnavailableError(f"{head}; the binlog position is no longer available on the server "
                                      "(purged?): a new snapshot is required", code=code)
    if code == 2003 and _NAME_NOT_RESOLVED.search(text):
        return MySqlUnknownHostError(f"{head}; the host name does not resolve: check connection.host", code=code)
    if _SSL.search(text) and code in (None, 2003, 2026):
        return MySqlUnknownHostError(f"{head}; the TLS connection failed: check database.ssl.mode and the "
                                     "certificate files", code=code)
    if code in _RETRIABLE_CODES or (code is None and isinstance(exc, OSError)):
        return MySqlConnectError(head, code=code)
    return MySqlError(head, code=code)
