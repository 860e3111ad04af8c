"""The silver Delta table itself: where it is, how it is addressed, created and altered.

A target is addressed by path (``delta.`<location>```) or by catalog name. Creation applies
the declaration's partitioning/clustering and ``delta.*`` table properties (as writer options,
which Delta and Sail both record as table properties at creation), Change Data Feed when
declared, and column mapping when a column name needs it. New columns are added with
``ALTER TABLE ... ADD COLUMNS`` where the engine has it (classic Spark); engines without it
(Sail) append an empty frame with ``mergeSchema``. Widened types rewrite the table with
``overwriteSchema`` (the cost of a full table rewrite, once per widening).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass

from pyspark.sql import DataFrame, DataFrameWriter, SparkSession
from pyspark.sql import functions as sf
from pyspark.sql.types import DataType, StructField, StructType

from silver.declarations import SilverTable
from silver.delta_io import read_delta_or_none
from silver.engine_traits import EngineTraits
from silver.errors import EngineCapabilityError
from silver.sql import column, qualified_table, quote, quote_path_table, string_literal
from silver.types.widening import convert

__all__ = ["COLUMN_MAPPING", "SilverTarget", "needs_column_mapping"]

log = logging.getLogger(__name__)

_RESERVED = frozenset(" ,;{}()\n\t=")
COLUMN_MAPPING = (("delta.columnMapping.mode", "name"), ("delta.minReaderVersion", "2"),
                  ("delta.minWriterVersion", "5"))
"""Delta column mapping by name: what lets a column be called ``full name`` (Delta otherwise
refuses the characters `` ,;{}()\\n\\t=`` in column names)."""


def needs_column_mapping(names: list[str]) -> bool:
    """True if a column name has a character Delta accepts only with column mapping."""
    return any(_RESERVED.intersection(name) for name in names)


@dataclass(frozen=True)
class SilverTarget:
    """One silver table's storage.

    Attributes:
        table: the declaration's table name (for messages).
        location: path or URI (None for a catalog-managed table).
        catalog_table: catalog name, if the table is addressed by name.
        partition_by: partition columns (silver names).
        cluster_by: clustering columns (silver names).
        properties: ``delta.*`` properties applied at creation.
        change_data_feed: the table is created with Delta's Change Data Feed.
    """

    table: str
    location: str | None
    catalog_table: str | None
    partition_by: tuple[str, ...] = ()
    cluster_by: tuple[str, ...] = ()
    properties: tuple[tuple[str, str], ...] = ()
    change_data_feed: bool = False

    @staticmethod
    def for_declaration(root: str, decl: SilverTable) -> SilverTarget:
        """The target of a declaration (default location ``<root>/silver/<table>``)."""
        location = decl.location
        if location is None and decl.catalog_table is None:
            location = f"{root.rstrip('/')}/silver/{decl.table}"
        return SilverTarget(decl.table, location, decl.catalog_table,
                            tuple(decl.silver_name(c) for c in decl.partition_by),
                            tuple(decl.silver_name(c) for c in decl.cluster_by),
                            tuple(sorted(decl.table_properties.items())), decl.change_data_feed)

    def sql_ref(self) -> str:
        """How SQL statements name the table."""
        if self.catalog_table is not None:
            return qualified_table(self.catalog_table.split("."))
        assert self.location is not None
        return quote_path_table(self.location)

    def read(self, spark: SparkSession) -> DataFrame | None:
        """The table, or None if it does not exist yet."""
        if self.catalog_table is not None:
            return spark.table(self.catalog_table) if spark.catalog.tableExists(self.catalog_table) else None
        assert self.location is not None
        return read_delta_or_none(spark, self.location)

    def _properties(self, columns: list[str]) -> dict[str, str]:
        """The table properties a new table gets: declared, Change Data Feed, column mapping."""
        properties = dict(self.properties)
        if self.change_data_feed:
            properties["delta.enableChangeDataFeed"] = "true"
        if needs_column_mapping(columns):
            properties = {**dict(COLUMN_MAPPING), **properties}
        return properties

    def _writer(self, df: DataFrame, mode: str) -> DataFrameWriter:
        writer = df.write.format("delta").mode(mode)
        if self.partition_by:
            writer = writer.partitionBy(*self.partition_by)
        if self.cluster_by:
            writer = writer.clusterBy(*self.cluster_by)
        for key, value in self._properties(df.columns).items():
            writer = writer.option(key, value)
        return writer

    def _create_clustered(self, spark: SparkSession, schema: StructType) -> None:
        """``CREATE TABLE … CLUSTER BY``: classic Spark's path writer ignores ``clusterBy``."""
        columns = ", ".join(f"{quote(f.name)} {f.dataType.simpleString()}" for f in schema.fields)
        sql = (f"CREATE TABLE {self.sql_ref()} ({columns}) USING DELTA "
               f"CLUSTER BY ({', '.join(quote(c) for c in self.cluster_by)})")
        if self.catalog_table is not None and self.location is not None:
            sql += f" LOCATION {string_literal(self.location)}"
        properties = self._properties(schema.names)
        if properties:
            sql += " TBLPROPERTIES (" + ", ".join(
                f"{string_literal(k)} = {string_literal(v)}" for k, v in properties.items()) + ")"
        try:
            spark.sql(sql)
        except Exception as exc:
            raise EngineCapabilityError(
                f"silver table {self.table!r}: this engine cannot create clustered tables "
                f"(cluster_by: {list(self.cluster_by)}): {(str(exc).strip().splitlines() or [''])[0]}; "
                "use partition_by, or run on Spark/Databricks", table=self.table) from exc

    def _save(self, writer: DataFrameWriter) -> None:
        try:
            if self.catalog_table is not None:
                if self.location is not None:
                    writer = writer.option("path", self.location)
                writer.saveAsTable(self.catalog_table)
            else:
                writer.save(self.location)
        except Exception as exc:
            text = str(exc).lower()
            if self.change_data_feed and "changedatafeed" in text.replace(" ", "").replace("_", ""):
                raise EngineCapabilityError(
                    f"silver table {self.table!r}: this engine cannot write Delta's Change Data Feed "
                    "(change_data_feed: true); run on Spark/Databricks, or leave it out", table=self.table) from exc
            raise

    def create(self, spark: SparkSession, df: DataFrame) -> None:
        """Create the table (every column nullable, so it can evolve) with its first rows.

        One commit where a write records every column nullable itself (classic Delta). Else (Sail
        keeps a frame's NOT NULL columns), and for clustered tables (created by DDL), the table is
        created empty with nullable columns, then the rows are appended: two commits, a crash in
        between leaves an empty table, which the next run fills by MERGE from the same increment.
        """
        if EngineTraits.of(spark).writes_nullable and not self.cluster_by:
            self._save(self._writer(df, "error"))
            return
        nullable = StructType([StructField(f.name, f.dataType, True) for f in df.schema.fields])
        if self.cluster_by:
            self._create_clustered(spark, nullable)
        else:
            self._save(self._writer(spark.createDataFrame([], nullable), "error"))
        self._append(df.write.format("delta").mode("append"))

    def _append(self, writer: DataFrameWriter) -> None:
        if self.catalog_table is not None:
            writer.saveAsTable(self.catalog_table)
        else:
            writer.save(self.location)

    def add_columns(self, spark: SparkSession, fields: list[StructField], current: StructType) -> None:
        """Add nullable columns (existing rows read null), without rewriting data when possible.

        ``ALTER TABLE ... ADD COLUMNS`` where the engine has it (classic Spark, Databricks); else
        an empty append with ``mergeSchema``. Some engines ignore that silently (Sail does when
        the table has non-nullable columns); then the table is rewritten instead.
        """
        if needs_column_mapping([f.name for f in fields]) and not needs_column_mapping(current.names):
            settings = ", ".join(f"'{k}' = '{v}'" for k, v in COLUMN_MAPPING)
            try:  # column mapping first (classic Spark); a table written with mapping keeps it
                spark.sql(f"ALTER TABLE {self.sql_ref()} SET TBLPROPERTIES ({settings})")
            except Exception as exc:  # Sail: the rewrite turns column mapping on
                log.debug("cannot turn column mapping on for %s (%s); rewriting it", self.table, exc)
                self.rewrite(spark, {}, fields)
                return
        columns = ", ".join(f"{quote(f.name)} {f.dataType.simpleString()}" for f in fields)
        try:
            spark.sql(f"ALTER TABLE {self.sql_ref()} ADD COLUMNS ({columns})")
            return
        except Exception as exc:  # no ALTER TABLE on this engine (Sail): the append below instead
            log.debug("ALTER TABLE ADD COLUMNS on %s failed (%s); appending with mergeSchema", self.table, exc)
        schema = StructType([*current.fields, *[StructField(f.name, f.dataType, True) for f in fields]])
        self._append(spark.createDataFrame([], schema).write.format("delta").mode("append")
                     .option("mergeSchema", "true"))
        after = self.read(spark)
        present = set() if after is None else set(after.columns)
        missing = [f for f in fields if f.name not in present]
        if missing:
            self.rewrite(spark, {}, missing)

    def rename_columns(self, spark: SparkSession, pairs: list[tuple[str, str]]) -> None:
        """Rename columns (``(old, new)`` in order), keeping every row's values.

        Delta column mapping where the engine can (classic Spark, Databricks): turned on when the
        table has it off (a protocol upgrade, no rewrite), then ``ALTER TABLE ... RENAME COLUMN``:
        metadata only. Engines without ``ALTER TABLE`` (Sail) rewrite the table once with the new
        names (``overwriteSchema``).
        """
        try:
            current = self.read(spark)
            mapped = current is not None and self._column_mapping_on(spark)
            if not mapped:
                settings = ", ".join(f"'{k}' = '{v}'" for k, v in COLUMN_MAPPING)
                spark.sql(f"ALTER TABLE {self.sql_ref()} SET TBLPROPERTIES ({settings})")
            for old, new in pairs:
                spark.sql(f"ALTER TABLE {self.sql_ref()} RENAME COLUMN {quote(old)} TO {quote(new)}")
            return
        except Exception as exc:  # no ALTER TABLE (Sail): rewrite with the new names
            log.debug("ALTER TABLE RENAME COLUMN on %s failed (%s); rewriting it", self.table, exc)
        current = self.read(spark)
        assert current is not None
        names = dict(pairs)
        for old, new in pairs:  # chained renames within one call (a -> b, b -> c)
            names = {k: (new if v == old else v) for k, v in names.items()}
        cols = [column(c).alias(names.get(c, c)) for c in current.columns]
        self._save(self._writer(current.select(*cols), "overwrite").option("overwriteSchema", "true"))

    def _column_mapping_on(self, spark: SparkSession) -> bool:
        try:
            rows = spark.sql(f"SHOW TBLPROPERTIES {self.sql_ref()}").collect()
        except Exception:  # engines without SHOW TBLPROPERTIES
            return False
        return any(r[0] == "delta.columnMapping.mode" and r[1] in ("name", "id") for r in rows)

    def rewrite(self, spark: SparkSession, new_types: Mapping[str, DataType], new_fields: list[StructField]) -> None:
        """Rewrite the table with columns cast to wider types and new null columns (full rewrite)."""
        current = self.read(spark)
        assert current is not None
        cols = [convert(column(f.name), f.dataType, new_types[f.name]).alias(f.name) if f.name in new_types
                else column(f.name) for f in current.schema.fields]
        cols += [sf.lit(None).cast(f.dataType).alias(f.name) for f in new_fields]
        writer = self._writer(current.select(*cols), "overwrite").option("overwriteSchema", "true")
        self._save(writer)
