"""Behaviour of the converters that the Debezium conformance matrix cannot show on its own:
per-origin inputs, the identity flag, library quirks undone, failure modes and errors."""

from __future__ import annotations

import datetime
from decimal import Decimal
from typing import Any

import pytest

from cdc_sources.mysql.converters import (
    ColumnConverter,
    MySqlConverterSettings,
    Origin,
    ValueConversionError,
    converter_for,
    restore_empty_sets,
)
from cdc_sources.mysql.converters.temporal import binlog_time_micros
from cdc_sources.mysql.model import ColumnDef

DEFAULTS = MySqlConverterSettings()


def column(type_name: str, jdbc: int, **kw: Any) -> ColumnDef:
    return ColumnDef(kw.pop("name", "c"), 1, type_name, type_name, jdbc, **kw)


def conv(col: ColumnDef, origin: Origin, settings: MySqlConverterSettings = DEFAULTS, **kw: Any) -> ColumnConverter:
    found = converter_for(col, settings, origin=origin, **kw)
    assert found is not None
    return found


@pytest.mark.parametrize("origin", ["binlog", "snapshot"])
def test_integers_and_text_pass_through(origin: Origin) -> None:
    for col, value in [(column("INT", 4), -5), (column("INT UNSIGNED", 4), 4294967295),
                       (column("VARCHAR", 12, length=10, charset="utf8mb4"), "héllo")]:
        c = conv(col, origin)
        assert c.identity and c.convert(value) == value


def test_bigint_unsigned_long_mode_wraps_like_java() -> None:
    c = conv(column("BIGINT UNSIGNED", -5), "binlog")
    assert not c.identity
    assert [c.convert(v) for v in (0, 2**63 - 1, 2**63, 2**64 - 1)] == [0, 2**63 - 1, -(2**63), -1]


def test_binlog_negative_time_fraction_is_repaired() -> None:
    # what python-mysql-replication 1.0.17 delivers -> the real value (checked on MariaDB)
    delivered_and_true = [(-999_999, -1), (-45_296_210_988, -45_296_789_012), (-1_800_500_000, -1_800_500_000),
                          (-3_600_000_000, -3_600_000_000), (12_345, 12_345), (0, 0)]
    for delivered, true in delivered_and_true:
        assert binlog_time_micros(datetime.timedelta(microseconds=delivered)) == true


def test_set_renders_members_in_definition_order_and_empty_sets() -> None:
    col = column("SET", 1, enum_values=("x", "y", "z"), charset="utf8mb4")
    c = conv(col, "binlog")
    assert c.convert({"z", "x"}) == "x,z"
    row: dict[str, Any] = {"id": 1, "c": None, "d": None}
    restore_empty_sets(row, {"c": "empty set", "d": "null"})
    assert row == {"id": 1, "c": frozenset(), "d": None}
    assert c.convert(row["c"]) == ""
    assert conv(col, "snapshot").convert("x,z") == "x,z"


def test_enum_members_with_commas_are_escaped_when_streamed_only() -> None:
    col = column("ENUM", 1, enum_values=("a", "b,c"), charset="utf8mb4")
    assert conv(col, "binlog").schema["parameters"] == {"allowed": "a,b\\,c"}
    assert conv(col, "binlog").convert("b,c") == "b\\,c"
    assert conv(col, "snapshot").convert("b,c") == "b,c"


def test_zero_timestamp_in_the_binlog_is_null_or_the_default() -> None:
    zero = datetime.datetime(1970, 1, 1)
    assert conv(column("TIMESTAMP", 2014), "binlog").convert(zero) is None
    not_null = conv(column("TIMESTAMP", 2014, optional=False), "binlog")
    assert not_null.convert(zero) == not_null.null_value == "1970-01-01T00:00:00Z"
    defaulted = conv(column("TIMESTAMP", 2014, length=3, default_expression="2020-01-01 10:00:00",
                            has_default=True), "binlog")
    assert defaulted.schema["default"] == "2020-01-01T10:00:00.000Z"
    assert defaulted.convert(zero) == "2020-01-01T10:00:00.000Z"
    assert defaulted.convert(datetime.datetime(2020, 1, 1, 0, 0, 0, 500000)) == "2020-01-01T00:00:00.500Z"


