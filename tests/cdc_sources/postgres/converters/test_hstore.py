from __future__ import annotations

from cdc_sources.postgres.converters import ConverterSettings
from cdc_sources.postgres.converters.hstore import parse_hstore
from tests.cdc_sources.postgres.converters.pgtypes import conv, extension

HSTORE = extension("hstore")
MANY = ", ".join(f'"k{i}"=>"v"' for i in range(15))


def test_parse() -> None:
    assert parse_hstore('"a"=>"1", "b"=>NULL, "k\\"q"=>"v\\\\x"') == [("a", "1"), ("b", None), ('k"q', "v\\x")]
    assert parse_hstore("") == []


def test_json_mode_writes_compact_json_in_hashmap_order() -> None:
    c = conv(HSTORE)
    assert c.convert('"a"=>"1", "b"=>NULL, "k\\"q"=>"v\\\\x"') == '{"a":"1","b":null,"k\\"q":"v\\\\x"}'
    assert c.convert("") == "{}"
    assert c.convert(MANY) == ('{"k0":"v","k1":"v","k2":"v","k3":"v","k4":"v","k5":"v","k11":"v","k6":"v",'
                               '"k10":"v","k7":"v","k13":"v","k8":"v","k12":"v","k9":"v","k14":"v"}')
    assert c.convert('"é"=>"ü", "ctl"=>"a/b"') == '{"é":"ü","ctl":"a/b"}'
    assert c.schema == {"type": "string", "optional": True, "name": "io.debezium.data.Json", "version": 1,
                        "field": "c"}
    assert c.unavailable == '{"__debezium_unavailable_value":"__debezium_unavailable_value"}'
    assert conv(HSTORE, nullable=False).null_value == "{}"


def test_map_mode() -> None:
    c = conv(HSTORE, settings=ConverterSettings(hstore_handling_mode="map"), nullable=False)
    value = c.convert('"a"=>"1", "b"=>NULL')
    assert value == {"a": "1", "b": None}
    assert list(c.convert(MANY))[6:9] == ["k11", "k6", "k10"]
    assert c.schema == {"type": "map", "keys": {"type": "string", "optional": False},
                        "values": {"type": "string", "optional": True}, "optional": False, "field": "c"}
    assert c.unavailable == {"__debezium_unavailable_value": "__debezium_unavailable_value"}
    assert c.null_value == {}
