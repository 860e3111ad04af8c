from __future__ import annotations

from cdc_sources.common import kschema as ks


def test_complete_orders_keys_like_json_converter() -> None:
    core = ks.logical("bytes", ks.DECIMAL, params={"scale": "2", ks.PRECISION_PARAM: "10"})
    out = ks.complete(core, optional=True, default="AJY=", field="price", params={"extra": "x"})
    assert list(out) == ["type", "optional", "name", "version", "parameters", "default", "field"]
    assert out["parameters"] == {"scale": "2", "connect.decimal.precision": "10", "extra": "x"}


def test_struct_and_array_shapes() -> None:
    s = ks.struct("n", [("a", ks.primitive("int32"), False), ("b", ks.primitive("bytes"), True)], doc="d")
    assert ks.complete(s, optional=False) == {
        "type": "struct",
        "fields": [{"type": "int32", "optional": False, "field": "a"},
                   {"type": "bytes", "optional": True, "field": "b"}],
        "optional": False, "name": "n", "version": 1, "doc": "d",
    }
    assert ks.array(ks.primitive("int16"), items_optional=True) == {
        "type": "array", "items": {"type": "int16", "optional": True}}


def test_no_default_differs_from_null_default() -> None:
    assert "default" not in ks.complete(ks.primitive("string"), optional=True)
    assert ks.complete(ks.primitive("string"), optional=True, default=None)["default"] is None
