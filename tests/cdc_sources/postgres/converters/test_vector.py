from __future__ import annotations

import pytest

from cdc_sources.postgres.converters import ValueConversionError
from tests.cdc_sources.postgres.converters.pgtypes import conv, extension


def test_vector() -> None:
    c = conv(extension("vector"))
    assert c.convert("[1,2.5,-3]") == [1.0, 2.5, -3.0]
    assert c.schema == {"type": "array", "items": {"type": "double", "optional": False}, "optional": True,
                        "name": "io.debezium.data.DoubleVector", "version": 1, "field": "c"}
    with pytest.raises(ValueConversionError):
        c.convert("{1,2}")


def test_halfvec() -> None:
    c = conv(extension("halfvec"))
    assert c.convert("[0.099975586,1]") == [0.099975586, 1.0]
    assert c.schema["items"] == {"type": "float", "optional": False}
    assert c.schema["name"] == "io.debezium.data.FloatVector"


def test_sparsevec_map_is_written_as_pairs_in_hashmap_order() -> None:
    c = conv(extension("sparsevec"), nullable=False)
    assert c.convert("{1:1.5,20:2,3:-1,17:4}/30") == {"dimensions": 30,
                                                      "vector": [[1, 1.5], [17, 4.0], [3, -1.0], [20, 2.0]]}
    assert c.convert("{}/5") == {"dimensions": 5, "vector": []}
    assert c.schema == {
        "type": "struct",
        "fields": [{"type": "int16", "optional": False, "field": "dimensions"},
                   {"type": "map", "keys": {"type": "int16", "optional": False},
                    "values": {"type": "double", "optional": False}, "optional": False, "field": "vector"}],
        "optional": False, "name": "io.debezium.data.SparseDoubleVector", "version": 1,
        "doc": "Sparse double vector", "field": "c"}
    assert c.null_value == []
