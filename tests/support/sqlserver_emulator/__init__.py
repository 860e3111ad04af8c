"""An emulator of SQL Server's change data capture surface on PostgreSQL: TEST INFRASTRUCTURE.

SQL Server cannot run on the machines this project is tested on. The SQL Server connector is
written for the real server and reaches it only through its statement catalogue
(cdc_sources/sqlserver/catalogue.py) and the pyodbc driver; this package lets it run end to
end here against a real PostgreSQL that the tests start:

- `sys_objects.sql`: the ``sys`` and ``cdc`` objects the connector reads (``cdc.change_tables``,
  ``cdc.captured_columns``, ``cdc.index_columns``, ``cdc.lsn_time_mapping``, ``cdc.<instance>_CT``,
  ``cdc.fn_cdc_get_all_changes_<instance>``, ``sys.fn_cdc_get_max_lsn``/``get_min_lsn``/
  ``increment_lsn``/``map_lsn_to_time``, ``sys.sp_cdc_enable_db``/``enable_table``/
  ``disable_table``/``help_change_data_capture``, ``sys.columns``/``sys.types``), with SQL
  Server's error texts where the connector depends on them;
- `agent.CaptureAgent`: the capture job, fed from PostgreSQL logical decoding;
- `translate.to_postgres`: the connector's T-SQL rewritten for PostgreSQL, handed to the gateway;
- `SqlServerEmulator`: installs the objects into a database and opens pyodbc connections to it
  through Debian's PostgreSQL ODBC driver.

What the emulator cannot tell about a real server is listed in docs/sqlserver-oracle-verification.md.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import resources
from typing import Any

import psycopg
import pyodbc
from psycopg.conninfo import conninfo_to_dict

from cdc_sources.sqlserver.gateway import Dialect, Gateway
from tests.support.sqlserver_emulator.agent import CaptureAgent
from tests.support.sqlserver_emulator.translate import to_postgres

__all__ = ["ODBC_DRIVER", "CaptureAgent", "SqlServerEmulator", "to_postgres"]

ODBC_DRIVER = "PostgreSQL Unicode"
"""Debian's odbc-postgresql driver, as unixODBC names it (scripts/setup.sh installs it)."""


@dataclass(frozen=True)
class SqlServerEmulator:
    """The emulator installed in one PostgreSQL database (``dsn``), with ``dbo`` as default schema."""

    dsn: str

    @classmethod
    def install(cls, dsn: str) -> SqlServerEmulator:
        """Creates the ``sys`` objects and the ``dbo`` schema (SQL Server's always-present ones)."""
        text = resources.files(__package__).joinpath("sys_objects.sql").read_text(encoding="utf-8")
        with psycopg.connect(dsn, autocommit=True) as conn:
            database = conn.execute("SELECT current_database()").fetchone()[0]  # type: ignore[index]
            conn.execute("CREATE SCHEMA IF NOT EXISTS dbo")
            conn.execute(text.encode())
            conn.execute(psycopg.sql.SQL("ALTER DATABASE {} SET search_path = dbo, public, sys").format(
                psycopg.sql.Identifier(database)))
        return cls(dsn)

    def enable_db(self) -> None:
        """``EXEC sys.sp_cdc_enable_db``."""
        self.execute("CALL sys.sp_cdc_enable_db()")

    def enable_table(self, schema: str, table: str, capture_instance: str | None = None) -> None:
        """``EXEC sys.sp_cdc_enable_table @source_schema, @source_name, @role_name = NULL[, @capture_instance]``."""
        self.execute("CALL sys.sp_cdc_enable_table(%s, %s, NULL, %s)", (schema, table, capture_instance))

    def disable_table(self, schema: str, table: str, capture_instance: str) -> None:
        self.execute("CALL sys.sp_cdc_disable_table(%s, %s, %s)", (schema, table, capture_instance))

    def execute(self, statement: str, params: tuple[Any, ...] = ()) -> None:
        """Runs PostgreSQL ``statement`` in autocommit (a source workload, or the setup calls)."""
        with psycopg.connect(self.dsn, autocommit=True) as conn:
            conn.execute(statement.encode() if not params else statement, params or None)  # type: ignore[arg-type]

    def dialect(self) -> Dialect:
        """The gateway's dialect for the emulator: T-SQL translated; ``snapshot`` isolation is
        PostgreSQL's REPEATABLE READ (a snapshot there), ``exclusive`` SERIALIZABLE."""
        return Dialect("the SQL Server CDC emulator (PostgreSQL)", to_postgres,
                       {"read_uncommitted": 1, "read_committed": 2, "repeatable_read": 4, "snapshot": 4,
                        "exclusive": 8})

    def connect(self) -> pyodbc.Connection:
        """A pyodbc connection (autocommit) through the PostgreSQL ODBC driver."""
        return pyodbc.connect(self.odbc_connection_string(), autocommit=True)

    def gateway(self) -> Gateway:
        """The connector's gateway on a new connection to the emulator."""
        return Gateway(self.connect(), self.dialect())

    def agent(self) -> CaptureAgent:
        return CaptureAgent(self.dsn)

    def odbc_connection_string(self) -> str:
        """The ODBC connection string of this database through the PostgreSQL ODBC driver."""
        info = conninfo_to_dict(self.dsn)
        parts = {"Driver": "{" + ODBC_DRIVER + "}", "Server": info.get("host", "127.0.0.1"),
                 "Port": info.get("port", "5432"), "Database": info["dbname"], "Uid": info.get("user", "postgres"),
                 "Pwd": info.get("password", ""), "ByteaAsLongVarBinary": "1", "BoolsAsChar": "0",
                 "ConnSettings": "SET TIME ZONE 'UTC'"}
        return ";".join(f"{k}={v}" for k, v in parts.items())
