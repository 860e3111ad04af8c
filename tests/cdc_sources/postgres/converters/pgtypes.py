"""Builders for the catalog objects the converter tests feed in (built-in OIDs as in PostgreSQL)."""

from __future__ import annotations

from cdc_sources.postgres.converters import ConverterSettings, converter_for
from cdc_sources.postgres.converters.column_meta import Origin
from cdc_sources.postgres.converters.model import ColumnConverter
from cdc_sources.postgres.types import PgColumn, PgType

OIDS = {
    "bool": 16, "bytea": 17, "char": 18, "name": 19, "int8": 20, "int2": 21, "int4": 23, "text": 25, "oid": 26,
    "json": 114, "xml": 142, "point": 600, "lseg": 601, "path": 602, "box": 603, "polygon": 604, "line": 628,
    "cidr": 650, "float4": 700, "float8": 701, "circle": 718, "macaddr8": 774, "money": 790, "macaddr": 829,
    "inet": 869, "bpchar": 1042, "varchar": 1043, "date": 1082, "time": 1083, "timestamp": 1114,
    "timestamptz": 1184, "interval": 1186, "timetz": 1266, "bit": 1560, "varbit": 1562, "numeric": 1700,
    "refcursor": 1790, "uuid": 2950, "tsvector": 3614, "tsquery": 3615, "jsonb": 3802, "int4range": 3904,
    "numrange": 3906, "tsrange": 3908, "tstzrange": 3910, "daterange": 3912, "int8range": 3926,
}
ARRAY_OIDS = {
    "bool": 1000, "bytea": 1001, "char": 1002, "name": 1003, "int2": 1005, "int4": 1007, "text": 1009,
    "bpchar": 1014, "varchar": 1015, "int8": 1016, "point": 1017, "float4": 1021, "float8": 1022, "oid": 1028,
    "money": 791, "inet": 1041, "date": 1182, "time": 1183, "timestamp": 1115, "timestamptz": 1185,
    "interval": 1187, "timetz": 1270, "bit": 1561, "varbit": 1563, "numeric": 1231, "uuid": 2951, "json": 199,
    "jsonb": 3807, "xml": 143, "int8range": 3927, "box": 1020,
}


def builtin(name: str) -> PgType:
    """A pg_catalog base type."""
    return PgType(OIDS[name], name)


def array_of(element: PgType) -> PgType:
    """The array type of ``element``."""
    oid = ARRAY_OIDS.get(element.name, element.oid + 100_000)
    return PgType(oid, "_" + element.name, element.schema, "b", "A", element=element)


def extension(name: str, oid: int = 90_000) -> PgType:
    """An extension type installed in ``public`` (hstore, ltree, citext...)."""
    return PgType(oid, name, "public", "b", "U")


def enum(name: str, *labels: str, oid: int = 91_000) -> PgType:
    """An enum type in ``public``."""
    return PgType(oid, name, "public", "e", "E", enum_values=labels)


def domain(name: str, base: PgType, typmod: int = -1, oid: int = 92_000) -> PgType:
    """A domain in ``public``."""
    return PgType(oid, name, "public", "d", base.category, base=base, base_typmod=typmod)


def numeric_typmod(precision: int, scale: int) -> int:
    """``atttypmod`` of ``numeric(precision, scale)``."""
    return ((precision << 16) | scale) + 4


def varchar_typmod(length: int) -> int:
    """``atttypmod`` of ``varchar(length)`` / ``char(length)``."""
    return length + 4


def column(t: PgType | str, typmod: int = -1, *, nullable: bool = True, default: str | None = None,
           name: str = "c") -> PgColumn:
    """A column of type ``t`` (a built-in type name or a `PgType`)."""
    return PgColumn(name, builtin(t) if isinstance(t, str) else t, typmod, nullable, default, 1)


def conv(t: PgType | str, typmod: int = -1, settings: ConverterSettings | None = None, *,
         nullable: bool = True, default: str | None = None, name: str = "c", origin: Origin = "snapshot",
         propagate: bool = False) -> ColumnConverter:
    """The converter of a column of type ``t``; fails the test if the column is left out."""
    c = converter_for(column(t, typmod, nullable=nullable, default=default, name=name),
                      settings or ConverterSettings(), propagate_source_type=propagate, origin=origin)
    assert c is not None, f"{t} is left out"
    return c


def convert(t: PgType | str, text: str, typmod: int = -1, **settings: object) -> object:
    """Converts one value of a nullable column with the given settings."""
    return conv(t, typmod, ConverterSettings(**settings)).convert(text)  # type: ignore[arg-type]