def test_snapshot_zero_dates_are_null_or_epoch() -> None:
    date = column("DATE", 91)
    assert conv(date, "snapshot").convert("0000-00-00") is None
    assert conv(column("DATE", 91, optional=False), "snapshot").convert("2020-00-01") == 0
    assert conv(column("DATETIME", 93, optional=False), "snapshot").convert("0000-00-00 00:00:00") == 0
    assert conv(date, "snapshot").convert("0000-01-01") == 10957  # year 0 adjusted to 2000, as Debezium
    no_adjust = MySqlConverterSettings(enable_time_adjuster=False)
    assert conv(date, "snapshot", no_adjust).convert("0000-01-01") == -719528


def test_snapshot_values_must_be_text() -> None:
    with pytest.raises(TypeError, match="SNAPSHOT_CONVERSIONS"):
        conv(column("DATETIME", 93), "snapshot").convert(datetime.datetime(2020, 1, 1))


def test_failure_mode_decides_what_an_unconvertible_value_becomes() -> None:
    time = column("TIME", 92)
    warn = MySqlConverterSettings(time_precision_mode="connect")
    fail = MySqlConverterSettings(time_precision_mode="connect", event_converting_failure_handling_mode="fail")
    too_long = datetime.timedelta(hours=25)
    assert conv(time, "binlog", warn).convert(too_long) is None
    with pytest.raises(ValueConversionError, match="outside 00:00:00-24:00:00"):
        conv(time, "binlog", fail).convert(too_long)
    with pytest.raises(ValueConversionError):  # NOT NULL, no default: JsonConverter would fail
        conv(column("TIME", 92, optional=False), "binlog", warn).convert(too_long)
    defaulted = column("TIME", 92, default_expression="01:00:00", has_default=True)
    assert conv(defaulted, "snapshot", warn).convert("-01:00:00") == 3_600_000


def test_unconvertible_defaults_follow_the_failure_mode() -> None:
    bits = column("BIT", -7, length=8, default_expression="5", has_default=True)
    assert "default" not in conv(bits, "binlog").schema
    with pytest.raises(ValueConversionError, match="BIT default"):
        converter_for(bits, MySqlConverterSettings(event_converting_failure_handling_mode="fail"), origin="binlog")


def test_a_comment_on_a_geometry_fails_like_debezium() -> None:
    point = column("POINT", 1111, comment="where")
    assert "doc" not in conv(point, "binlog").schema or conv(point, "binlog").schema["doc"] == "Geometry (POINT)"
    with pytest.raises(ValueConversionError, match="doc has already been set"):
        converter_for(point, MySqlConverterSettings(include_schema_comments=True), origin="binlog")


def test_propagated_parameters_and_doc() -> None:
    col = column("DECIMAL", 3, length=10, scale=2, comment="price")
    c = conv(col, "binlog", MySqlConverterSettings(include_schema_comments=True), propagate_source_type=True)
    assert list(c.schema) == ["type", "optional", "name", "version", "doc", "parameters", "field"]
    assert c.schema["doc"] == "price"
    assert c.schema["parameters"] == {
        "scale": "2", "connect.decimal.precision": "10", "__debezium.source.column.type": "DECIMAL",
        "__debezium.source.column.length": "10", "__debezium.source.column.scale": "2",
        "__debezium.source.column.comment": "price", "__debezium.source.column.name": "c"}


def test_decimal_inputs_per_origin() -> None:
    col = column("DECIMAL", 3, length=65, scale=30)
    big = "-12345678901234567890123456789012345.123456789012345678901234567890"
    streamed, snapshotted = conv(col, "binlog"), conv(col, "snapshot")
    assert streamed.convert(Decimal(big)) == snapshotted.convert(big)
    strings = MySqlConverterSettings(decimal_handling_mode="string")
    assert conv(col, "binlog", strings).convert(Decimal(big)) == big
    assert conv(col, "snapshot", strings).identity


def test_strings_of_charsets_python_cannot_decode_arrive_as_bytes() -> None:
    col = column("VARCHAR", 12, length=10, charset="swe7")
    c = conv(col, "binlog")
    assert not c.identity
    assert c.convert(b"abc") == "abc" and c.convert("already text") == "already text"


def test_unsupported_types_are_left_out() -> None:
    assert converter_for(column("VECTOR", 1111), DEFAULTS, origin="binlog") is None
    assert converter_for(column("SOMETHING", 1111), DEFAULTS, origin="binlog") is None


def test_points_must_be_2d_points() -> None:
    c = conv(column("POINT", 1111), "binlog", MySqlConverterSettings(event_converting_failure_handling_mode="fail"))
    line = bytes(4) + bytes.fromhex("010200000002000000" + "00" * 32)
    with pytest.raises(ValueConversionError, match="POINT"):
        c.convert(line)
