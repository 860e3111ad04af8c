"""Decimals of at most 18 digits take a BIGINT path; it must be exactly as strict and exact as the
general one.

The oracle is Python: ``binascii.a2b_base64(strict_mode=True)`` for what base64 is, the bytes'
two's-complement integer, and `decimal.Decimal` for the value and whether it fits.
"""

from __future__ import annotations

import base64
import binascii
import json
import random
from decimal import Decimal

import pytest
from pyspark.sql import SparkSession
from pyspark.sql import functions as sf
from pyspark.sql.types import DecimalType, StringType, StructField, StructType

from silver.connect_schema import parse_connect_schema
from silver.types import codec_for
from silver.types.short_decimal import MAX_SHORT_PRECISION, short_decimal, short_unscaled
from tests.support.engines import SAIL_ONLY

pytestmark = pytest.mark.spark

MALFORMED = ["", "A", "AQI", "A===", "=AQI", "AQ=I", "AQ==AQ==", "AQI=\n", "not base64!", "AQ-_", "ÄQI="]


def _b64(unscaled: int) -> str:
    length = (unscaled.bit_length() if unscaled >= 0 else (~unscaled).bit_length()) // 8 + 1
    return base64.b64encode(unscaled.to_bytes(length, "big", signed=True)).decode()


def _oracle_int(text: str) -> int | None:
    try:
        raw = binascii.a2b_base64(text.encode("utf-8"), strict_mode=True)
    except binascii.Error:
        return None
    return int.from_bytes(raw, "big", signed=True) if raw else None


def _oracle(text: str, precision: int, scale: int) -> Decimal | None:
    unscaled = _oracle_int(text)
    if unscaled is None or abs(unscaled) >= 10**precision:
        return None
    return Decimal(f"{unscaled}e-{scale}")  # exact (scaleb would round to 28 digits)


def _boundary_ints() -> list[int]:
    ints = {0, 1, -1}
    for n in range(1, 10):  # the largest and smallest unscaled value of each byte length, and 9 bytes
        ints |= {2 ** (8 * n - 1) - 1, -(2 ** (8 * n - 1)), 2 ** (8 * (n - 1) - 1) if n > 1 else 0}
    for p in range(1, MAX_SHORT_PRECISION + 2):  # the limits of each precision
        ints |= {10**p - 1, -(10**p - 1), 10**p, -(10**p)}
    rng = random.Random(46)
    ints |= {rng.randrange(-(10 ** rng.randrange(1, 19)), 10 ** rng.randrange(1, 19)) for _ in range(20)}
    return sorted(ints)


def _check(spark: SparkSession, pairs: list[tuple[int, int]]) -> None:
    texts = [_b64(v) for v in _boundary_ints()] + MALFORMED
    frame = spark.createDataFrame([(i, t) for i, t in enumerate(texts)], "i int, b string")
    out = frame.select("i", short_unscaled(sf.col("b")).alias("u"),
                       *[short_decimal(sf.col("b"), p, s).alias(f"d{p}_{s}") for p, s in pairs]).orderBy("i")
    rows = out.collect()
    for p, s in pairs:
        assert out.schema[f"d{p}_{s}"].dataType == DecimalType(p, s)
    for row, text in zip(rows, texts, strict=True):
        expected_int = _oracle_int(text)
        assert row["u"] == (expected_int if expected_int is not None and -(2**63) <= expected_int < 2**63
                            else None), text
        got = {(p, s): row[f"d{p}_{s}"] for p, s in pairs}
        assert got == {(p, s): _oracle(text, p, s) for p, s in pairs}, text


@SAIL_ONLY
def test_every_precision_up_to_18_digits_matches_the_oracle(spark: SparkSession):
    # every precision; the scale at its ends and between (it only places the point)
    _check(spark, [(p, s) for p in range(1, MAX_SHORT_PRECISION + 1) for s in sorted({0, 1, p // 2, p - 1, p})])


def test_both_engines_agree_with_the_oracle_at_the_byte_and_precision_limits(spark: SparkSession):
    # classic Spark too: the shifts, conv and decimal arithmetic are each engine's own
    _check(spark, [(1, 0), (7, 3), (16, 2), (17, 17), (18, 0), (18, 9)])


@SAIL_ONLY
def test_the_decimal_codec_switches_paths_at_19_digits_and_stays_exact(spark: SparkSession):
    ints = [v for v in _boundary_ints() if abs(v) < 10**20] + [10**37 - 1, -(10**37) + 1, 2**120]
    for precision, scale in [(1, 0), (1, 1), (12, 2), (18, 0), (18, 18), (19, 0), (19, 4), (38, 10)]:
        schema = {"type": "bytes", "optional": True, "name": "org.apache.kafka.connect.data.Decimal",
                  "parameters": {"scale": str(scale), "connect.decimal.precision": str(precision)}}
        codec = codec_for(parse_connect_schema(schema))
        assert codec.target_type == DecimalType(precision, scale)
        texts = [_b64(v) for v in ints] + MALFORMED
        df = spark.createDataFrame([(i, json.dumps({"v": t})) for i, t in enumerate(texts)], "i int, j string")
        raw = sf.from_json("j", StructType([StructField("v", StringType())]))["v"]
        rows = (df.select("i", raw.alias("r")).select("i", "r", codec.decode(sf.col("r")).alias("d"))
                .select("i", "d", codec.mismatch(sf.col("r"), sf.col("d")).alias("m")).orderBy("i").collect())
        want = [_oracle(t, precision, scale) for t in texts]
        assert [r["d"] for r in rows] == want, (precision, scale)
        assert [r["m"] for r in rows] == [w is None for w in want], (precision, scale)


@SAIL_ONLY
def test_a_malformed_value_does_not_null_its_batch(spark: SparkSession):
    texts = ["AQI=", "not base64!", "/w==", "", "AQIDBAUGBwg="]
    df = spark.createDataFrame([(i, t) for i, t in enumerate(texts)], "i int, b string")
    got = [r["d"] for r in df.select("i", short_decimal(sf.col("b"), 18, 2).alias("d")).orderBy("i").collect()]
    assert got == [Decimal("2.58"), None, Decimal("-0.01"), None, Decimal("726238597903828.56")]


@SAIL_ONLY
def test_short_decimal_refuses_a_precision_it_cannot_hold(spark: SparkSession):
    with pytest.raises(ValueError, match="precision 19"):
        short_decimal(sf.col("b"), 19, 0)
    with pytest.raises(ValueError, match="scale 3"):
        short_decimal(sf.col("b"), 2, 3)
