"""Decimals are never rounded: exact text at any length, or a mismatch when a chosen type is too small.

The oracle is Python's own integer and `decimal` arithmetic on the bytes the test encodes.
"""

from __future__ import annotations

import base64
import json
import random
from decimal import Decimal
from typing import Any

import pytest
from pyspark.sql import functions as sf
from pyspark.sql.types import DecimalType, StringType, StructField, StructType

from silver.connect_schema import parse_connect_schema
from silver.types import TypeOptions, codec_for
from silver.types.numeric import digits_text

pytestmark = [pytest.mark.spark, pytest.mark.parametrize("engine", ["sail"], indirect=True)]

VSD = {"type": "struct", "optional": True, "name": "io.debezium.data.VariableScaleDecimal", "fields": [
    {"type": "int32", "optional": False, "field": "scale"}, {"type": "bytes", "optional": False, "field": "value"}]}


def _b64(unscaled: int) -> str:
    length = (unscaled.bit_length() if unscaled >= 0 else (~unscaled).bit_length()) // 8 + 1
    return base64.b64encode(unscaled.to_bytes(length, "big", signed=True)).decode()


def _decode(spark, schema: dict[str, Any], values: list[Any], options: TypeOptions | None = None
            ) -> list[tuple[Any, bool]]:
    codec = codec_for(parse_connect_schema(schema), options)
    df = spark.createDataFrame([(i, json.dumps({"v": v})) for i, v in enumerate(values)], "i int, j string")
    raw = sf.from_json("j", StructType([StructField("v", codec.raw_type)]))["v"]
    out = (df.select("i", raw.alias("r")).select("i", "r", codec.decode(sf.col("r")).alias("d"))
           .select("i", "d", codec.mismatch(sf.col("r"), sf.col("d")).alias("m")).orderBy("i").collect())
    return [(r["d"], bool(r["m"])) for r in out]


def test_digits_text_is_exact_at_any_length(spark):
    rng = random.Random(7)
    ints = [0, 1, -1, 127, 128, -128, -129, 255, -256, 2**63, -(2**63) - 1, 10**38, -(10**38),
            2**215 - 1, -(2**215), 10**64 - 1, -(10**200) + 3, 314159265358979323846]
    ints += [rng.randrange(-(10**rng.randrange(1, 120)), 10**rng.randrange(1, 120)) for _ in range(40)]
    df = spark.createDataFrame([(i, _b64(v)) for i, v in enumerate(ints)] + [(len(ints), "not base64!")],
                               "i int, b string")
    got = [r["t"] for r in df.select("i", digits_text(sf.col("b")).alias("t")).orderBy("i").collect()]
    assert got == [str(v) for v in ints] + [None]


def test_variable_scale_decimal_is_exact_text_by_default(spark):
    values = ["3.14159265358979323846", "-0.000000000000000000000000000000000001",
              "123456789012345678901234567890123456789012345678901234567890", "1e-60", "0", "-7.5", "1e5"]
    encoded = []
    for text in values:
        sign, digits, exponent = Decimal(text).as_tuple()
        assert isinstance(exponent, int)
        unscaled = int("".join(map(str, digits))) * (-1 if sign else 1)
        encoded.append({"scale": -exponent, "value": _b64(unscaled)})
    got = _decode(spark, VSD, encoded)
    assert all(not m for _, m in got)
    assert [Decimal(v) for v, _ in got] == [Decimal(t) for t in values]
    assert [v for v, _ in got][:2] == ["3.14159265358979323846", "-0.000000000000000000000000000000000001"]
    assert [v for v, _ in got][-1] == "100000"  # negative scale: zeros appended


def test_variable_scale_decimal_into_a_chosen_decimal_is_never_rounded(spark):
    opts = TypeOptions(DecimalType(38, 18))
    got = _decode(spark, VSD, [{"scale": 20, "value": _b64(314159265358979323846)},
                               {"scale": 2, "value": _b64(-314)},
                               {"scale": 0, "value": _b64(10**25)}], opts)
    assert got == [(None, True), (Decimal("-3.14"), False), (None, True)]


def test_decimals_above_38_digits_are_exact_strings(spark):
    wide = {"type": "bytes", "optional": True, "name": "org.apache.kafka.connect.data.Decimal",
            "parameters": {"scale": "30", "connect.decimal.precision": "65"}}
    codec = codec_for(parse_connect_schema(wide))
    assert codec.target_type == StringType()
    big = 10**65 - 1
    got = _decode(spark, wide, [_b64(big), _b64(-big), _b64(1), _b64(0)])
    assert [v for v, _ in got] == ["99999999999999999999999999999999999.999999999999999999999999999999",
                                   "-99999999999999999999999999999999999.999999999999999999999999999999",
                                   "0.000000000000000000000000000001", "0.000000000000000000000000000000"]


def test_decimal_without_precision_that_overflows_38_digits_is_a_mismatch(spark):
    money = {"type": "bytes", "optional": True, "name": "org.apache.kafka.connect.data.Decimal",
             "parameters": {"scale": "2"}}
    assert _decode(spark, money, [_b64(12345), _b64(10**45)]) == [(Decimal("123.45"), False), (None, True)]


def test_one_malformed_decimal_does_not_null_its_batch(spark):
    """Sail's ``try_to_binary`` returned null for every row of a batch holding one malformed base64
    value: every decimal of the batch was then quarantined."""
    fixed = {"type": "bytes", "optional": True, "name": "org.apache.kafka.connect.data.Decimal",
             "parameters": {"scale": "2", "connect.decimal.precision": "10"}}
    assert _decode(spark, fixed, [_b64(12345), "not base64!", _b64(-1)]) == [
        (Decimal("123.45"), False), (None, True), (Decimal("-0.01"), False)]


def test_decimal_38_keeps_its_extremes_and_a_39_digit_value_is_a_mismatch(spark):
    # the sum of 56-bit chunks must not pass beyond 38 digits on the way to -(10^38 - 1), and a
    # value of 39 digits must be a mismatch, not an error or a wrapped number
    ints = [10**38 - 1, -(10**38) + 1, 10**38 - 2**56, -(10**38) + 2**56, 10**38, -(10**38), 2**130, -(2**130), -1, 0]
    for scale in (0, 10):
        schema = {"type": "bytes", "optional": True, "name": "org.apache.kafka.connect.data.Decimal",
                  "parameters": {"scale": str(scale), "connect.decimal.precision": "38"}}
        got = _decode(spark, schema, [_b64(v) for v in ints])
        want = [Decimal(f"{v}e-{scale}") if abs(v) < 10**38 else None for v in ints]
        assert got == [(w, w is None) for w in want], scale
