"""Registering bronze tables under their catalog names, from the silver job's Spark session.

Capture writes bronze with delta-rs, which talks to no catalog, so the silver job registers the
bronze tables it reads (`pipelines.bronze_names`): once per session and topic, as soon as the
topic's table exists, with ``CREATE TABLE IF NOT EXISTS <name> USING DELTA LOCATION '<path>'``
(an external table: the data stays where capture writes it). A missing schema is created first.
A name that exists already is left as it is; when it points at another location, a warning
says so. Only the name and the location are given: no table properties, no storage credentials.

Works on classic Spark with Delta's catalog (``spark_catalog``), on Unity Catalog (Databricks),
and on Sail, whose catalog lives in its server's memory (registered again by each new server)
and takes ``catalog.schema`` as one nested schema of its own catalog.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

from pyspark.sql import SparkSession

from pipelines.bronze_names import BronzeTableName
from silver.errors import SilverTableError
from silver.sql import qualified_table, string_literal

__all__ = ["BronzeRegistrar", "BronzeRegistrationError"]

log = logging.getLogger(__name__)


class BronzeRegistrationError(SilverTableError):
    """A bronze table could not be registered under its catalog name."""


class BronzeRegistrar:
    """Registers bronze topics on one session, each once (see module doc). Not thread-safe.

    Args:
        spark: the silver job's session (a new session, e.g. after a Sail restart, needs a new registrar).
        names: topic -> its catalog name (`pipelines.bronze_names.bronze_table_names`).
        engine: the engine's kind, for messages (``sail``, ``spark``, ``connect``).
    """

    def __init__(self, spark: SparkSession, names: Mapping[str, BronzeTableName], engine: str) -> None:
        self.spark, self.names, self.engine = spark, dict(names), engine
        self.registered: set[str] = set()
        self._schemas: set[tuple[str, ...]] = set()

    def ensure(self, table: str, topic: str, location: str) -> None:
        """Register ``topic`` (its bronze table at ``location``, which exists) unless it has no catalog
        name or is registered already.

        Args:
            table: the silver table reading it (named in the error).

        Raises:
            BronzeRegistrationError: the engine refused; names the engine, the name and the topic.
        """
        name = self.names.get(topic)
        if name is None or topic in self.registered:
            return
        try:
            schema = name.parts[:-1]
            if schema not in self._schemas and not self.spark.catalog.databaseExists(".".join(schema)):
                self.spark.sql(f"CREATE SCHEMA IF NOT EXISTS {qualified_table(schema)}")
            self._schemas.add(schema)
            self.spark.sql(f"CREATE TABLE IF NOT EXISTS {qualified_table(name.parts)} USING DELTA "
                           f"LOCATION {string_literal(location)}")
        except Exception as exc:
            first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
            raise BronzeRegistrationError(
                f"silver table {table!r}: cannot register bronze topic {topic!r} as {name.dotted} on engine "
                f"{self.engine}: {first}", table=table) from exc
        self.registered.add(topic)
        found = self._location(name)
        if found is not None and _same_place(found) != _same_place(location):
            log.warning("%s exists already and points at %s, not at bronze topic %s's table %s; it was left as "
                        "it is (drop it, or give the source another bronze_catalog)", name.dotted, found, topic,
                        location)
        else:
            log.info("bronze topic %s is registered as %s", topic, name.dotted)

    def _location(self, name: BronzeTableName) -> str | None:
        """The location the catalog has for ``name`` (None if it does not say)."""
        try:
            rows = self.spark.sql(f"DESCRIBE TABLE EXTENDED {qualified_table(name.parts)}").collect()
        except Exception as exc:  # only a check: the table is registered
            log.debug("cannot describe %s: %s", name.dotted, exc)
            return None
        return next((str(r[1]) for r in rows if str(r[0]).strip() == "Location" and r[1]), None)


def _same_place(location: str) -> str:
    """A location compared by text: no ``file:`` scheme of a local path, no trailing slash."""
    if location.startswith("file:") and not location.startswith("file://"):
        location = location.removeprefix("file:")
    return location.removeprefix("file://").rstrip("/")
