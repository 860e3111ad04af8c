"""The data the converter factories exchange: column facts in, type mappings out."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

from cdc_sources.postgres.converters.settings import ConverterSettings
from cdc_sources.postgres.types import PgType
from cdc_sources.spi import CdcError, Fatal

Convert = Callable[[str], Any]
"""Turns one PostgreSQL text value into its JSON-ready Debezium rendering."""


class ValueConversionError(CdcError, Fatal, ValueError):
    """A column value could not be converted the way Debezium converts it.

    Debezium stops the connector in these cases too (for example NaN in a NUMERIC column with
    ``decimal.handling.mode=precise``); the message names the column type and the way out.
    """


class _Placeholder:
    """Marks "use the settings' placeholder text" in a `TypeMapping`."""

    def __repr__(self) -> str:
        return "PLACEHOLDER"


PLACEHOLDER: Final = _Placeholder()


@dataclass(frozen=True)
class ColumnConverter:
    """How one column is rendered, chosen once per column when a table schema is built.

    Attributes:
        schema: the field schema as Kafka Connect's JsonConverter writes it with
            ``schemas.enable=true`` (including ``"field"``).
        convert: PostgreSQL text value -> JSON-ready value (``schemas.enable=false`` form).
            Never called with None: SQL NULL is rendered as `null_value`.
        unavailable: the unchanged-TOAST placeholder adapted to this column's type.
        null_value: what Debezium emits for SQL NULL: None for a nullable column; for a NOT NULL
            column (a key-only ``before`` image) the schema default, else the type's zero value.

    Immutable; `convert` is a pure function and safe to call from any thread.
    """

    schema: dict[str, Any]
    convert: Convert
    unavailable: Any
    null_value: Any = None


@dataclass(frozen=True, slots=True)
class ColumnType:
    """What a type factory knows about a column or an array element.

    Attributes:
        pg: the type, domains already resolved to their base type.
        length: the length Debezium sees (pgjdbc's ``COLUMN_SIZE`` rules): the bit count of BIT,
            the precision of NUMERIC, the display size of temporal types...
        scale: the scale Debezium sees (fraction digits of NUMERIC and temporal types); None when
            the driver reports none (unconstrained NUMERIC read from the catalog).
        origin: ``snapshot`` or ``stream`` (see `column_meta.Origin`).
    """

    pg: PgType
    length: int
    scale: int | None
    origin: str = "snapshot"

    @property
    def time_precision(self) -> int:
        """Fraction digits of a temporal column (Debezium's ``getTimePrecision``)."""
        return -1 if self.scale is None else self.scale


@dataclass(frozen=True, slots=True)
class TypeMapping:
    """A type's rendering, before column-level facts (nullability, default, name) are applied.

    Attributes:
        schema: the Kafka Connect schema without ``optional``, ``default`` and ``field``.
        convert: text -> JSON-ready value.
        fallback: Debezium's value for NULL in a NOT NULL column that has no default.
        unavailable: the unchanged-TOAST value, or `PLACEHOLDER` for the placeholder text.
        always_optional: the Debezium schema builder marks the schema optional itself
            (``io.debezium.data.geometry.Geometry``).
        null_passthrough: SQL NULL stays null even in a NOT NULL column (Debezium's converter
            returns before applying the default or fallback).
        values_lost: every value arrives as SQL NULL (Debezium's stream decoder drops it).
    """

    schema: dict[str, Any]
    convert: Convert
    fallback: Any
    unavailable: Any = PLACEHOLDER
    always_optional: bool = False
    null_passthrough: bool = False
    values_lost: bool = False


TypeFactory = Callable[[ColumnType, ConverterSettings], "TypeMapping | None"]
"""Builds the mapping of one type for a column; None when Debezium leaves the column out."""
