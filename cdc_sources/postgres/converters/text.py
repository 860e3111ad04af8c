"""Types Debezium passes through as their PostgreSQL text.

Character types, network addresses, ranges, CITEXT and ISBN are plain ``string``s; JSON/JSONB,
XML, UUID, LTREE, TSVECTOR and enums carry a Debezium logical name. The text is not reformatted:
pgoutput and ``COPY`` print these types exactly as Debezium receives them (``bpchar`` keeps its
padding, JSONB is PostgreSQL's normalized form).
"""

from __future__ import annotations

from cdc_sources.common import kschema as ks
from cdc_sources.postgres.converters.model import ColumnType, TypeFactory, TypeMapping
from cdc_sources.postgres.converters.settings import ConverterSettings


def identity(text: str) -> str:
    """The value as PostgreSQL printed it."""
    return text


def string_mapping(col: ColumnType, settings: ConverterSettings) -> TypeMapping:
    """CHAR, VARCHAR, TEXT, NAME, "char", INET, CIDR, MACADDR(8), ranges, CITEXT, ISBN."""
    return TypeMapping(ks.primitive("string"), identity, "")


def name_mapping(col: ColumnType, settings: ConverterSettings) -> TypeMapping:
    """NAME: a string, but Debezium's stream decoder knows no ``name`` type and passes null
    (unless ``include.unknown.datatypes`` is on)."""
    lost = col.origin == "stream" and not settings.include_unknown_datatypes
    return TypeMapping(ks.primitive("string"), identity, "", values_lost=lost)


def named_string(name: str) -> TypeFactory:
    """A factory for a string type with a Debezium logical name (version 1)."""
    schema = ks.logical("string", name)

    def factory(col: ColumnType, settings: ConverterSettings) -> TypeMapping:
        return TypeMapping(schema, identity, "")
    return factory


json_mapping = named_string("io.debezium.data.Json")
xml_mapping = named_string("io.debezium.data.Xml")
uuid_mapping = named_string("io.debezium.data.Uuid")
ltree_mapping = named_string("io.debezium.data.Ltree")
tsvector_mapping = named_string("io.debezium.data.Tsvector")


def enum_mapping(col: ColumnType, settings: ConverterSettings) -> TypeMapping:
    """An enum: ``io.debezium.data.Enum`` whose ``allowed`` parameter lists the labels in order."""
    schema = ks.logical("string", "io.debezium.data.Enum", params={"allowed": ",".join(col.pg.enum_values)})
    return TypeMapping(schema, identity, "")
