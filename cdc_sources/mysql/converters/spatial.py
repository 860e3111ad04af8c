"""The spatial types: ``io.debezium.data.geometry.Geometry`` and ``...Point`` structs.

MySQL and MariaDB store a geometry as a 4-byte little-endian SRID followed by OGC WKB; both
libraries deliver those bytes. ``wkb`` is the WKB as stored and ``srid`` the SRID (null when 0).
A POINT column's value must be a 2D point (21 WKB bytes); x and y are read from the WKB. The
Geometry schema is always optional, as Debezium's builder makes it.
"""

from __future__ import annotations

import struct
from typing import Any

from cdc_sources.common.geometry import EMPTY_GEOMETRY_COLLECTION_WKB, GEOMETRY_SCHEMA, POINT_SCHEMA
from cdc_sources.common.javacompat import b64
from cdc_sources.mysql.converters.model import ColumnFacts, TypeMapping, ValueConversionError, fixed, no_default

GEOMETRY_NAMES = ("GEOMETRY", "LINESTRING", "POLYGON", "MULTIPOINT", "MULTILINESTRING", "MULTIPOLYGON")
"""Type names rendered as Geometry (with GEOMETRYCOLLECTION/GEOMCOLLECTION, see `is_collection`)."""

_SRID = struct.Struct("<i")
_POINT_SIZE = 21
_EMPTY = {"wkb": b64(EMPTY_GEOMETRY_COLLECTION_WKB), "srid": None}


def is_collection(type_name: str) -> bool:
    """Debezium's ``isGeometryCollection``."""
    return type_name in ("GEOMETRYCOLLECTION", "GEOMCOLLECTION") or type_name.endswith(".GEOMCOLLECTION")


def _split(value: bytes) -> tuple[bytes, int | None]:
    if len(value) < 4:
        raise ValueConversionError(f"a geometry value has only {len(value)} bytes; MySQL stores a 4-byte SRID "
                                   "before the WKB", kind="geometry")
    srid = _SRID.unpack_from(value)[0]
    return value[4:], (srid or None)


def geometry_value(value: bytes) -> dict[str, Any]:
    """``{wkb, srid}`` of MySQL's internal geometry bytes."""
    wkb, srid = _split(value)
    return {"wkb": b64(wkb), "srid": srid}


def point_value(value: bytes) -> dict[str, Any]:
    """``{x, y, wkb, srid}`` of MySQL's internal bytes of a POINT."""
    wkb, srid = _split(value)
    if len(wkb) != _POINT_SIZE:
        raise ValueConversionError("Failed to parse and read a value of type POINT: the WKB is not a 2D point "
                                   f"({len(wkb)} bytes)", kind="point")
    order = "<" if wkb[0] else ">"
    kind, x, y = struct.unpack_from(order + "Idd", wkb, 1)
    if kind != 1:
        raise ValueConversionError(f"Invalid WKB for 2D Point (wrong type {kind})", kind="point")
    return {"x": x, "y": y, "wkb": b64(wkb), "srid": srid}


def geometry_mapping(facts: ColumnFacts) -> TypeMapping:
    """GEOMETRY, LINESTRING, POLYGON, MULTI* and GEOMETRYCOLLECTION."""
    return TypeMapping(GEOMETRY_SCHEMA, fixed(geometry_value), _EMPTY, no_default, always_optional=True,
                       may_fail=True)


def point_mapping(facts: ColumnFacts) -> TypeMapping:
    """POINT. (Debezium's fallback for a NULL in a NOT NULL POINT is an invalid struct and fails
    in JsonConverter; None stands for it here.)"""
    return TypeMapping(POINT_SCHEMA, fixed(point_value), None, no_default, may_fail=True)
