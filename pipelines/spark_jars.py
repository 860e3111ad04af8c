"""Where a local classic Spark session finds the Delta Lake jars (no pyspark import here).

The versions are pinned together: pyspark ``SPARK_VERSION`` (constraints.txt), delta-spark
``DELTA_VERSION`` (PyPI and Maven Central, ``maven/pom.xml``). `scripts/setup.sh` copies the
jars once into `local_jar_dir`; a local session then loads them with ``spark.jars`` and needs
no network. Elsewhere (a wheel install on an ordinary machine) the session falls back to
delta-spark's ``configure_spark_with_delta_pip`` or ``spark.jars.packages``, which resolve
`DELTA_SPARK_PACKAGE` from Maven Central at start-up. See docs/engines.md.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["DELTA_SPARK_PACKAGE", "DELTA_SQL_CONF", "DELTA_VERSION", "JARS_ENV", "SPARK_BINARY", "local_jar_dir",
           "local_jars"]

DELTA_VERSION = "4.4.0"
"""delta-spark on PyPI and io.delta on Maven Central (4.4 is the first line built for Spark 4.2)."""

SPARK_BINARY = "4.2"
"""The Spark line the Delta artifact is built for (its artifact name carries it)."""

DELTA_SPARK_PACKAGE = f"io.delta:delta-spark_{SPARK_BINARY}_2.13:{DELTA_VERSION}"
"""The Delta Lake artifact a classic session loads when no local jars are present."""

DELTA_SQL_CONF = {
    "spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
    "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
}
"""The settings that make a classic session's SQL and default catalog Delta Lake's."""

JARS_ENV = "CDC_SPARK_JARS"
"""Names a folder of jars to load instead of the checkout's cache."""

_CHECKOUT = Path(__file__).resolve().parents[1]


def local_jar_dir() -> Path:
    """The folder `scripts/setup.sh` fills (``$CDC_SPARK_JARS`` or the checkout's ``.cache``)."""
    override = os.environ.get(JARS_ENV)
    if override:
        return Path(override)
    return _CHECKOUT / ".cache" / "spark-jars" / f"delta-{DELTA_VERSION}_spark-{SPARK_BINARY}_s3a_azure_gcs"


def local_jars() -> list[str]:
    """The jar files of a complete local folder, sorted; empty when there is none."""
    folder = local_jar_dir()
    if not (folder / ".complete").exists():
        return []
    return sorted(str(p) for p in folder.glob("*.jar"))
