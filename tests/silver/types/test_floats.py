"""FLOAT64/FLOAT32 fields decode bit for bit: silver holds exactly the value bronze's digits name.

Sail 0.7's ``from_json`` parses JSON numbers with an inexact float parser (about one random
double in five comes out one unit in the last place off, even when the field is read as a
string), so silver re-reads floats from the envelope text (`silver.types.Codec.exact`). These
tests decode through `DecodePlan.decode`, the path silver runs, on the shared Sail session.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import random
import struct
from typing import Any

import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as sf

from cdc_sources.common.javacompat import double_to_string, float32
from silver.connect_schema import parse_connect_schema
from silver.declarations import SilverTable
from silver.decode import REASON, SEQ, DecodePlan
from silver.schema_history import TopicSchema
from silver.types import Placeholder

pytestmark = pytest.mark.spark

_BRONZE = "seq bigint, key string, op string, value string, schema_id string, headers map<string,string>"
_SOURCE = '"source":{"ts_ms":1700000000000,"txId":1,"lsn":16,"snapshot":"false"}'
_SPECIALS = {'"NaN"': math.nan, '"Infinity"': math.inf, '"-Infinity"': -math.inf}


def field(name: str, schema: dict[str, Any], optional: bool = True) -> dict[str, Any]:
    return {**schema, "optional": optional, "field": name}


F64 = {"type": "float64"}
F32 = {"type": "float32"}
ID = field("id", {"type": "int64"}, optional=False)


def version(schema_id: str, fields: list[dict[str, Any]], pk: tuple[str, ...] = ("id",)) -> TopicSchema:
    row = parse_connect_schema({"type": "struct", "optional": True, "fields": fields})
    by_name = {f["field"]: f for f in fields}
    key = parse_connect_schema({"type": "struct", "optional": False, "fields": [by_name[k] for k in pk]})
    return TopicSchema(schema_id, pk, key, row, dt.datetime(2024, 1, 1, tzinfo=dt.UTC))


def plan_for(*versions: TopicSchema, keys: list[str] | None = None) -> DecodePlan:
    return DecodePlan.build(
        SilverTable(table="t", source="s.public.t", keys=keys), list(versions), placeholder=Placeholder()
    )


def envelope(after: str | None, op: str = "c", before: str = "null") -> str:
    return f'{{"before":{before},"after":{after or "null"},{_SOURCE},"op":"{op}","ts_ms":1}}'


def bronze(spark: SparkSession, rows: list[tuple[str, str | None, str]], schema_id: str = "v1") -> DataFrame:
    """(key text, envelope text, op) rows, seq in list order."""
    return spark.createDataFrame([(i, k, op, v, schema_id, None) for i, (k, v, op) in enumerate(rows)], _BRONZE)


def decoded(plan: DecodePlan, df: DataFrame, *cols: str) -> list[tuple[Any, ...]]:
    out = plan.decode(df).orderBy(SEQ).select(REASON, *cols).collect()
    return [tuple(r) for r in out]


def same(got: float | None, want: float | None, fmt: str = ">d") -> bool:
    """Bit-for-bit equal (NaN equals NaN; -0.0 differs from 0.0)."""
    if got is None or want is None:
        return got is want
    if math.isnan(want):
        return math.isnan(got)
    return struct.pack(fmt, got) == struct.pack(fmt, want)


def hard_doubles(rng: random.Random) -> list[float]:
    """Random bit patterns, 17-digit values near 1, subnormals, and the extremes."""
    out = []
    while len(out) < 1500:
        x = struct.unpack(">d", rng.getrandbits(64).to_bytes(8, "big"))[0]
        if math.isfinite(x):
            out.append(x)
    out += [rng.uniform(-1, 1) for _ in range(1000)]
    out += [struct.unpack(">d", rng.getrandbits(52).to_bytes(8, "big"))[0] for _ in range(300)]  # subnormals
    out += [
        -0.9254135096013949,
        5e-324,
        -5e-324,
        2.225073858507201e-308,
        2.2250738585072014e-308,
        1e308,
        -1e308,
        1.7976931348623157e308,
        -1.7976931348623157e308,
        0.1,
        1e23,
        9007199254740993.0,
        -0.0,
        0.0,
    ]
    return out


def texts(x: float, i: int) -> str:
    """The number as JSON, in Python's, orjson's (bronze) or Java's (Debezium) spelling."""
    return (repr(x), repr(x).replace("e+", "e"), double_to_string(x))[i % 3]


