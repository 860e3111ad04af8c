"""Identifier quoting: one helper for every generated statement, awkward names included."""

from __future__ import annotations

import pytest

from silver.apply import MergeSpec, merge_sql, truncate_sql
from silver.declarations import SilverTable
from silver.sql import qualified_table, quote, quote_path_table, string_literal
from tests.silver.bronze_builder import col, int32
from tests.silver.conftest import rows

AWKWARD = ["order", "select", "2nd col", "MixedCase", "we`ird", "dot.ted", "ünï", "group by"]


@pytest.mark.parametrize(("name", "quoted"), [
    ("id", "`id`"), ("order", "`order`"), ("2nd col", "`2nd col`"), ("we`ird", "`we``ird`"),
    ("MixedCase", "`MixedCase`"), ("dot.ted", "`dot.ted`")])
def test_quote(name, quoted):
    assert quote(name) == quoted


def test_quote_rejects_empty():
    with pytest.raises(ValueError, match="empty"):
        quote("")


def test_literals_and_table_references():
    assert string_literal("it's a \\ test") == "'it\\'s a \\\\ test'"
    assert qualified_table(["main", "my schema", "t"]) == "`main`.`my schema`.`t`"
    assert quote_path_table("/lake/silver/x`y") == "delta.`/lake/silver/x``y`"


def test_merge_statement_quotes_every_name():
    decl = SilverTable(table="t", source="a.b.c", deletes="soft")
    sql = merge_sql(MergeSpec("delta.`/x`", "src", ["order"], ["we`ird"], ["we`ird"], ["2nd col"], decl))
    assert "t.`order` = s.`order`" in sql
    assert "array_contains(s.`__cdc_unavailable`, 'we`ird') THEN t.`we``ird` ELSE s.`we``ird`" in sql
    assert "t.`2nd col` = NULL" in sql
    assert "WHEN MATCHED AND s.`__cdc_kind` = 'd' AND t.`_cdc_seq` < s.`__cdc_seq` THEN UPDATE SET" in sql
    assert truncate_sql("delta.`/x`", SilverTable(table="t", source="a.b.c"), 7, None) == \
        "DELETE FROM delta.`/x` WHERE `_cdc_seq` < 7"


@pytest.mark.spark
def test_awkward_column_names_end_to_end(builder, run, silver):
    b = builder("WeirdTable")  # Sail cannot read delta-rs tables under paths with spaces
    fields = [int32("select", optional=False)] + [col(n, "string") for n in AWKWARD if n != "select"]
    b.register(fields, ["select"])
    row = {"select": 1, **{n: f"v-{n}" for n in AWKWARD if n != "select"}}
    b.insert(row).update({**row, "order": "changed"}).insert({**row, "select": 2}).delete({"select": 2}).commit()
    (res,) = run(SilverTable(table="weird", source=b.topic, rename={"2nd col": "Second Col"})).tables
    assert res.status == "applied", res.error
    df = silver("weird")
    assert "Second Col" in df.columns and "we`ird" in df.columns
    assert rows(df, "select", "order", "MixedCase", "dot.ted") == [(1, "changed", "v-MixedCase", "v-dot.ted")]
