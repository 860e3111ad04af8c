"""Debezium's spatial structs, shared by the connectors that capture geometries.

``io.debezium.data.geometry.Point`` is ``{x, y, wkb, srid}`` (x and y required, wkb and srid
optional); ``io.debezium.data.geometry.Geometry`` and ``...Geography`` are ``{wkb, srid}``.
Debezium's Geometry builder marks the schema optional itself, so a NOT NULL geometry column
still gets an optional field schema (the connectors apply that rule).
"""

from __future__ import annotations

from typing import Final

from cdc_sources.common import kschema as ks

__all__ = ["EMPTY_GEOMETRY_COLLECTION_WKB", "GEOGRAPHY_SCHEMA", "GEOMETRY_SCHEMA", "POINT_SCHEMA"]

POINT_SCHEMA: Final = ks.struct(
    "io.debezium.data.geometry.Point",
    [("x", ks.primitive("double"), False), ("y", ks.primitive("double"), False),
     ("wkb", ks.primitive("bytes"), True), ("srid", ks.primitive("int32"), True)],
    doc="Geometry (POINT)",
)
_GEOMETRY_FIELDS = [("wkb", ks.primitive("bytes"), False), ("srid", ks.primitive("int32"), True)]
GEOMETRY_SCHEMA: Final = ks.struct("io.debezium.data.geometry.Geometry", _GEOMETRY_FIELDS, doc="Geometry")
GEOGRAPHY_SCHEMA: Final = ks.struct("io.debezium.data.geometry.Geography", _GEOMETRY_FIELDS, doc="Geography")

EMPTY_GEOMETRY_COLLECTION_WKB: Final = bytes.fromhex("010700000000000000")
"""``GEOMETRYCOLLECTION EMPTY`` as little-endian WKB: the value Debezium falls back to."""
