"""Every Debezium / Kafka Connect type the PostgreSQL connector emits, decoded into Spark types."""

from __future__ import annotations

import base64
import datetime as dt
import json
from decimal import Decimal
from typing import Any

import pytest
from pyspark.sql import functions as sf
from pyspark.sql.types import StructField, StructType

from silver.connect_schema import parse_connect_schema
from silver.types import Placeholder, codec_for
from tests.silver.bronze_builder import PLACEHOLDER, enc_decimal

pytestmark = pytest.mark.spark

PH = Placeholder()


def decode(spark, schema: dict[str, Any], *values: Any) -> list[tuple[Any, bool, bool]]:
    """(decoded value, mismatch, unavailable) for JSON values of a field with ``schema``."""
    codec = codec_for(parse_connect_schema(schema))
    texts = [(i, json.dumps({"v": v})) for i, v in enumerate(values)]
    df = spark.createDataFrame(texts, "i int, j string")
    raw = sf.from_json("j", StructType([StructField("v", codec.raw_type)]))["v"]
    step = df.select("i", raw.alias("r")).select("i", "r", codec.decode(sf.col("r")).alias("d"))
    flag = codec.unavailable(sf.col("r"), PH)
    out = step.select("i", "d", codec.mismatch(sf.col("r"), sf.col("d")).alias("m"),
                      (flag if flag is not None else sf.lit(False)).alias("u")).orderBy("i").collect()
    return [(r["d"], bool(r["m"]), bool(r["u"])) for r in out]


def values(spark, schema: dict[str, Any], *vals: Any) -> list[Any]:
    return [d for d, _, _ in decode(spark, schema, *vals)]


def t(type_: str, name: str | None = None, **params: str) -> dict[str, Any]:
    out: dict[str, Any] = {"type": type_, "optional": True}
    if name:
        out["name"] = name
    if params:
        out["parameters"] = params
    return out


def test_integers_reject_values_that_do_not_fit(spark):
    assert decode(spark, t("int8"), 127, 128) == [(127, False, False), (None, True, False)]
    assert decode(spark, t("int16"), -32768, 40000) == [(-32768, False, False), (None, True, False)]
    assert decode(spark, t("int32"), 2147483647, 2147483648, "x", None) == [
        (2147483647, False, False), (None, True, False), (None, True, False), (None, False, False)]
    assert values(spark, t("int64"), 9223372036854775807, -1) == [9223372036854775807, -1]


def test_floats_booleans_strings(spark):
    assert values(spark, t("float32"), 1.5) == [1.5]
    assert values(spark, t("float64"), 1e300, -0.1) == [1e300, -0.1]
    assert values(spark, t("boolean"), True, False) == [True, False]
    assert decode(spark, t("string"), "x", PLACEHOLDER) == [("x", False, False), (PLACEHOLDER, False, True)]


def test_bytes_are_base64_and_the_placeholder_is_its_bytes(spark):
    ph = base64.b64encode(PLACEHOLDER.encode()).decode()
    assert decode(spark, t("bytes"), "AQI=", ph) == [(b"\x01\x02", False, False), (PLACEHOLDER.encode(), False, True)]
    assert decode(spark, t("bytes"), "not base64!")[0][1] is True


def test_decimal_bytes_with_scale_and_precision(spark):
    s = t("bytes", "org.apache.kafka.connect.data.Decimal", scale="2", **{"connect.decimal.precision": "10"})
    got = values(spark, s, enc_decimal("-12.34", 2), enc_decimal("0", 2), enc_decimal("99999999.99", 2),
                 enc_decimal("-0.01", 2), enc_decimal("127", 2), enc_decimal("-128", 2))
    assert got == [Decimal("-12.34"), Decimal("0.00"), Decimal("99999999.99"), Decimal("-0.01"),
                   Decimal("127.00"), Decimal("-128.00")]


def test_decimal_up_to_38_digits_and_without_precision(spark):
    s38 = t("bytes", "org.apache.kafka.connect.data.Decimal", scale="4", **{"connect.decimal.precision": "38"})
    big = "-1234567890123456789012345678901234.5678"
    assert values(spark, s38, enc_decimal(big, 4), enc_decimal("9" * 34 + ".9999", 4)) == [
        Decimal(big), Decimal("9" * 34 + ".9999")]
    money = t("bytes", "org.apache.kafka.connect.data.Decimal", scale="3")
    codec = codec_for(parse_connect_schema(money))
    assert codec.target_type.simpleString() == "decimal(38,3)"
    assert values(spark, money, enc_decimal("12345678901234567890.123", 3)) == [Decimal("12345678901234567890.123")]


