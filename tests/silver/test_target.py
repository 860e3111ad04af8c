"""The silver table's storage: creation options, column adds on every engine, clustering on Sail."""

from __future__ import annotations

import pyarrow as pa
import pytest
from deltalake import DeltaTable, write_deltalake
from pyspark.sql.types import IntegerType, StringType, StructField, StructType

from silver.declarations import SilverTable
from silver.engine_traits import EngineTraits
from silver.errors import EngineCapabilityError
from silver.target import SilverTarget

pytestmark = pytest.mark.spark


def test_create_applies_partitioning_and_delta_properties(spark, root):
    decl = SilverTable(table="t", source="a.b.c", partition_by=["p"], rename={"p": "part"},
                       table_properties={"delta.checkpointInterval": "7"})
    target = SilverTarget.for_declaration(root, decl)
    schema = StructType([StructField("id", IntegerType(), nullable=False), StructField("part", StringType())])
    target.create(spark, spark.createDataFrame([(1, "x")], schema))
    table = DeltaTable(target.location)
    meta = table.metadata()
    assert (meta.partition_columns, meta.configuration.get("delta.checkpointInterval")) == (["part"], "7")
    written = spark.read.format("delta").load(target.location)
    assert all(f.nullable for f in written.schema.fields)  # NOT NULL in the frame: nullable in the table
    assert [tuple(r) for r in written.collect()] == [(1, "x")]
    # classic Delta writes nullable columns itself: one commit; Sail: the empty table, then the rows
    assert table.version() == (0 if EngineTraits.of(spark).writes_nullable else 1)


def test_add_columns_works_on_tables_with_non_nullable_columns(spark, root):
    # a table written elsewhere with NOT NULL columns: Sail ignores mergeSchema there -> rewrite
    location = f"{root}/silver/strict"
    schema = pa.schema([pa.field("id", pa.int32(), nullable=False), pa.field("v", pa.string())])
    write_deltalake(location, pa.Table.from_pylist([{"id": 1, "v": "a"}], schema=schema))
    target = SilverTarget("strict", location, None)
    current = spark.read.format("delta").load(location).schema
    target.add_columns(spark, [StructField("extra", StringType())], current)
    df = spark.read.format("delta").load(location)
    assert df.columns == ["id", "v", "extra"] and [tuple(r) for r in df.collect()] == [(1, "a", None)]


def test_cluster_by_is_a_clustered_table_on_spark_and_a_clear_error_on_sail(spark, engine, root):
    decl = SilverTable(table="c", source="a.b.c", cluster_by=["id"])
    target = SilverTarget.for_declaration(root, decl)
    if engine == "sail":  # differs on purpose: Sail 0.7.2 cannot create clustered (liquid) tables
        with pytest.raises(EngineCapabilityError, match="cannot create clustered tables"):
            target.create(spark, spark.createDataFrame([(1,)], "id int"))
        return
    target.create(spark, spark.createDataFrame([(1,), (2,)], "id int"))
    detail = spark.sql(f"DESCRIBE DETAIL {target.sql_ref()}").collect()[0]
    assert list(detail["clusteringColumns"]) == ["id"]
    assert sorted(r["id"] for r in spark.read.format("delta").load(target.location).collect()) == [1, 2]