def test_doubles_are_bit_exact_in_every_spelling(spark):
    values = hard_doubles(random.Random(20240601))
    cases: list[tuple[str, float | None]] = [(texts(x, i), x) for i, x in enumerate(values)]
    cases += [*_SPECIALS.items(), ("null", None), ("4.9E-324", 5e-324), ("1.0E308", 1e308), ("-0.0", -0.0)]
    plan = plan_for(version("v1", [ID, field("v", F64)]))
    rows = [(f'{{"id":{i}}}', envelope(f'{{"id":{i},"v":{text}}}'), "c") for i, (text, _) in enumerate(cases)]
    got = decoded(plan, bronze(spark, rows), "v")
    wrong = [
        (text, want, v)
        for (text, want), (reason, v) in zip(cases, got, strict=True)
        if reason is not None or not same(v, want)
    ]
    assert wrong == []


def float_text(x: float) -> str:
    """The shortest digits that name the binary32 ``x``, with a point (``-0.0``, ``3.0``) as
    ``Float.toString`` writes them."""
    for digits in range(1, 10):
        text = f"{x:.{digits}g}"
        text = text if any(c in text for c in ".e") else text + ".0"
        try:
            if float32(float(text)) == x:
                return text
        except OverflowError:  # rounds beyond the largest float
            continue
    return repr(x)


def test_floats_are_bit_exact(spark):
    rng = random.Random(7)
    values = [float32(struct.unpack(">f", rng.getrandbits(32).to_bytes(4, "big"))[0]) for _ in range(1500)]
    largest = struct.unpack(">f", bytes.fromhex("7f7fffff"))[0]
    values = [x for x in values if math.isfinite(x)] + [float32(v) for v in (1.4e-45, -1.1754942e-38, 0.1, -0.0)]
    values += [largest, -largest]
    cases: list[tuple[str, float | None]] = [(float_text(x), x) for x in values]
    cases += [*_SPECIALS.items(), ("null", None)]
    plan = plan_for(version("v1", [ID, field("f", F32)]))
    rows = [(f'{{"id":{i}}}', envelope(f'{{"id":{i},"f":{text}}}'), "c") for i, (text, _) in enumerate(cases)]
    got = decoded(plan, bronze(spark, rows), "f")
    wrong = [
        (text, want, v)
        for (text, want), (reason, v) in zip(cases, got, strict=True)
        if reason is not None or not same(v, want, ">f")
    ]
    assert wrong == []


def test_arrays_of_floats_and_point_coordinates_are_exact(spark):
    hard = hard_doubles(random.Random(3))[:40]
    f32 = [float32(x) for x in (0.1, 3.3, -7.7e-12)]
    point = {
        "type": "struct",
        "name": "io.debezium.data.geometry.Point",
        "fields": [
            field("x", F64, optional=False),
            field("y", F64, optional=False),
            field("wkb", {"type": "bytes"}),
            field("srid", {"type": "int32"}),
        ],
    }
    plan = plan_for(
        version(
            "v1",
            [
                ID,
                field("a", {"type": "array", "items": {**F64, "optional": True}}),
                field(
                    "vec",
                    {"type": "array", "name": "io.debezium.data.FloatVector", "items": {**F32, "optional": False}},
                ),
                field("p", point),
            ],
        )
    )
    arrays = [
        ("[" + ",".join(texts(x, i) for i, x in enumerate(hard)) + "]", hard),
        ('[ -0.9254135096013949 , "NaN",null, "-Infinity" ]', [-0.9254135096013949, math.nan, None, -math.inf]),
        ("[]", []),
        ("null", None),
    ]
    rows = []
    for i, (a, _) in enumerate(arrays):
        x, y = hard[i], hard[-1 - i]
        vec = "[" + ",".join(float_text(v) for v in f32) + "]"
        p = f'{{"x":{texts(x, i)},"y":{texts(y, i + 1)},"wkb":null,"srid":4326}}'
        rows.append((f'{{"id":{i}}}', envelope(f'{{"id":{i},"a":{a},"vec":{vec},"p":{p}}}'), "c"))
    got = decoded(plan, bronze(spark, rows), "a", "vec", "p")
    for i, ((reason, a, vec, p), (_, want)) in enumerate(zip(got, arrays, strict=True)):
        assert reason is None
        assert (a is None) == (want is None)
        assert a is None or want is None or (len(a) == len(want) and all(map(same, a, want))), (a, want)
        assert all(same(v, w, ">f") for v, w in zip(vec, f32, strict=True)), vec
        assert (same(p["x"], hard[i]), same(p["y"], hard[-1 - i]), p["srid"]) == (True, True, 4326)


