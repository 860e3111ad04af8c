"""POINT and the PostGIS GEOMETRY/GEOGRAPHY types.

POINT becomes ``io.debezium.data.geometry.Point`` ``{x, y, wkb, srid}`` where ``wkb`` is a
little-endian WKB point and ``srid`` is null. PostGIS values arrive as hex EWKB; Debezium keeps
the EWKB bytes unchanged as ``wkb`` (SRID flag included) and reads ``srid`` out of them.

Debezium 3.6 has no mapping for LINE, LSEG, BOX, PATH, POLYGON and CIRCLE: they are left out,
or with ``include.unknown.datatypes=true`` sent as the bytes of pgjdbc's rendering of the value
(Java ``Double.toString`` numbers, e.g. ``(1.0,2.0),(0.0,0.0)``), reproduced by `pgjdbc_text`.
"""

from __future__ import annotations

import math
import re
import struct
from typing import Any

from cdc_sources.common.geometry import EMPTY_GEOMETRY_COLLECTION_WKB, GEOGRAPHY_SCHEMA, GEOMETRY_SCHEMA, POINT_SCHEMA
from cdc_sources.common.javacompat import b64, double_to_string
from cdc_sources.postgres.converters.model import ColumnType, TypeMapping, ValueConversionError
from cdc_sources.postgres.converters.numeric import parse_float
from cdc_sources.postgres.converters.settings import ConverterSettings

_EMPTY_COLLECTION = {"wkb": b64(EMPTY_GEOMETRY_COLLECTION_WKB), "srid": None}
_EWKB_SRID_FLAG = 0x20000000
_NUMBER = re.compile(r"-?(?:Infinity|NaN|\d+(?:\.\d+)?(?:e[-+]?\d+)?)")


def point_value(x: float, y: float) -> dict[str, Any]:
    """The Point struct of (x, y)."""
    wkb = struct.pack("<BIdd", 1, 1, x, y)
    return {"x": _json_double(x), "y": _json_double(y), "wkb": b64(wkb), "srid": None}


def _json_double(value: float) -> float | str:
    if math.isnan(value):
        return "NaN"
    if value in (float("inf"), float("-inf")):
        return "Infinity" if value > 0 else "-Infinity"
    return value


def parse_point(text: str) -> dict[str, Any]:
    """A POINT text ``(x,y)``."""
    inner = text.strip()
    if inner[:1] != "(" or inner[-1:] != ")" or inner.count(",") != 1:
        raise ValueConversionError(f"cannot parse {text!r} as a PostgreSQL point", kind="point")
    x, y = (_as_float(part.strip()) for part in inner[1:-1].split(","))
    return point_value(x, y)


def _as_float(text: str) -> float:
    value = parse_float(text)
    return float(value)


def point_mapping(col: ColumnType, settings: ConverterSettings) -> TypeMapping:
    """POINT."""
    return TypeMapping(POINT_SCHEMA, parse_point, point_value(0.0, 0.0))


def parse_ewkb(text: str) -> dict[str, Any]:
    """A PostGIS hex EWKB value -> ``{wkb, srid}``."""
    data = bytes.fromhex(text)
    if len(data) < 9:
        raise ValueConversionError(f"invalid EWKB (only {len(data)} bytes)", kind="geometry")
    order = "<" if data[0] else ">"
    (geom_type,) = struct.unpack_from(order + "I", data, 1)
    srid = struct.unpack_from(order + "i", data, 5)[0] if geom_type & _EWKB_SRID_FLAG else None
    return {"wkb": b64(data), "srid": srid}


def geometry_mapping(col: ColumnType, settings: ConverterSettings) -> TypeMapping:
    """PostGIS GEOMETRY (the Debezium schema is optional even for NOT NULL columns)."""
    return TypeMapping(GEOMETRY_SCHEMA, parse_ewkb, _EMPTY_COLLECTION, always_optional=True)


def geography_mapping(col: ColumnType, settings: ConverterSettings) -> TypeMapping:
    """PostGIS GEOGRAPHY."""
    return TypeMapping(GEOGRAPHY_SCHEMA, parse_ewkb, _EMPTY_COLLECTION)


def pgjdbc_text(text: str) -> str:
    """A geometric value as pgjdbc's ``PGobject.getValue`` re-renders it (Java doubles)."""
    return _NUMBER.sub(lambda m: double_to_string(float(m.group(0))), text)