def test_decimal_that_overflows_its_precision_is_a_mismatch(spark):
    s = t("bytes", "org.apache.kafka.connect.data.Decimal", scale="2", **{"connect.decimal.precision": "4"})
    assert decode(spark, s, enc_decimal("12.34", 2), enc_decimal("123.45", 2))[1] == (None, True, False)


def test_variable_scale_decimal(spark):
    s = {"type": "struct", "optional": True, "name": "io.debezium.data.VariableScaleDecimal", "fields": [
        {"type": "int32", "optional": False, "field": "scale"}, {"type": "bytes", "optional": False, "field": "value"}]}
    got = values(spark, s, {"scale": 3, "value": enc_decimal("-1.234", 3)},
                 {"scale": 0, "value": enc_decimal("123456789012345678", 0)}, None)
    assert got == ["-1.234", "123456789012345678", None]


def test_dates_times_and_timestamps(spark):
    assert values(spark, t("int32", "io.debezium.time.Date"), 18000, -1) == [
        dt.date(2019, 4, 14), dt.date(1969, 12, 31)]
    assert values(spark, t("int32", "org.apache.kafka.connect.data.Date"), 0) == [dt.date(1970, 1, 1)]
    assert values(spark, t("int32", "io.debezium.time.Time"), 3723004) == ["01:02:03.004000"]
    assert values(spark, t("int64", "io.debezium.time.MicroTime"), 45296789012) == ["12:34:56.789012"]
    assert values(spark, t("int64", "io.debezium.time.NanoTime"), 45296789012345) == ["12:34:56.789012"]
    assert values(spark, t("int32", "org.apache.kafka.connect.data.Time"), 1000) == ["00:00:01.000000"]
    ts = dt.datetime(2018, 6, 20, 15, 13, 16, 945104)
    assert values(spark, t("int64", "io.debezium.time.MicroTimestamp"), 1529507596945104) == [ts]
    assert values(spark, t("int64", "io.debezium.time.NanoTimestamp"), 1529507596945104000) == [ts]
    assert values(spark, t("int64", "io.debezium.time.Timestamp"), 1529507596945) == [ts.replace(microsecond=945000)]
    assert values(spark, t("int64", "org.apache.kafka.connect.data.Timestamp"), 0) == [dt.datetime(1970, 1, 1)]


def _timestamps(spark, schema: dict[str, Any], *vals: Any) -> list[dt.datetime]:
    """Decoded timestamps read as microseconds since the epoch: classic pyspark's ``collect``
    cannot turn 0001-01-01 into a Python datetime (``fromtimestamp``: year 0 is out of range)."""
    codec = codec_for(parse_connect_schema(schema))
    df = spark.createDataFrame([(i, json.dumps({"v": v})) for i, v in enumerate(vals)], "i int, j string")
    raw = sf.from_json("j", StructType([StructField("v", codec.raw_type)]))["v"]
    out = df.select("i", sf.unix_micros(codec.decode(raw)).alias("us")).orderBy("i").collect()
    return [dt.datetime(1970, 1, 1) + dt.timedelta(microseconds=r["us"]) for r in out]


def test_infinity_timestamps_clamp_to_the_spark_range(spark):
    got = _timestamps(spark, t("int64", "io.debezium.time.MicroTimestamp"), 9223372036825200000,
                      -9223372036832400000)
    assert got == [dt.datetime(9999, 12, 31, 23, 59, 59, 999999), dt.datetime(1, 1, 1)]
    zoned = t("string", "io.debezium.time.ZonedTimestamp")
    assert _timestamps(spark, zoned, "2018-06-20T13:13:16.945104Z", "infinity") == [
        dt.datetime(2018, 6, 20, 13, 13, 16, 945104), dt.datetime(9999, 12, 31, 23, 59, 59, 999999)]


def test_iso_and_zoned_strings(spark):
    assert values(spark, t("string", "io.debezium.time.ZonedTime"), "13:13:16.945104Z") == ["13:13:16.945104Z"]
    assert values(spark, t("string", "io.debezium.time.IsoDate"), "2017-09-15Z") == [dt.date(2017, 9, 15)]
    assert values(spark, t("string", "io.debezium.time.IsoTimestamp"), "2019-07-09T02:28:57.123456Z") == [
        dt.datetime(2019, 7, 9, 2, 28, 57, 123456)]
    assert values(spark, t("string", "io.debezium.time.IsoTime"), "04:05:11.789Z") == ["04:05:11.789Z"]


def test_durations_and_intervals(spark):
    assert values(spark, t("int64", "io.debezium.time.MicroDuration"), 3_600_000_000) == [3_600_000_000]
    assert values(spark, t("string", "io.debezium.time.Interval"), "P1Y2M3DT4H5M6.78S") == ["P1Y2M3DT4H5M6.78S"]


