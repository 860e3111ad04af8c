"""Classic Spark runs the decoding in generated code.

A projection holding a lambda (``filter(array, x -> ...)``) is evaluated without code
generation on classic Spark, every expression of it interpreted row by row; the columns silver
lists per row (``__cdc_unavailable``) are built without one (`silver.name_lists`).
"""

from __future__ import annotations

import pytest
from pyspark.sql import SparkSession
from pyspark.sql.types import ArrayType, StringType

from silver.decode import UNAVAILABLE
from silver.name_lists import names_where
from tests.silver.types.test_floats import ID, bronze, envelope, field, plan_for, version

NAME = field("name", {"type": "string"})
QTY = field("qty", {"type": "int32"})


def _line_computing(plan_text: str, name: str) -> str:
    lines = [line for line in plan_text.splitlines() if f"AS {name}#" in line]
    assert len(lines) == 1, plan_text
    return lines[0]


@pytest.mark.parametrize("engine", ["spark"], indirect=True)
def test_the_projection_listing_unavailable_columns_is_code_generated(spark: SparkSession):
    plan = plan_for(version("v1", [ID, NAME, QTY]))
    rows = [('{"id":1}', envelope('{"id":1,"name":"__debezium_unavailable_value","qty":3}', "u"), "u"),
            ('{"id":2}', envelope('{"id":2,"name":"b","qty":4}'), "c")]
    df = plan.decode(bronze(spark, rows))
    executed = df._jdf.queryExecution().executedPlan().toString()
    line = _line_computing(executed, UNAVAILABLE)
    assert line.lstrip(" :+-").startswith("*("), line  # *(n): inside a WholeStageCodegen stage
    assert "lambdafunction" not in executed
    got = sorted((r["id"], r["name"], list(r[UNAVAILABLE])) for r in df.collect())
    assert got == [(1, None, ["name"]), (2, "b", [])]


def test_names_where_keeps_order_treats_null_flags_as_false_and_has_the_list_type(spark: SparkSession):
    from pyspark.sql import functions as sf

    df = spark.createDataFrame([(True, None, True), (False, False, None)], "a boolean, b boolean, c boolean")
    out = df.select(names_where([("c", sf.col("c")), ("a", sf.col("a")), ("b", sf.col("b"))]).alias("l"),
                    names_where([]).alias("none"))
    assert [(list(r["l"]), list(r["none"])) for r in out.collect()] == [(["c", "a"], []), ([], [])]
    # the type of the lists built otherwise (staged, unioned with them): elements may be null
    assert out.schema["l"].dataType == out.schema["none"].dataType == ArrayType(StringType(), containsNull=True)
