"""The data the converter factories exchange: column facts in, type mappings out."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from cdc_sources.common import kschema as ks
from cdc_sources.mysql.converters.settings import MySqlConverterSettings
from cdc_sources.mysql.model import ColumnDef
from cdc_sources.spi import CdcError, Fatal

Origin = Literal["binlog", "snapshot"]
"""Where values come from: ``binlog`` (python-mysql-replication row events) or ``snapshot``
(pymysql ``SELECT`` results read with `SNAPSHOT_CONVERSIONS`)."""

Convert = Callable[[Any], Any]
"""Turns one non-NULL source value into its JSON-ready Debezium rendering."""

DefaultOf = Callable[[Any], Any]
"""Turns a default literal (a string, or 1/0 for ``true``/``false`` in numeric columns) into the
rendered schema default; returns `NO_DEFAULT` when Debezium sets none."""

NO_DEFAULT = ks.NO_DEFAULT


class ValueConversionError(CdcError, Fatal, ValueError):
    """A column value (or default) that Debezium cannot convert either.

    With ``event.converting.failure.handling.mode=fail`` Debezium stops the connector; with
    ``warn`` (its default) or ``skip`` it writes NULL instead, which `converter_for` reproduces
    (see `MySqlConverterSettings`). The message names the value's type and the way out.
    """


class InvalidTemporalError(CdcError, Fatal):
    """A stored DATE/DATETIME value that is no date (``ALLOW_INVALID_DATES``) with
    ``event.processing.failure.handling.mode=fail``: Debezium stops on it too."""


@dataclass(frozen=True)
class ColumnConverter:
    """How one column is rendered, chosen once per column when a table schema is built.

    Attributes:
        schema: the field schema as Kafka Connect's JsonConverter writes it with
            ``schemas.enable=true`` (including ``"field"``).
        convert: source value -> JSON-ready value (``schemas.enable=false`` form: bytes as
            base64 text, ``Decimal`` as base64 of the unscaled value...). Never called with None:
            SQL NULL is rendered as `null_value` (and by JsonConverter as the schema default,
            when there is one). Values Debezium itself turns into null (a zero TIMESTAMP in the
            binlog, a zero date read by the snapshot) come back as the schema default, else
            `null_value`, i.e. what Debezium's JSON shows.
        null_value: what Debezium emits for SQL NULL: None for a nullable column; for a NOT NULL
            column (a key-only ``before`` image...) the schema default, else the type's zero value.
        identity: `convert` returns its argument unchanged for every value this origin delivers
            (integers, most strings), so a renderer may skip the call.

    Immutable; `convert` is a pure function and safe to call from any thread.
    """

    schema: dict[str, Any]
    convert: Convert
    null_value: Any = None
    identity: bool = False


@dataclass(frozen=True, slots=True)
class TypeMapping:
    """What a type factory decides for a column.

    Attributes:
        schema: the core schema (no ``optional``; see `kschema.complete`).
        make_convert: builds the converter, given what a value that Debezium reads as NULL
            renders as (the schema default, else `ColumnConverter.null_value`; such values are
            a zero TIMESTAMP in the binlog, a zero date read by the snapshot...). Most types
            ignore it.
        fallback: Debezium's value for NULL in a NOT NULL column that has no schema default.
        default_of: renders the column's default literal (see `DefaultOf`).
        always_optional: Debezium's schema builder marks the schema optional itself (Geometry).
        identity: the converter returns its argument unchanged for this origin's values.
        may_fail: the converter raises `ValueConversionError` for some values (the others
            never do), so ``event.converting.failure.handling.mode`` applies to it.
    """

    schema: ks.Schema
    make_convert: Callable[[Any], Convert]
    fallback: Any
    default_of: DefaultOf
    always_optional: bool = False
    identity: bool = False
    may_fail: bool = False


def no_default(literal: Any) -> Any:
    """`TypeMapping.default_of` of types whose default Debezium never sets (the spatial types)."""
    return NO_DEFAULT


def fixed(convert: Convert) -> Callable[[Any], Convert]:
    """`TypeMapping.make_convert` for a converter that never produces Debezium's NULL."""
    def make(null: Any) -> Convert:
        return convert
    return make


@dataclass(frozen=True, slots=True)
class ColumnFacts:
    """What a type factory reads: the column, the options and where values come from."""

    column: ColumnDef
    settings: MySqlConverterSettings
    origin: Origin


TypeFactory = Callable[[ColumnFacts], "TypeMapping | None"]
"""Builds the mapping of one type for a column; None when Debezium leaves the column out."""
