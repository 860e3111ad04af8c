"""Which columns are compared, the canonical texts on the silver side, and key differences (pure)."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pyarrow as pa
import pytest

from cdc_sources.common.column_rules import parse_column_rules
from pipelines.verify import compare
from pipelines.verify.canonical import ColumnKind, bucket_of, column_texts, join_fields, value_text
from pipelines.verify.model import DiffKind, SourceColumn, VerifyError
from pipelines.verify.plan import plan_columns
from pipelines.verify.postgres_source import postgres_kind
from silver.declarations import SilverTable

SOURCE = [SourceColumn("id", "int4"), SourceColumn("name", "text"), SourceColumn("price", "numeric", 2),
          SourceColumn("secret", "text"), SourceColumn("qty", "int4"), SourceColumn("tags", "_text"),
          SourceColumn("dropped", "text")]
SILVER = pa.schema([("id", pa.int32()), ("title", pa.string()), ("price", pa.decimal128(10, 2)),
                    ("secret", pa.string()), ("qty", pa.int64()), ("tags", pa.list_(pa.string())),
                    ("_cdc_seq", pa.int64())])


def plan(**declared: object):
    decl = SilverTable.model_validate({"table": "t", "source": "pg.public.t", "rename": {"name": "title"},
                                       "casts": {"qty": "bigint"}, **declared})
    rules = parse_column_rules({"column.mask.with.3.chars": "public.t.secret"})[0]
    return decl, plan_columns(decl, container="public", table="t", source=SOURCE, primary_key=["id"],
                              silver=SILVER, rules=rules, kind_of=postgres_kind)


def test_the_plan_compares_what_silver_holds_unchanged_and_says_why_the_rest_is_not() -> None:
    _, p = plan()
    assert [(c.source, c.silver, c.kind) for c in p.compared] == [
        ("id", "id", ColumnKind.INT), ("name", "title", ColumnKind.TEXT), ("price", "price", ColumnKind.DECIMAL)]
    assert {s.source: s.reason for s in p.skipped} == {
        "secret": "masked by the source option column.mask.with.3.chars",
        "qty": "cast to bigint by the declaration",
        "tags": "no canonical text proven for source type _text as silver list<item: string>",
        "dropped": "silver has no column 'dropped'",
    }


def test_a_key_that_cannot_be_compared_makes_the_table_unverifiable() -> None:
    with pytest.raises(VerifyError, match="key column 'tags' cannot be compared: no canonical text"):
        plan(keys=["tags"])
    with pytest.raises(VerifyError, match="key column 'nope' is not a column"):
        plan(keys=["nope"])


def test_canonical_texts_of_silver_values() -> None:
    assert value_text(ColumnKind.DECIMAL, Decimal("0E-8")) == "0.00000000"
    assert value_text(ColumnKind.DECIMAL, Decimal("-12.50")) == "-12.50"
    assert value_text(ColumnKind.TIMESTAMP, dt.datetime(999, 1, 2, 3, 4, 5, 6, tzinfo=dt.UTC)) == \
        "0999-01-02 03:04:05.000006"
    assert value_text(ColumnKind.TIMESTAMP, dt.datetime(2020, 1, 1, 1, tzinfo=dt.timezone(dt.timedelta(hours=1)))) \
        == "2020-01-01 00:00:00.000000"
    assert value_text(ColumnKind.BYTES, b"\x00\xff") == "00ff"
    assert value_text(ColumnKind.FLOAT64, 0.1) == "3fb999999999999a"
    assert value_text(ColumnKind.BOOL, False) == "false"
    assert value_text(ColumnKind.TEXT, None) is None
    # a value cannot imitate a field boundary, and null differs from every text
    assert join_fields(["a,1:b"]) != join_fields(["a", "b"])
    assert join_fields([None]) != join_fields(["-"]) != join_fields([""])


def test_silver_side_takes_current_rows_and_each_keys_highest_seq() -> None:
    decl, p = plan(history="scd2")
    table = pa.table({
        "id": pa.array([1, 1, 2], pa.int32()), "title": ["old", "new", "gone"],
        "price": pa.array([Decimal("1.00")] * 3, pa.decimal128(10, 2)),
        "_cdc_seq": [3, 8, 4], "_cdc_end_seq": [8, None, 9], "_cdc_is_current": [False, True, False]})
    side = compare.silver_side(p, decl, table)
    assert side.rows == {join_fields(["1"]): ("1", "new", "1.00")}
    assert side.seqs == {join_fields(["1"]): 8, join_fields(["2"]): 9}


def test_differences_by_key_and_buckets() -> None:
    _, p = plan()
    source = {join_fields(["1"]): ("1", "a", "1.00"), join_fields(["2"]): ("2", "b", "2.00")}
    silver = {join_fields(["2"]): ("2", "b", "2.50"), join_fields(["3"]): ("3", "c", None)}
    diffs = compare.diff_rows(p, source, silver)
    assert sorted((d.key, d.kind, d.columns) for d in diffs.values()) == [
        ("id=1", DiffKind.MISSING, ()), ("id=2", DiffKind.DIFFERENT, ("price",)), ("id=3", DiffKind.EXTRA, ())]
    sums = compare.bucket_sums(source, 4)
    assert sum(n for n, _ in sums.values()) == 2 and set(sums) <= set(range(4))
    assert compare.differing_buckets(sums, compare.bucket_sums(source, 4)) == []
    assert compare.differing_buckets(sums, compare.bucket_sums(silver, 4)) == sorted(
        {bucket_of(k, 4) for k in (join_fields(["1"]), join_fields(["2"]), join_fields(["3"]))})


def test_bronze_keys_are_read_only_when_their_json_is_plain() -> None:
    _, p = plan()
    assert compare.key_text_of_json(p, {"id": 5}) == join_fields(["5"])
    assert compare.key_text_of_json(p, {"id": "5"}) is None
    assert compare.key_text_of_json(p, None) is None


@pytest.mark.parametrize(("kind", "values"), [
    (ColumnKind.INT, pa.array([0, -1, 2**63 - 1, -(2**63), None], pa.int64())),
    (ColumnKind.INT, pa.array([0, -128, 127, None], pa.int8())),
    (ColumnKind.INT, pa.array([Decimal(0), Decimal(2**64 - 1), None], pa.decimal128(20, 0))),
    (ColumnKind.TEXT, pa.array(["", "ü😀", "a,b:c", None])),
    (ColumnKind.BOOL, pa.array([True, False, None])),
    (ColumnKind.DECIMAL, pa.array([Decimal("0.00000000"), Decimal("-0.00000001"), None], pa.decimal128(10, 8))),
])
def test_column_wise_texts_equal_value_by_value_texts(kind: ColumnKind, values: pa.Array) -> None:
    expected = [value_text(kind, v) for v in values.to_pylist()]
    assert column_texts(kind, values) == expected
    assert column_texts(kind, pa.chunked_array([values, values])) == expected * 2


def test_numeric_without_scale_is_compared_as_a_number_whatever_its_trailing_zeros() -> None:
    loose = SourceColumn("loose", "numeric")  # PostgreSQL NUMERIC without precision or scale
    assert postgres_kind(loose, pa.string()) is ColumnKind.NUMBER
    assert postgres_kind(loose, pa.decimal128(38, 18)) is None  # rounded by the user's choice: not proven
    # what PostgreSQL's trim_scale(x)::text writes for each (checked on a live server by tests/pipelines/test_verify.py)
    cases = {"0.3911600": "0.39116", "0.00": "0", "-0.50": "-0.5", "7": "7", "1E+3": "1000", "-0": "0",
             "12345678901234567890123456789012345678901234.5": "12345678901234567890123456789012345678901234.5",
             "0.000000000000000000000000000000000000000001": "0.000000000000000000000000000000000000000001"}
    assert {v: value_text(ColumnKind.NUMBER, v) for v in cases} == cases
    assert value_text(ColumnKind.NUMBER, Decimal("2.50")) == "2.5"
    with pytest.raises(TypeError):
        value_text(ColumnKind.NUMBER, "NaN")
