"""SMALLINT/INTEGER/BIGINT/OID and REAL/DOUBLE PRECISION.

Floating-point NaN and infinities are rendered as the JSON strings ``"NaN"``, ``"Infinity"`` and
``"-Infinity"``: Kafka's JsonConverter writes doubles with Jackson, whose ``WRITE_NAN_AS_STRINGS``
feature is on by default.
"""

from __future__ import annotations

from cdc_sources.common import kschema as ks
from cdc_sources.postgres.converters.model import ColumnType, TypeMapping
from cdc_sources.postgres.converters.settings import ConverterSettings

FLOAT_SPECIALS = {"NaN": "NaN", "Infinity": "Infinity", "-Infinity": "-Infinity"}
"""PostgreSQL's text for non-finite floats -> Jackson's rendering of the Java value."""


def parse_float(text: str) -> float | str:
    """A float column value: a JSON number, or Jackson's string for NaN and the infinities."""
    special = FLOAT_SPECIALS.get(text)
    return float(text) if special is None else special


def int16_mapping(col: ColumnType, settings: ConverterSettings) -> TypeMapping:
    """SMALLINT (and SMALLSERIAL) -> ``int16``."""
    return TypeMapping(ks.primitive("int16"), int, 0)


def int32_mapping(col: ColumnType, settings: ConverterSettings) -> TypeMapping:
    """INTEGER (and SERIAL) -> ``int32``."""
    return TypeMapping(ks.primitive("int32"), int, 0)


def int64_mapping(col: ColumnType, settings: ConverterSettings) -> TypeMapping:
    """BIGINT, BIGSERIAL and OID -> ``int64``."""
    return TypeMapping(ks.primitive("int64"), int, 0)


def float32_mapping(col: ColumnType, settings: ConverterSettings) -> TypeMapping:
    """REAL -> ``float``; PostgreSQL prints the shortest digits that round-trip, as Java does."""
    return TypeMapping(ks.primitive("float"), parse_float, 0.0)


def float64_mapping(col: ColumnType, settings: ConverterSettings) -> TypeMapping:
    """DOUBLE PRECISION -> ``double``."""
    return TypeMapping(ks.primitive("double"), parse_float, 0.0)
