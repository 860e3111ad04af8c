"""Connections to PostgreSQL: SQL (psycopg 3) and logical replication (psycopg2).

psycopg 3 has no replication-protocol support, so the replication stream uses psycopg2's
``LogicalReplicationConnection``; everything else uses psycopg 3. Both sessions get the same
settings so that values print identically in pgoutput text tuples and in ``COPY`` output,
which lets one set of value converters serve streaming and snapshots.
"""

from __future__ import annotations

from typing import Any

from cdc_sources.postgres.config import ConnectionSettings
from cdc_sources.postgres.errors import classify
from cdc_sources.spi import MissingDependencyError

SESSION_SETTINGS = {
    "DateStyle": "ISO, MDY",
    "IntervalStyle": "iso_8601",
    "TimeZone": "UTC",
    "bytea_output": "hex",
    "extra_float_digits": "1",
    "client_encoding": "UTF8",
    "lc_monetary": "C",
}
"""Session settings the value converters rely on."""

_OPTIONS = " ".join(f"-c {k}={v.replace(' ', '')}" for k, v in SESSION_SETTINGS.items())
APPLICATION_NAME = "cdc-lakehouse"


def connect_sql(settings: ConnectionSettings, *, autocommit: bool = True,
                initial_statements: str | None = None) -> Any:
    """A psycopg 3 connection with the converter session settings."""
    try:
        import psycopg
    except ImportError as exc:  # pragma: no cover - depends on the install
        raise MissingDependencyError("psycopg", "postgres") from exc
    try:
        conn = psycopg.connect(**settings.libpq_kwargs(), options=_OPTIONS, autocommit=autocommit,
                               application_name=APPLICATION_NAME, connect_timeout=10)
    except psycopg.Error as exc:
        raise classify(exc, where=f"connecting to {settings.describe()}") from None
    for statement in _split_statements(initial_statements):
        conn.execute(statement)
    return conn


def connect_replication(settings: ConnectionSettings) -> Any:
    """A psycopg2 logical replication connection with the converter session settings."""
    try:
        import psycopg2
        import psycopg2.extras
    except ImportError as exc:  # pragma: no cover
        raise MissingDependencyError("psycopg2-binary", "postgres") from exc
    try:
        return psycopg2.connect(
            **settings.libpq_kwargs(), options=_OPTIONS, application_name=APPLICATION_NAME,
            connection_factory=psycopg2.extras.LogicalReplicationConnection, connect_timeout=10,
        )
    except psycopg2.Error as exc:
        raise classify(exc, where=f"opening a replication connection to {settings.describe()}") from None


def _split_statements(text: str | None) -> list[str]:
    """Split ``database.initial.statements`` on ``;`` (``;;`` is a literal semicolon)."""
    if not text:
        return []
    parts = text.replace(";;", "\0").split(";")
    return [p.replace("\0", ";").strip() for p in parts if p.strip()]


def replication_errors() -> tuple[type[BaseException], ...]:
    """The driver's exception classes raised while streaming (for mapping to connector errors)."""
    try:
        import psycopg2
    except ImportError as exc:  # pragma: no cover
        raise MissingDependencyError("psycopg2-binary", "postgres") from exc
    return (psycopg2.Error,)
