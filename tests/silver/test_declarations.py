"""The silver: / silver_options: models: defaults, validation messages, cross-field rules."""

from __future__ import annotations

import pytest
from pydantic import ValidationError
from pyspark.sql.types import DecimalType, LongType

from cdc_sources.spi import ConfigError
from pipelines.config import parse_pipeline
from silver.cast_types import parse_cast_type
from silver.declarations import SilverOptions, SilverTable

TOPIC = "shop_pg.public.customers"


def _error(**kw) -> str:
    with pytest.raises(ValidationError) as err:
        SilverTable(**{"table": "customers", "source": TOPIC, **kw})
    return str(err.value)


def test_defaults():
    t = SilverTable(table="customers", source=TOPIC)
    assert (t.keys, t.deletes, t.history, t.schema_evolution, t.location) == (None, "hard", "scd1", "add_columns", None)
    assert t.metadata_names() == ["_cdc_seq", "_cdc_op", "_cdc_ts"]
    o = SilverOptions()
    assert (o.interval_seconds, o.consistency, o.quarantine.enabled) == (10.0, {}, True)


def test_unknown_keys_are_rejected():
    assert "extra_forbidden" in _error(primary_keys=["id"])
    with pytest.raises(ValidationError):
        SilverOptions(intervl=3)  # type: ignore[call-arg]


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"source": "customers"}, "is not a bronze topic"),
    ({"keys": []}, "at least one column"),
    ({"keys": ["id", "id"]}, "repeated"),
    ({"keys": ["id"], "exclude_columns": ["id"]}, "key column 'id' cannot be in exclude_columns"),
    ({"columns": ["a"], "exclude_columns": ["a"]}, "both in columns and exclude_columns"),
    ({"rename": {"a": "x", "b": "x"}}, "same name"),
    ({"rename": {"a": "_cdc_seq"}}, "collide with silver bookkeeping"),
    ({"casts": {"a": "varchar(3)"}}, "unsupported cast"),
    ({"casts": {"a": "decimal(40,2)"}}, "unsupported cast"),
    ({"table_properties": {"foo": "bar"}}, "starting with 'delta.'"),
    ({"deletes": "soft", "history": "scd2"}, "does not apply to history: scd2"),
    ({"partition_by": ["a"], "cluster_by": ["b"]}, "either partition_by or cluster_by"),
    ({"deletes": "purge"}, "'hard' or 'soft'"),
    ({"table": "bad name"}, "string_pattern_mismatch"),
])
def test_invalid_declarations_say_what_is_wrong(kwargs, message):
    assert message in _error(**kwargs)


def test_cast_types_parse():
    assert parse_cast_type("BIGINT") == LongType()
    assert parse_cast_type("decimal(12, 3)") == DecimalType(12, 3)
    with pytest.raises(ValueError, match="unsupported"):
        parse_cast_type("array<int>")


def test_renames_and_selection_helpers():
    t = SilverTable(table="c", source=TOPIC, keys=["id"], columns=["name"], rename={"name": "full_name"})
    assert (t.silver_name("name"), t.silver_name("id")) == ("full_name", "id")
    assert (t.keeps("id"), t.keeps("name"), t.keeps("other")) == (True, True, False)


def test_options_validation():
    with pytest.raises(ValidationError, match="decimal"):
        SilverOptions(variable_scale_decimal="double")
    with pytest.raises(ValidationError):
        SilverOptions(consistency={"shop": "serializable"})  # type: ignore[dict-item]
    assert SilverOptions(variable_scale_decimal="DECIMAL(20,4)").variable_scale_decimal == "decimal(20,4)"
    assert SilverOptions().variable_scale_decimal == "string"  # lossless by default
    assert SilverOptions(variable_scale_decimal=" STRING ").variable_scale_decimal == "string"


def test_pipeline_file_errors_name_the_file_line_and_key():
    text = """
pipeline: shop
lakehouse: {root: /tmp/lake}
sources:
  - {name: shop_pg, connector: postgres}
silver:
  - table: customers
    source: shop_pg.public.customers
    deletes: sometimes
"""
    with pytest.raises(ConfigError) as err:
        parse_pipeline(text, file="shop.yaml", env={})
    assert "shop.yaml:9: silver[0].deletes" in str(err.value)
