"""Column-at-a-time rendering of field values as JSON fragments, vectorised where proven equal.

`encoder_for` maps a column (its PostgreSQL type, the converter settings and the field schema the
converter declares) to one of the vectorised encoders (`cdc_sources.common.vector_encoders`, and
`vector_encoders` for PostgreSQL's own layouts), only for the cases the property tests prove
equal to the per-value converter, and only when the field's converter is that column's plain
converter (a column transform such as a mask or a hash changes the values: those fields are
always rendered per value). As a last guard every chosen encoder must reproduce the converter
on a set of probe values, else the column is rendered per value.

`render_column` then renders one batch of a column: the encoder's fragments, the rows it
declined rendered by ``FieldCodec.convert``, and NULL as the field's ``fallback``
(`cdc_sources.common.column_render`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any

from cdc_sources.common import column_render as common_render
from cdc_sources.common import kschema as ks
from cdc_sources.common import vector_encoders as cve
from cdc_sources.common.vector_encoders import VectorEncoder
from cdc_sources.postgres import vector_encoders as ve
from cdc_sources.postgres.converters import ConverterSettings, converter_for
from cdc_sources.postgres.converters.bits import parse_bool
from cdc_sources.postgres.converters.column_meta import Origin
from cdc_sources.postgres.converters.converter import column_type
from cdc_sources.postgres.converters.text import identity
from cdc_sources.postgres.schema import FieldCodec
from cdc_sources.postgres.types import PgColumn

log = logging.getLogger(__name__)

_INTEGERS = frozenset({20, 21, 23, 26})  # int8, int2, int4, oid
_NUMERIC, _DATE, _TIMESTAMP, _TIMESTAMPTZ = 1700, 1082, 1114, 1184
_TIME = "io.debezium.time."
_MILLIS = frozenset({_TIME + "Timestamp", ks.CONNECT_TIMESTAMP})
_DAYS = frozenset({_TIME + "Date", ks.CONNECT_DATE})

PROBES: dict[str, tuple[str, ...]] = {
    "integer": ("0", "-1", "32767", "-32768", "2147483647", "-9223372036854775808", "9223372036854775807"),
    "boolean": ("t", "f"),
    "string": ("", "a b", 'q"u\\o"', "é ☃ \u2028", "tab\there", "\x01"),
    "decimal_string": ("0", "-1.50", "123456789.123", "NaN", "Infinity", "-Infinity"),
    "timestamptz": ("2020-01-01 00:00:00+00", "1969-12-31 23:59:59.999999+00", "2020-02-29 12:34:56.5+00",
                    "0001-01-01 00:00:00+00", "9999-12-31 23:59:59.123+00", "infinity", "-infinity",
                    "0044-03-15 12:00:00+00 BC"),
    "timestamp": ("2020-01-01 00:00:00", "1969-12-31 23:59:59.999999", "1900-02-28 12:00:00.5",
                  "0001-01-01 00:00:00", "9999-12-31 23:59:59.000001", "infinity", "-infinity",
                  "0044-03-15 12:00:00 BC"),
    "date": ("2020-02-29", "1969-12-31", "1970-01-01", "0001-01-01", "9999-12-31", "1582-10-04",
             "infinity", "-infinity", "0044-03-15 BC"),
}
"""Texts each encoder must render exactly as the converter does (a start-up self-check)."""


def _decimal_probes(scale: int) -> tuple[str, ...]:
    def text(whole: str) -> str:
        return f"{whole}.{'0' * (scale - 1)}1" if scale else whole
    wholes = ("0", "-0", "1", "-1", "127", "-128", "32767", "-99999999", "12345678901")
    return tuple(text(w) for w in wholes if len(w.lstrip("-")) + scale <= 18)  # unscaled values in 64 bits


def encoder_for(column: PgColumn, convert: Callable[[str], Any], settings: ConverterSettings, *,
                origin: Origin = "snapshot") -> VectorEncoder | None:
    """The vectorised encoder for a field of ``column`` rendered by ``convert``, or None.

    Args:
        column: the table column the field renders.
        convert: the field's converter (``FieldCodec.convert``).
        settings: the connector's converter settings.
        origin: the path the field's codec was built for (snapshot: catalog; stream: Relation
            message).
    """
    plain = converter_for(column, settings, origin=origin)
    if plain is None or not common_render.same_function(convert, plain.convert):
        return None  # transformed (masked, hashed, truncated...) or not this column's converter
    chosen = _choose(column, plain.convert, plain.schema, settings, origin)
    if chosen is None:
        return None
    kind, encoder, probes = chosen
    if not common_render.agrees_on_probes(encoder, convert, probes):
        log.warning("vectorised %s encoder disagrees with the converter of column %s on probe values; "
                    "rendering it value by value", kind, column.name)
        return None
    return encoder


def _choose(column: PgColumn, convert: Callable[[str], Any], schema: dict[str, Any],
            settings: ConverterSettings, origin: Origin) -> tuple[str, VectorEncoder, Sequence[str]] | None:
    pg = column_type(column, origin).pg
    oid = pg.oid if pg.schema == "pg_catalog" else None
    name = schema.get("name")
    if convert is identity:
        return "string", cve.encode_string, PROBES["string"]
    if convert is int and oid in _INTEGERS:
        return "integer", cve.encode_integer, PROBES["integer"]
    if convert is parse_bool:
        return "boolean", ve.encode_boolean, PROBES["boolean"]
    if oid == _NUMERIC and name == ks.DECIMAL and settings.decimal_handling_mode == "precise":
        scale = int(schema["parameters"]["scale"])
        return "decimal", cve.decimal_encoder(scale), _decimal_probes(scale)
    if oid == _NUMERIC and schema["type"] == "string" and settings.decimal_handling_mode == "string":
        return "decimal_string", ve.encode_decimal_string, PROBES["decimal_string"]
    if oid == _TIMESTAMPTZ and name == _TIME + "ZonedTimestamp":
        width = len(convert("2000-01-01 00:00:00+00")) - 21  # "...00:00:00Z" or "...00:00:00.000Z"
        return "timestamptz", ve.zoned_timestamp_encoder(max(width, 0)), PROBES["timestamptz"]
    if oid == _TIMESTAMP and (name == _TIME + "MicroTimestamp" or name in _MILLIS):
        divisor = 1 if name == _TIME + "MicroTimestamp" else 1000
        return "timestamp", cve.timestamp_encoder(divisor), PROBES["timestamp"]
    if oid == _DATE and name in _DAYS:
        return "date", cve.encode_date, PROBES["date"]
    return None


def render_column(texts: Any, field: FieldCodec, encoder: VectorEncoder | None) -> Any:
    """The JSON text of ``field`` for every row of ``texts`` (a pyarrow string array), no nulls.

    Byte for byte ``dumps(field.convert(text))``, and ``dumps(field.fallback)`` for NULL, as
    ``TableCodec.row`` renders them (`cdc_sources.common.column_render.render_column`). Raises
    what the converter raises on a value it rejects.
    """
    return common_render.render_column(texts, field.convert, field.fallback, encoder)
