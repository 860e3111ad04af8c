from __future__ import annotations

import dataclasses

import pytest

from cdc_sources.postgres.converters import ColumnConverter, ConverterSettings, converter_for
from tests.cdc_sources.postgres.converters.pgtypes import (
    builtin,
    column,
    conv,
    domain,
    enum,
    numeric_typmod,
    varchar_typmod,
)


def test_field_schema_of_a_serial_key() -> None:
    c = conv("int4", nullable=False, default="nextval('t_id_seq'::regclass)", name="id")
    assert c.schema == {"type": "int32", "optional": False, "default": 0, "field": "id"}
    assert c.convert("7") == 7
    assert c.null_value == 0


def test_propagated_source_type_in_a_snapshot() -> None:
    c = conv("numeric", numeric_typmod(10, 2), propagate=True, name="price")
    assert c.schema == {
        "type": "bytes", "optional": True, "name": "org.apache.kafka.connect.data.Decimal", "version": 1,
        "parameters": {"scale": "2", "connect.decimal.precision": "10", "__debezium.source.column.type": "NUMERIC",
                       "__debezium.source.column.length": "10", "__debezium.source.column.scale": "2",
                       "__debezium.source.column.name": "price"},
        "field": "price"}


def test_propagated_source_type_differs_between_snapshot_and_stream() -> None:
    snap = conv("numeric", propagate=True).schema["parameters"]
    stream = conv("numeric", propagate=True, origin="stream").schema["parameters"]
    assert snap == {"__debezium.source.column.type": "NUMERIC", "__debezium.source.column.length": "0",
                    "__debezium.source.column.name": "c"}
    assert stream == {"__debezium.source.column.type": "NUMERIC", "__debezium.source.column.length": "131089",
                      "__debezium.source.column.scale": "0", "__debezium.source.column.name": "c"}
    nextval = "nextval('s'::regclass)"
    snap_serial = conv("int4", default=nextval, nullable=False, propagate=True)
    stream_serial = conv("int4", default=nextval, nullable=False, propagate=True, origin="stream")
    assert snap_serial.schema["parameters"]["__debezium.source.column.type"] == "SERIAL"
    assert stream_serial.schema["parameters"]["__debezium.source.column.type"] == "INT4"


def test_propagated_parameters_come_after_the_types_own() -> None:
    c = conv(enum("mood", "sad", "ok"), propagate=True)
    assert list(c.schema["parameters"]) == ["allowed", "__debezium.source.column.type",
                                            "__debezium.source.column.length", "__debezium.source.column.scale",
                                            "__debezium.source.column.name"]
    assert c.schema["parameters"]["__debezium.source.column.type"] == "MOOD"


def test_domains_render_as_their_base_type() -> None:
    price = domain("price", builtin("numeric"), numeric_typmod(8, 3))
    c = conv(price, propagate=True, default="1.5")
    assert c.convert("1.500") == "Bdw="
    assert c.schema["parameters"] == {"scale": "3", "connect.decimal.precision": "8",
                                      "__debezium.source.column.type": "PRICE",
                                      "__debezium.source.column.length": "8", "__debezium.source.column.scale": "3",
                                      "__debezium.source.column.name": "c"}
    assert "default" not in c.schema
    short = conv(domain("short_text", builtin("varchar"), varchar_typmod(5)))
    assert short.schema == {"type": "string", "optional": True, "field": "c"}
    assert conv(domain("bits5", builtin("bit"), 5)).convert("10101") == "FQ=="
    assert conv(domain("ts3", builtin("timestamp"), 3)).convert("2018-06-20 15:13:16.945") == 1529507596945


def test_unknown_and_unsupported_types_are_left_out() -> None:
    assert converter_for(column("tsquery"), ConverterSettings()) is None
    assert converter_for(column("refcursor"), ConverterSettings()) is None


def test_column_converter_is_immutable() -> None:
    c = conv("int4")
    assert isinstance(c, ColumnConverter)
    with pytest.raises(dataclasses.FrozenInstanceError):
        c.unavailable = None  # type: ignore[misc]


def test_placeholder_adapts_to_the_column() -> None:
    assert conv("text").unavailable == "__debezium_unavailable_value"
    assert conv("jsonb").unavailable == "__debezium_unavailable_value"
    assert conv("text", settings=ConverterSettings(unavailable_value_placeholder="~")).unavailable == "~"