def test_string_logical_types(spark):
    for name in ("Json", "Xml", "Uuid", "Enum", "Ltree"):
        s = t("string", f"io.debezium.data.{name}")
        assert decode(spark, s, "v", PLACEHOLDER) == [("v", False, False), (PLACEHOLDER, False, True)]
    hstore_json = f'{{"{PLACEHOLDER}":"{PLACEHOLDER}"}}'
    assert decode(spark, t("string", "io.debezium.data.Json"), hstore_json)[0][2] is True
    assert values(spark, t("string", "io.debezium.data.EnumSet"), "a,b", "") == [["a", "b"], []]


def test_bits_are_little_endian_bytes_shown_msb_first(spark):
    assert values(spark, t("bytes", "io.debezium.data.Bits", length="3"), base64.b64encode(b"\x05").decode()) == ["101"]
    ten = base64.b64encode((513).to_bytes(2, "little")).decode()
    assert values(spark, t("bytes", "io.debezium.data.Bits", length="10"), ten) == ["1000000001"]


def test_point_geometry_geography(spark):
    wkb = base64.b64encode(bytes.fromhex("0101000000000000000000F03F0000000000000040")).decode()
    point = {"type": "struct", "optional": True, "name": "io.debezium.data.geometry.Point", "fields": [
        {"type": "float64", "optional": False, "field": "x"}, {"type": "float64", "optional": False, "field": "y"},
        {"type": "bytes", "optional": True, "field": "wkb"}, {"type": "int32", "optional": True, "field": "srid"}]}
    got = decode(spark, point, {"x": 1.0, "y": 2.0, "wkb": wkb, "srid": None},
                 {"x": -99999999.0, "y": -99999999.0, "wkb": None, "srid": None})
    assert (got[0][0]["x"], got[0][0]["y"], got[0][0]["srid"], got[0][1], got[0][2]) == (1.0, 2.0, None, False, False)
    assert got[1][2] is True
    geometry = {"type": "struct", "optional": True, "name": "io.debezium.data.geometry.Geometry", "fields": [
        {"type": "bytes", "optional": False, "field": "wkb"}, {"type": "int32", "optional": True, "field": "srid"}]}
    ph_wkb = base64.b64encode(bytes.fromhex("0101000020E6100000000000FC83D797C1000000FC83D797C1")).decode()
    got = decode(spark, geometry, {"wkb": wkb, "srid": 4326}, {"wkb": ph_wkb, "srid": 4326})
    assert (bytes(got[0][0]["wkb"]), got[0][0]["srid"], got[1][2]) == (base64.b64decode(wkb), 4326, True)


def test_arrays_and_their_placeholders(spark):
    ints = {"type": "array", "optional": True, "items": {"type": "int32", "optional": True}}
    number_ph = [int(b) for b in PLACEHOLDER.encode()]
    assert decode(spark, ints, [1, None, 3], [1, "x"], number_ph) == [
        ([1, None, 3], False, False), ([1, None], True, False), (number_ph, False, True)]
    texts = {"type": "array", "optional": True, "items": {"type": "string", "optional": True}}
    assert decode(spark, texts, ["a"], [PLACEHOLDER]) == [(["a"], False, False), ([PLACEHOLDER], False, True)]
    dates = {"type": "array", "optional": True, "items": t("int32", "io.debezium.time.Date")}
    assert values(spark, dates, [0, 1]) == [[dt.date(1970, 1, 1), dt.date(1970, 1, 2)]]
    uuids = {"type": "array", "optional": True, "items": t("string", "io.debezium.data.Uuid")}
    assert decode(spark, uuids, [PH.uuid])[0][2] is True


def test_hstore_map_mode_and_its_placeholder(spark):
    m = {"type": "map", "optional": True, "keys": {"type": "string", "optional": False},
         "values": {"type": "string", "optional": True}}
    assert decode(spark, m, {"a": "1", "b": None}, {PLACEHOLDER: PLACEHOLDER}) == [
        ({"a": "1", "b": None}, False, False), ({PLACEHOLDER: PLACEHOLDER}, False, True)]
    typed = {"type": "map", "optional": True, "keys": {"type": "string", "optional": False},
             "values": {"type": "int32", "optional": True}}
    assert decode(spark, typed, {"a": 1}, {"a": "x"}) == [({"a": 1}, False, False), ({"a": None}, True, False)]


def test_unknown_logical_names_fall_back_to_the_physical_type(spark):
    assert values(spark, t("int32", "io.debezium.time.Year"), 2024) == [2024]
    assert values(spark, t("string", "some.vendor.Type"), "x") == ["x"]
