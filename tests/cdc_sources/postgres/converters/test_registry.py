"""Every type of the Debezium PostgreSQL type table has a mapping, with the right schema type."""

from __future__ import annotations

import pytest

from cdc_sources.postgres.converters import ConverterSettings
from cdc_sources.postgres.converters.converter import column_type
from cdc_sources.postgres.converters.model import ColumnType
from cdc_sources.postgres.converters.registry import mapping_for
from cdc_sources.postgres.types import PgType
from tests.cdc_sources.postgres.converters.pgtypes import OIDS, builtin, column, enum, extension


@pytest.mark.parametrize(("name", "kind", "logical"), [
    ("bool", "boolean", None), ("bytea", "bytes", None), ("char", "string", None), ("name", "string", None),
    ("int8", "int64", None), ("int2", "int16", None), ("int4", "int32", None), ("text", "string", None),
    ("oid", "int64", None), ("json", "string", "io.debezium.data.Json"), ("xml", "string", "io.debezium.data.Xml"),
    ("point", "struct", "io.debezium.data.geometry.Point"), ("cidr", "string", None), ("float4", "float", None),
    ("float8", "double", None), ("macaddr8", "string", None),
    ("money", "bytes", "org.apache.kafka.connect.data.Decimal"),
    ("macaddr", "string", None), ("inet", "string", None), ("bpchar", "string", None), ("varchar", "string", None),
    ("date", "int32", "io.debezium.time.Date"), ("time", "int64", "io.debezium.time.MicroTime"),
    ("timestamp", "int64", "io.debezium.time.MicroTimestamp"),
    ("timestamptz", "string", "io.debezium.time.ZonedTimestamp"),
    ("interval", "int64", "io.debezium.time.MicroDuration"), ("timetz", "string", "io.debezium.time.ZonedTime"),
    ("numeric", "struct", "io.debezium.data.VariableScaleDecimal"), ("uuid", "string", "io.debezium.data.Uuid"),
    ("tsvector", "string", "io.debezium.data.Tsvector"), ("jsonb", "string", "io.debezium.data.Json"),
    ("int4range", "string", None), ("numrange", "string", None), ("tsrange", "string", None),
    ("tstzrange", "string", None), ("daterange", "string", None), ("int8range", "string", None),
])
def test_builtin_types(name: str, kind: str, logical: str | None) -> None:
    mapping = mapping_for(column_type(column(name)), ConverterSettings())
    assert mapping is not None
    assert mapping.schema["type"] == kind
    assert mapping.schema.get("name") == logical


@pytest.mark.parametrize(("name", "kind", "logical"), [
    ("geometry", "struct", "io.debezium.data.geometry.Geometry"),
    ("geography", "struct", "io.debezium.data.geometry.Geography"), ("citext", "string", None),
    ("hstore", "string", "io.debezium.data.Json"), ("ltree", "string", "io.debezium.data.Ltree"),
    ("isbn", "string", None), ("vector", "array", "io.debezium.data.DoubleVector"),
    ("halfvec", "array", "io.debezium.data.FloatVector"),
    ("sparsevec", "struct", "io.debezium.data.SparseDoubleVector"),
])
def test_extension_types_in_any_schema(name: str, kind: str, logical: str | None) -> None:
    for schema in ("public", "extensions"):
        t = PgType(95_000, name, schema)
        mapping = mapping_for(ColumnType(t, 0, 0), ConverterSettings())
        assert mapping is not None
        assert (mapping.schema["type"], mapping.schema.get("name")) == (kind, logical)


def test_builtin_oids_are_only_trusted_in_pg_catalog() -> None:
    lookalike = PgType(OIDS["int4"], "int4", "public")
    assert mapping_for(ColumnType(lookalike, 10, 0), ConverterSettings()) is None


@pytest.mark.parametrize("name", ["box", "circle", "line", "lseg", "path", "polygon", "tsquery", "refcursor"])
def test_types_without_mapping(name: str) -> None:
    assert mapping_for(ColumnType(builtin(name), 0, 0), ConverterSettings()) is None
    assert mapping_for(ColumnType(builtin(name), 0, 0), ConverterSettings(include_unknown_datatypes=True)) is not None


def test_enum_and_composite() -> None:
    assert mapping_for(ColumnType(enum("mood", "a"), 0, 0), ConverterSettings()) is not None
    composite = PgType(96_000, "address", "public", "c", "C")
    assert mapping_for(ColumnType(composite, 0, 0), ConverterSettings()) is None
    assert extension("citext").schema == "public"
