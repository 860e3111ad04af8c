"""PostgreSQL connector errors, and the mapping from driver errors to them."""

from __future__ import annotations

import re

from cdc_sources.spi import Fatal, Retriable, SourceError


class PostgresError(SourceError):
    """A PostgreSQL operation failed."""


class PostgresConnectError(PostgresError, Retriable):
    """The server could not be reached or closed the connection; retrying may help."""


class PostgresAuthError(PostgresError, Fatal):
    """The server rejected the credentials or the user lacks a privilege."""


class PostgresSetupError(PostgresError, Fatal):
    """The server or the captured tables are not set up for logical replication."""


class SlotInUseError(PostgresError, Retriable):
    """The replication slot is being used by another process."""


class OffsetUnavailableError(PostgresError, Fatal):
    """The stored offset points at WAL the server no longer has."""


_AUTH_SQLSTATES = {"28000", "28P01", "42501"}


def classify(exc: BaseException, *, where: str) -> PostgresError:
    """Wrap a psycopg/psycopg2 error in the matching connector error, without credentials."""
    sqlstate = getattr(exc, "sqlstate", None) or getattr(exc, "pgcode", None)
    text = _scrub(str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__)
    if sqlstate in _AUTH_SQLSTATES or "password authentication failed" in text or ("role" in text and (
        "does not exist" in text
    )):
        return PostgresAuthError(f"{where}: authentication or permission failure: {text}", sqlstate=sqlstate)
    if sqlstate == "55006" or "is active for PID" in text:
        return SlotInUseError(f"{where}: {text}; another process is using the replication slot "
                              "(stop it, or set a different slot.name)", sqlstate=sqlstate)
    if sqlstate is None or sqlstate.startswith(("08", "57P")):
        return PostgresConnectError(f"{where}: {text}", sqlstate=sqlstate)
    return PostgresError(f"{where}: {text}", sqlstate=sqlstate)


def _scrub(text: str) -> str:
    """Remove anything that looks like a password from a driver message."""
    return re.sub(r"(password\s*=\s*)\S+", r"\1***", text, flags=re.IGNORECASE)
