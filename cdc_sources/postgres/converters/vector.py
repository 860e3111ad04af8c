"""pgvector's VECTOR, HALFVEC and SPARSEVEC.

VECTOR -> ``io.debezium.data.DoubleVector`` (array of doubles), HALFVEC ->
``io.debezium.data.FloatVector`` (array of floats), SPARSEVEC -> ``io.debezium.data.SparseDoubleVector``
``{dimensions, vector}`` where ``vector`` is an INT16 -> FLOAT64 map. JsonConverter writes a map
with non-string keys as a list of ``[key, value]`` pairs, in the Java ``HashMap``'s order.
"""

from __future__ import annotations

from typing import Any

from cdc_sources.common import kschema as ks
from cdc_sources.common.javacompat import hashmap_order, short_hash
from cdc_sources.postgres.converters.model import ColumnType, TypeMapping, ValueConversionError
from cdc_sources.postgres.converters.settings import ConverterSettings

DOUBLE_VECTOR = {**ks.array(ks.primitive("double"), items_optional=False),
                 "name": "io.debezium.data.DoubleVector", "version": 1}
FLOAT_VECTOR = {**ks.array(ks.primitive("float"), items_optional=False),
                "name": "io.debezium.data.FloatVector", "version": 1}
SPARSE_VECTOR = ks.struct(
    "io.debezium.data.SparseDoubleVector",
    [("dimensions", ks.primitive("int16"), False),
     ("vector", ks.map_of(ks.primitive("int16"), ks.primitive("double"), values_optional=False), False)],
    doc="Sparse double vector",
)


def _bad(text: str, kind: str) -> ValueConversionError:
    return ValueConversionError(f"cannot parse {text[:40]!r} as a pgvector {kind}", kind=kind)


def parse_vector(text: str) -> list[float]:
    """``[1,2.5,3]`` -> [1.0, 2.5, 3.0]."""
    text = text.strip()
    if text[:1] != "[" or text[-1:] != "]":
        raise _bad(text, "vector")
    return [float(part) for part in text[1:-1].split(",")]


def parse_sparse_vector(text: str) -> dict[str, Any]:
    """``{1:1.5,3:2}/5`` -> ``{"dimensions": 5, "vector": [[1, 1.5], [3, 2.0]]}``."""
    body, slash, dims = text.strip().partition("/")
    body = body.strip()
    if not slash or body[:1] != "{" or body[-1:] != "}":
        raise _bad(text, "sparsevec")
    inner = body[1:-1].strip()
    pairs: list[list[Any]] = []
    if inner:
        for element in inner.split(","):
            index, colon, value = element.partition(":")
            if not colon:
                raise _bad(text, "sparsevec")
            pairs.append([int(index), float(value)])
        order = hashmap_order([short_hash(p[0]) for p in pairs], initial_capacity=len(pairs))
        pairs = [pairs[i] for i in order]
    return {"dimensions": int(dims), "vector": pairs}


def vector_mapping(col: ColumnType, settings: ConverterSettings) -> TypeMapping:
    """VECTOR."""
    return TypeMapping(DOUBLE_VECTOR, parse_vector, [])


def halfvec_mapping(col: ColumnType, settings: ConverterSettings) -> TypeMapping:
    """HALFVEC."""
    return TypeMapping(FLOAT_VECTOR, parse_vector, [])


def sparsevec_mapping(col: ColumnType, settings: ConverterSettings) -> TypeMapping:
    """SPARSEVEC (Debezium's NOT NULL fallback is an empty list, kept as is)."""
    return TypeMapping(SPARSE_VECTOR, parse_sparse_vector, [])
