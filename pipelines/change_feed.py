"""One silver table's change feed for a declarative pipeline (the sources ``cdc-lakehouse
bundle pipelines`` writes call it when the pipeline runs).

`ChangeFeed.load` reads the pipeline file (without its secrets or connector drivers: it
connects to no database), finds the silver table's declaration, reads the bronze topic's
schema history and plans its decoding as the silver runner does (the same placeholder and
``variable_scale_decimal`` options); `ChangeFeed.stream` / `ChangeFeed.batch` then read bronze
and flatten it (`silver.flatten`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.types import DecimalType

from bronze.schema import topic_path
from cdc_sources.spi import ConfigError, ConfigProblem
from pipelines.silver_runner import source_of_topic
from pipelines.validation import load_validated
from silver.cast_types import parse_cast_type
from silver.declarations import SilverTable
from silver.decode import DecodePlan
from silver.flatten import flatten
from silver.schema_history import load_topic_schemas
from silver.types import Placeholder, TypeOptions

__all__ = ["ChangeFeed"]


@dataclass(frozen=True)
class ChangeFeed:
    """A silver table's flattened bronze events (see module doc)."""

    table: SilverTable
    bronze_path: str
    plan: DecodePlan

    @staticmethod
    def load(spark: SparkSession, pipeline_file: str | Path, table: str) -> ChangeFeed:
        """The change feed of silver table ``table`` declared in ``pipeline_file``.

        Raises:
            ConfigError: the file is invalid, or declares no silver table ``table``.
            SchemaHistoryError / KeyResolutionError: the schema history cannot be read or names no key.
        """
        config = load_validated(pipeline_file, secrets=False, connectors=False).config
        decl = next((t for t in config.silver if t.table == table), None)
        if decl is None:
            declared = ", ".join(t.table for t in config.silver) or "none"
            raise ConfigError([ConfigProblem("silver", f"{pipeline_file}: no silver table {table!r} "
                                                       f"(declared: {declared})")])
        root = config.lakehouse.root
        source = source_of_topic(decl.source, config.topic_prefixes())
        options = config.silver_options
        vsd = parse_cast_type(options.variable_scale_decimal)
        plan = DecodePlan.build(decl, load_topic_schemas(spark, root, source, decl.source),
                                placeholder=Placeholder(options.unavailable_value_placeholder),
                                type_options=TypeOptions(vsd) if isinstance(vsd, DecimalType) else TypeOptions())
        return ChangeFeed(decl, topic_path(root, decl.source), plan)

    @property
    def keys(self) -> list[str]:
        """The silver key columns, in key order."""
        return [c.silver for c in self.plan.key_columns]

    def stream(self, spark: SparkSession, *, truncates: bool = False) -> DataFrame:
        """The feed as a stream over the bronze Delta table (``truncates``: see `silver.flatten`)."""
        return flatten(spark.readStream.format("delta").load(self.bronze_path), self.plan, truncates=truncates)

    def batch(self, spark: SparkSession, *, truncates: bool = False) -> DataFrame:
        """The feed of the bronze table as it is now."""
        return flatten(spark.read.format("delta").load(self.bronze_path), self.plan, truncates=truncates)
