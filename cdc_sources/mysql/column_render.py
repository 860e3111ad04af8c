"""Which vectorised encoder renders a MySQL snapshot field, if any.

`encoder_for` maps a field to an encoder (`cdc_sources.common.vector_encoders`, `vector_encoders`)
only when all of these hold, and otherwise leaves it to the per-value converter:

* the field's converter is its column's plain snapshot converter (a column transform such as a
  mask, a hash or a truncation changes the values: those fields are always rendered per value);
* the result column arrives as text of the expected protocol type (`raw_values.decoding`), so a
  ``snapshot.select.statement.overrides`` expression of another type is never mis-encoded;
* the converter's schema and the converter settings are a case the encoders were written (and
  property-tested) for;
* the encoder reproduces the converter on a set of probe texts (a start-up self-check).

Rendering itself is `cdc_sources.common.column_render.render_column`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any

from pymysql.constants import FIELD_TYPE

from cdc_sources.common import column_render as common_render
from cdc_sources.common import kschema as ks
from cdc_sources.common import vector_encoders as cve
from cdc_sources.common.vector_encoders import VectorEncoder
from cdc_sources.mysql import vector_encoders as ve
from cdc_sources.mysql.converters import MySqlConverterSettings, converter_for, integers, text
from cdc_sources.mysql.converters.typenames import matches_any
from cdc_sources.mysql.model import ColumnDef
from cdc_sources.mysql.raw_values import ResultColumn, decoding

log = logging.getLogger(__name__)

_INTEGER_TYPES = frozenset({FIELD_TYPE.TINY, FIELD_TYPE.SHORT, FIELD_TYPE.INT24, FIELD_TYPE.LONG,
                            FIELD_TYPE.LONGLONG})
_STRING_TYPES = frozenset({FIELD_TYPE.STRING, FIELD_TYPE.VAR_STRING, FIELD_TYPE.VARCHAR, FIELD_TYPE.BLOB,
                           FIELD_TYPE.TINY_BLOB, FIELD_TYPE.MEDIUM_BLOB, FIELD_TYPE.LONG_BLOB, FIELD_TYPE.JSON,
                           FIELD_TYPE.ENUM, FIELD_TYPE.SET})
_DECIMAL_TYPES = frozenset({FIELD_TYPE.DECIMAL, FIELD_TYPE.NEWDECIMAL})
_DATE_TYPES = frozenset({FIELD_TYPE.DATE, FIELD_TYPE.NEWDATE})
_TIME = "io.debezium.time."
_DAYS = frozenset({_TIME + "Date", ks.CONNECT_DATE})
_MILLIS = frozenset({_TIME + "Timestamp", ks.CONNECT_TIMESTAMP})
_MAX_LONG_DIGITS = 18  # unscaled decimals of at most 18 digits fit in 64 bits

PROBES: dict[str, tuple[str, ...]] = {
    "integer": ("0", "-1", "127", "-128", "2147483647", "-2147483648", "9223372036854775807",
                "-9223372036854775808", "0042"),
    "unsigned_long": ("0", "1", "123456789012345678", "9223372036854775807", "9223372036854775808",
                      "18446744073709551615"),
    "year": ("2024", "1901", "2155", "0000", "1000"),
    "string": ("", "a b", 'q"u\\o"', "é ☃ \u2028", "tab\there", "\x01", "nul\x00"),
    "date": ("2020-02-29", "1969-12-31", "1970-01-01", "0001-01-01", "9999-12-31", "0000-00-00", "2020-00-10",
             "2020-01-00", "0069-05-05", "0099-12-31", "0100-01-01", "2023-02-29", "2024-04-31"),
    "datetime": ("2020-01-01 00:00:00", "1969-12-31 23:59:59.999999", "1900-02-28 12:00:00.5", "0001-01-01 00:00:00",
                 "9999-12-31 23:59:59.000001", "0000-00-00 00:00:00", "2020-00-01 00:00:00.000",
                 "0069-01-01 00:00:00", "0099-12-31 23:59:59.9", "2024-01-02 03:04:05.678"),
    "timestamp": ("1970-01-01 00:00:01", "2038-01-19 03:14:07.999999", "2024-01-02 03:04:05.500",
                  "2024-01-02 03:04:05.000", "2024-01-02 03:04:05.0", "2024-01-02 03:04:05.120000",
                  "0000-00-00 00:00:00", "0000-00-00 00:00:00.000"),
}
"""Texts each encoder must render exactly as the converter does (the self-check)."""


def decimal_probes(scale: int) -> tuple[str, ...]:
    """DECIMAL texts with ``scale`` fraction digits (and a few without), for the self-check."""
    def with_scale(whole: str) -> str:
        return f"{whole}.{'0' * (scale - 1)}1" if scale else whole
    wholes = ("0", "-0", "1", "-1", "127", "-128", "32767", "-99999999", "12345678901")
    fitting = tuple(with_scale(w) for w in wholes if len(w.lstrip("-")) + scale <= _MAX_LONG_DIGITS)
    return (*fitting, "1", "-2.5")


def encoder_for(column: ColumnDef, convert: Callable[[Any], Any], settings: MySqlConverterSettings,
                result: ResultColumn) -> VectorEncoder | None:
    """The vectorised encoder for a snapshot field of ``column`` rendered by ``convert``, or None.

    Args:
        column: the table column the field renders.
        convert: the field's converter (``FieldCodec.convert``).
        settings: the connector's converter settings.
        result: the result column the values arrive in.
    """
    plain = converter_for(column, settings, origin="snapshot")
    if plain is None or not common_render.same_function(convert, plain.convert):
        return None  # transformed (masked, hashed, truncated...) or not this column's converter
    coding = decoding(result)
    if not coding.text:
        return None
    chosen = _choose(column, plain.convert, plain.schema, settings, result, coding.post)
    if chosen is None:
        return None
    kind, encoder, probes = chosen
    if not common_render.agrees_on_probes(encoder, coding.converter(convert), probes):
        log.warning("vectorised %s encoder disagrees with the converter of column %s on probe values; "
                    "rendering it value by value", kind, column.name)
        return None
    return encoder


def _choose(column: ColumnDef, convert: Callable[[Any], Any], schema: dict[str, Any],
            settings: MySqlConverterSettings, result: ResultColumn,
            post: Callable[[Any], Any] | None) -> tuple[str, VectorEncoder, Sequence[str]] | None:
    code, name = result.type_code, schema.get("name")
    if code in _INTEGER_TYPES and post is int:
        if convert is integers.identity:
            return "integer", cve.encode_integer, PROBES["integer"]
        if (matches_any(column.type_name.upper(), integers.BIGINT_UNSIGNED) and schema["type"] == "int64"
                and settings.bigint_unsigned_handling_mode == "long"):
            return "unsigned_long", ve.unsigned_long_encoder, PROBES["unsigned_long"]
        return None
    if code == FIELD_TYPE.YEAR and post is int and name == _TIME + "Year":
        return "year", ve.year_encoder, PROBES["year"]
    if post is not None:
        return None
    if code in _STRING_TYPES and convert is text.identity:
        return "string", cve.encode_string, PROBES["string"]
    if code in _DECIMAL_TYPES:
        return _decimal(schema, settings)
    adjust = settings.enable_time_adjuster
    if code in _DATE_TYPES and name in _DAYS:
        return "date", ve.date_days_encoder(adjust), PROBES["date"]
    if code == FIELD_TYPE.DATETIME and (name in _MILLIS or name == _TIME + "MicroTimestamp"):
        divisor = 1000 if name in _MILLIS else 1
        return "datetime", ve.datetime_encoder(divisor, adjust), PROBES["datetime"]
    if code == FIELD_TYPE.TIMESTAMP and name == _TIME + "ZonedTimestamp":
        return "timestamp", ve.zoned_timestamp_encoder, PROBES["timestamp"]
    return None


def _decimal(schema: dict[str, Any], settings: MySqlConverterSettings) -> tuple[str, VectorEncoder,
                                                                                 Sequence[str]] | None:
    mode = settings.decimal_handling_mode
    if mode == "string" and schema["type"] == "string":
        return "decimal_string", cve.encode_string, decimal_probes(2)
    if mode != "precise" or schema.get("name") != ks.DECIMAL:
        return None
    params = schema.get("parameters", {})
    scale = int(params.get("scale", 0))
    precision = int(params.get(ks.PRECISION_PARAM, -1))
    if not 0 < precision <= _MAX_LONG_DIGITS:
        return None  # unscaled values may not fit in 64 bits: per value
    return "decimal", cve.decimal_encoder(scale), decimal_probes(scale)