def test_double_keys_are_exact_in_after_key_and_before(spark):
    hard = hard_doubles(random.Random(11))[:300]
    pk_plan = plan_for(version("v1", [field("k", F64, optional=False), field("n", {"type": "int32"})], pk=("k",)))
    rows = [(f'{{"k":{texts(x, i)}}}', envelope(f'{{"k":{texts(x, i)},"n":{i}}}'), "c") for i, x in enumerate(hard)]
    rows += [
        (f'{{"k":{texts(x, i)}}}', envelope(None, "d", f'{{"k":{texts(x, i)},"n":null}}'), "d")
        for i, x in enumerate(hard)
    ]
    got = decoded(pk_plan, bronze(spark, rows), "k")
    assert [r[0] for r in got] == [None] * len(rows)
    assert all(same(r[1], x) for r, x in zip(got, hard + hard, strict=True))
    # a declared (non primary) key: deletes carry it in "before" (REPLICA IDENTITY FULL)
    plan = plan_for(version("v1", [ID, field("k", F64)]), keys=["k"])
    rows = [(f'{{"id":{i}}}', envelope(None, "d", f'{{"id":{i},"k":{texts(x, i)}}}'), "d") for i, x in enumerate(hard)]
    got = decoded(plan, bronze(spark, rows), "k")
    assert all(r[0] is None and same(r[1], x) for r, x in zip(got, hard, strict=True))
    # the primary-key-change headers
    header = spark.createDataFrame([(i, f'{{"k":{texts(x, i)}}}') for i, x in enumerate(hard)], "i int, h string")
    keys = header.select("i", *pk_plan.keys_from_text(sf.col("h"))).orderBy("i").collect()
    assert all(same(r["k"], x) for r, x in zip(keys, hard, strict=True))


def test_widened_and_reshaped_versions_stay_exact(spark):
    hard = hard_doubles(random.Random(5))[:200]
    xy = {"type": "struct", "fields": [field("x", F64)]}
    xy2 = {"type": "struct", "fields": [field("x", F64), field("y", F64)]}
    v1 = version("v1", [ID, field("v", F32), field("w", {"type": "int32"}), field("s", xy)])
    v2 = version("v2", [ID, field("v", F64), field("w", F64), field("s", xy2)])
    plan = plan_for(v1, v2)
    old = [
        (f'{{"id":{i}}}', envelope(f'{{"id":{i},"v":0.1,"w":-7,"s":{{"x":{texts(x, i)}}}}}'), "c")
        for i, x in enumerate(hard)
    ]
    new = [
        (
            f'{{"id":{i}}}',
            envelope(
                f'{{"id":{i},"v":{texts(x, i)},"w":{texts(x, i + 1)},"s":{{"x":{texts(x, i)},"y":{texts(x, i + 2)}}}}}',
                "u",
            ),
            "u",
        )
        for i, x in enumerate(hard)
    ]
    got = decoded(
        plan,
        bronze(spark, old).unionByName(bronze(spark, new, "v2").withColumn("seq", sf.col("seq") + 1000)),
        "v",
        "w",
        "s",
    )
    assert all(r[0] is None for r in got)
    assert all(
        same(r[1], float32(0.1)) and r[2] == -7.0 and same(r[3]["x"], x) and r[3]["y"] is None
        for r, x in zip(got[: len(hard)], hard, strict=True)
    )
    assert all(
        same(r[1], x) and same(r[2], x) and same(r[3]["x"], x) and same(r[3]["y"], x)
        for r, x in zip(got[len(hard) :], hard, strict=True)
    )


def test_values_that_are_not_floats_are_still_mismatches(spark):
    plan = plan_for(
        version("v1", [ID, field("v", F64), field("a", {"type": "array", "items": {**F64, "optional": True}})])
    )
    bad = ['"v":"abc"', '"v":true', '"v":{"x":1}', '"a":[[1.5]]', '"a":[1.5,"x"]', '"a":[1.5,"1,5"]']
    rows = [(f'{{"id":{i}}}', envelope(f'{{"id":{i},{b}}}'), "c") for i, b in enumerate(bad)]
    got = decoded(plan, bronze(spark, rows), "v", "a")
    assert [r[0] for r in got] == ["values do not match the schema in column(s): " + c for c in "vvvaaa"]


def test_odd_column_names(spark):
    """A dot needs bracket notation; a quote cannot be addressed by a JSONPath (read by from_json)."""
    plan = plan_for(version("v1", [ID, field("a.b", F64), field("it's", F64)]))
    value = json.dumps({"id": 1, "a.b": -0.9254135096013949, "it's": 2.5}, separators=(",", ":"))
    got = decoded(plan, bronze(spark, [('{"id":1}', envelope(value), "c")]), "`a.b`", "`it's`")
    assert got == [(None, -0.9254135096013949, 2.5)]
