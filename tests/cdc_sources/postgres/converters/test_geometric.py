from __future__ import annotations

import base64

import pytest

from cdc_sources.postgres.converters import ConverterSettings, ValueConversionError, converter_for
from cdc_sources.postgres.converters.geometric import pgjdbc_text
from tests.cdc_sources.postgres.converters.pgtypes import column, conv, extension


def test_point() -> None:
    c = conv("point")
    assert c.convert("(1.5,2)") == {"x": 1.5, "y": 2.0, "wkb": "AQEAAAAAAAAAAAD4PwAAAAAAAABA", "srid": None}
    assert c.convert("(-0,1e+300)") == {"x": -0.0, "y": 1e300, "wkb": "AQEAAAAAAAAAAAAAgJx1AIg85Dd+", "srid": None}
    assert c.convert("(NaN,Infinity)") == {"x": "NaN", "y": "Infinity", "wkb": "AQEAAAAAAAAAAAD4fwAAAAAAAPB/",
                                           "srid": None}
    assert c.schema == {
        "type": "struct",
        "fields": [{"type": "double", "optional": False, "field": "x"},
                   {"type": "double", "optional": False, "field": "y"},
                   {"type": "bytes", "optional": True, "field": "wkb"},
                   {"type": "int32", "optional": True, "field": "srid"}],
        "optional": True, "name": "io.debezium.data.geometry.Point", "version": 1, "doc": "Geometry (POINT)",
        "field": "c"}
    with pytest.raises(ValueConversionError):
        c.convert("1,2")


def test_postgis_geometry_keeps_the_ewkb_and_reads_the_srid() -> None:
    c = conv(extension("geometry"), nullable=False)
    ewkb = "0101000020E6100000000000000000F03F0000000000000040"  # SRID=4326;POINT(1 2)
    assert c.convert(ewkb) == {"wkb": base64.b64encode(bytes.fromhex(ewkb)).decode(), "srid": 4326}
    plain = "0101000000000000000000F03F0000000000000040"
    assert c.convert(plain) == {"wkb": base64.b64encode(bytes.fromhex(plain)).decode(), "srid": None}
    assert c.schema["optional"] is True  # Debezium's Geometry schema is always optional
    assert c.schema["name"] == "io.debezium.data.geometry.Geometry"
    assert c.null_value == {"wkb": "AQcAAAAAAAAA", "srid": None}
    big_endian = "0020000001000010E63FF00000000000004000000000000000"
    assert c.convert(big_endian)["srid"] == 4326


def test_geography() -> None:
    c = conv(extension("geography"), nullable=False)
    assert c.schema["optional"] is False
    assert c.schema["name"] == "io.debezium.data.geometry.Geography"
    assert c.schema["doc"] == "Geography"


@pytest.mark.parametrize("name", ["box", "circle", "line", "lseg", "path", "polygon"])
def test_other_geometric_types_are_unknown(name: str) -> None:
    assert converter_for(column(name), ConverterSettings()) is None


@pytest.mark.parametrize(("name", "text", "rendered"), [
    ("box", "(3,4.5),(1,2)", "(3.0,4.5),(1.0,2.0)"), ("circle", "<(1,2),3>", "<(1.0,2.0),3.0>"),
    ("line", "{1,-1,0}", "{1.0,-1.0,0.0}"), ("lseg", "[(1,2),(3,4)]", "[(1.0,2.0),(3.0,4.0)]"),
    ("path", "((1,2),(3,4))", "((1.0,2.0),(3.0,4.0))"),
    ("polygon", "((1,2),(3,4),(5,6))", "((1.0,2.0),(3.0,4.0),(5.0,6.0))"),
])
def test_unknown_geometric_values_are_rerendered_by_pgjdbc(name: str, text: str, rendered: str) -> None:
    c = conv(name, settings=ConverterSettings(include_unknown_datatypes=True))
    assert base64.b64decode(c.convert(text)).decode() == rendered


def test_pgjdbc_text_uses_java_doubles() -> None:
    assert pgjdbc_text("(1e+10,-2.5e-07)") == "(1.0E10,-2.5E-7)"
