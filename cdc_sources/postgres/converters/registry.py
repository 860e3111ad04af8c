"""Which factory renders which PostgreSQL type: Debezium 3.6's type table, as data.

Built-in types are keyed by OID (stable across servers), extension types by name (Debezium
recognises ``geometry``, ``hstore``... in any schema), enums by kind. Arrays reuse their
element's mapping. A type with no entry is left out, or rendered as opaque bytes with
``include.unknown.datatypes=true``.
"""

from __future__ import annotations

from functools import partial
from types import MappingProxyType

from cdc_sources.postgres.converters import (
    arrays,
    binary,
    bits,
    decimals,
    geometric,
    hstore,
    interval,
    numeric,
    temporal,
    text,
    vector,
)
from cdc_sources.postgres.converters.model import ColumnType, TypeFactory, TypeMapping
from cdc_sources.postgres.converters.settings import ConverterSettings

_S = text.string_mapping

CORE: MappingProxyType[int, TypeFactory] = MappingProxyType({
    16: bits.bool_mapping, 17: binary.bytea_mapping, 18: _S, 19: text.name_mapping, 20: numeric.int64_mapping,
    21: numeric.int16_mapping, 23: numeric.int32_mapping, 25: _S, 26: numeric.int64_mapping,
    114: text.json_mapping, 142: text.xml_mapping, 600: geometric.point_mapping, 650: _S,
    700: numeric.float32_mapping, 701: numeric.float64_mapping, 774: _S, 790: decimals.money_mapping,
    829: _S, 869: _S, 1042: _S, 1043: _S, 1082: temporal.date_mapping, 1083: temporal.time_mapping,
    1114: temporal.timestamp_mapping, 1184: temporal.timestamptz_mapping, 1186: interval.interval_mapping,
    1266: temporal.timetz_mapping, 1560: bits.bit_mapping, 1562: bits.bit_mapping,
    1700: decimals.numeric_mapping, 2950: text.uuid_mapping, 3614: text.tsvector_mapping,
    3802: text.json_mapping, 3904: _S, 3906: _S, 3908: _S, 3910: _S, 3912: _S, 3926: _S,
})
"""Built-in type OID -> factory (bool, bytea, "char", name, int8...int4range...)."""

EXTENSIONS: MappingProxyType[str, TypeFactory] = MappingProxyType({
    "geometry": geometric.geometry_mapping, "geography": geometric.geography_mapping, "citext": _S,
    "hstore": hstore.hstore_mapping, "ltree": text.ltree_mapping, "isbn": _S,
    "vector": vector.vector_mapping, "halfvec": vector.halfvec_mapping, "sparsevec": vector.sparsevec_mapping,
})
"""Extension type name -> factory."""

GEOMETRIC_OIDS = frozenset({601, 602, 603, 604, 628, 718})
"""LSEG, PATH, BOX, POLYGON, LINE, CIRCLE: no Debezium mapping; pgjdbc re-renders them."""

UNSUPPORTED_ARRAY_ELEMENTS = frozenset({790, 19, 1186, 1562, 142, 600, 1790, 1560})
"""MONEY, NAME, INTERVAL, VARBIT, XML, POINT, REFCURSOR arrays: Debezium leaves them out.

BIT arrays too: Debezium gives them a BIT schema but list values, and fails on the first value.
"""

OPTIONAL_ITEMS = frozenset({21, 23, 20, 26, 18, 1043, 25, 1042, 869, 650, 829, 774, 3908, 3910, 3912,
                            3904, 3906, 3926, 1700, 700, 701, 16, 1082, 2950, 3802, 114, 1083, 1266,
                            1114, 1184, 17})
"""Element OIDs whose arrays Debezium lists explicitly, with optional items."""

OPTIONAL_ITEM_EXTENSIONS = frozenset({"geometry", "geography", "citext", "hstore", "ltree"})

_NOT_ARRAYS = frozenset({22, 30})  # int2vector, oidvector: typcategory 'A' but not array text

_ELEMENT_OVERRIDES: MappingProxyType[int, TypeFactory] = MappingProxyType({
    1082: partial(temporal.date_mapping, legacy=True),
    1083: partial(temporal.time_mapping, millis_only=True),
    1114: partial(temporal.timestamp_mapping, legacy=True),
    1184: partial(temporal.timestamptz_mapping, legacy=True),
    1266: partial(temporal.timetz_mapping, whole_seconds=True),
})
"""Array elements Debezium reads through ``java.sql`` classes (see `javasql`)."""


def mapping_for(col: ColumnType, settings: ConverterSettings) -> TypeMapping | None:
    """The mapping of a (domain-resolved) type, or None when Debezium leaves it out."""
    t = col.pg
    is_core = t.schema == "pg_catalog"
    if is_core and t.oid == 1082 and col.origin == "snapshot":
        return temporal.date_mapping(col, settings, legacy=True)  # snapshots read java.sql.Date
    factory = CORE.get(t.oid) if is_core else None
    if factory is None:
        factory = EXTENSIONS.get(t.name)
    if factory is not None:
        return factory(col, settings)
    if t.kind == "e":
        return text.enum_mapping(col, settings)
    if t.element is not None and t.oid not in _NOT_ARRAYS:
        return _array(col, settings)
    return _unknown(col, settings)


def _unknown(col: ColumnType, settings: ConverterSettings) -> TypeMapping | None:
    if not settings.include_unknown_datatypes:
        return None
    render = geometric.pgjdbc_text if col.pg.oid in GEOMETRIC_OIDS else None
    return binary.opaque_mapping(render)(col, settings)


def _array(col: ColumnType, settings: ConverterSettings) -> TypeMapping | None:
    element_type = col.pg.element
    assert element_type is not None
    is_core = element_type.schema == "pg_catalog"
    if is_core and element_type.oid in UNSUPPORTED_ARRAY_ELEMENTS:
        return None
    element_col = ColumnType(element_type, col.length, col.scale, col.origin)
    element: TypeMapping | None
    if is_core and element_type.oid in _ELEMENT_OVERRIDES:
        element = _ELEMENT_OVERRIDES[element_type.oid](element_col, settings)
    else:
        element = mapping_for(element_col, settings) if element_type.element is None else None
    if element is None:
        return None
    explicit = (element_type.oid in OPTIONAL_ITEMS) if is_core else element_type.name in OPTIONAL_ITEM_EXTENSIONS
    return arrays.array_mapping(element_type, element, settings, items_optional=explicit)
