"""Pure units: Kafka Connect schema parsing, type widening, evolution planning, increment ranges."""

from __future__ import annotations

import pytest
from pyspark.sql.types import (
    ArrayType,
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    IntegerType,
    LongType,
    ShortType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from silver.bronze_reader import BronzeFiles, FileStat, plan_range
from silver.connect_schema import envelope_row, parse_connect_schema
from silver.errors import IncompatibleSchemaChangeError, SchemaHistoryError
from silver.evolution import plan_evolution
from silver.types import can_widen, widen


def test_parse_connect_schema_nested():
    s = parse_connect_schema({"type": "struct", "name": "x.Envelope", "fields": [
        {"type": "struct", "field": "after", "fields": [
            {"type": "bytes", "field": "p", "name": "org.apache.kafka.connect.data.Decimal",
             "parameters": {"scale": "2"}},
            {"type": "array", "field": "a", "items": {"type": "int32"}},
            {"type": "map", "field": "m", "keys": {"type": "string"}, "values": {"type": "string"}}]}]})
    row = envelope_row(s)
    assert [f.name for f in row.fields] == ["p", "a", "m"]
    p = row.field("p")
    assert p is not None and p.schema.param("scale") == "2" and p.schema.name.endswith("Decimal")


def test_json_converter_float_names():
    assert parse_connect_schema('{"type":"double"}').type == "float64"
    assert parse_connect_schema('{"type":"float"}').type == "float32"


def test_parse_connect_schema_errors():
    with pytest.raises(SchemaHistoryError, match="not a Kafka Connect schema"):
        parse_connect_schema('{"type": "weird"}')
    with pytest.raises(SchemaHistoryError, match="has no 'after'"):
        envelope_row(parse_connect_schema('{"type":"struct","fields":[]}'))


@pytest.mark.parametrize(("old", "new", "ok"), [
    (IntegerType(), LongType(), True), (ShortType(), IntegerType(), True), (LongType(), IntegerType(), False),
    (FloatType(), DoubleType(), True), (IntegerType(), DoubleType(), True), (LongType(), DoubleType(), False),
    (DecimalType(10, 2), DecimalType(12, 2), True), (DecimalType(10, 2), DecimalType(12, 4), True),
    (DecimalType(10, 2), DecimalType(10, 4), False), (IntegerType(), DecimalType(12, 2), True),
    (IntegerType(), DecimalType(10, 2), False), (DateType(), TimestampType(), True),
    (StringType(), IntegerType(), False), (ArrayType(IntegerType()), ArrayType(LongType()), True)])
def test_can_widen(old, new, ok):
    assert can_widen(old, new) is ok


def test_widen_structs_adds_fields():
    a = StructType([StructField("x", IntegerType())])
    b = StructType([StructField("x", LongType()), StructField("y", StringType())])
    assert widen(a, b) == StructType([StructField("x", LongType()), StructField("y", StringType())])


def _plan(mode, existing, batch):
    return plan_evolution("t", mode, StructType(existing), batch, [StructField("_cdc_seq", LongType())])


def test_plan_evolution_modes():
    existing = [StructField("id", IntegerType()), StructField("q", IntegerType()), StructField("gone", StringType()),
                StructField("_cdc_seq", LongType())]
    batch = [StructField("id", IntegerType()), StructField("q", LongType()), StructField("new", StringType())]
    plan = _plan("add_columns", existing, batch)
    assert ([f.name for f in plan.add], plan.widen, plan.absent) == (["new"], (("q", LongType()),), ("gone",))
    with pytest.raises(IncompatibleSchemaChangeError, match="changed type int -> bigint"):
        _plan("strict", existing, batch)
    with pytest.raises(IncompatibleSchemaChangeError, match="changed type int -> bigint"):
        _plan("ignore", existing, batch)
    narrowed = [StructField("id", IntegerType()), StructField("q", ShortType()), StructField("new", StringType())]
    plan = _plan("ignore", existing, narrowed)
    assert (plan.add, plan.cast_batch, plan.drop_from_batch) == ((), (("q", IntegerType()),), ("new",))


def test_plan_evolution_adds_missing_bookkeeping_columns_in_every_mode():
    plan = plan_evolution("t", "strict", StructType([StructField("id", IntegerType())]),
                          [StructField("id", IntegerType())], [StructField("_cdc_seq", LongType())])
    assert [f.name for f in plan.add] == ["_cdc_seq"]


def test_plan_range_reads_only_files_with_new_rows():
    files = BronzeFiles(5, (FileStat(1, 100, 100), FileStat(101, 200, 100), FileStat(201, 250, 50)))
    rng = plan_range(files, 150)
    assert rng is not None and (rng.after_seq, rng.upto_seq, rng.files_read, rng.files_total) == (150, 250, 2, 3)
    assert plan_range(files, 250) is None
    capped = plan_range(files, 0, max_rows=150)
    assert capped is not None and (capped.upto_seq, capped.files_read) == (200, 2)
    cut = plan_range(files, 0, upto_seq=120)
    assert cut is not None and (cut.upto_seq, cut.files_read) == (120, 2)
