"""Schema ``default`` values from column default expressions, as Debezium derives them.

Debezium's ``PostgresDefaultValueConverter`` knows a fixed set of type names (the ones the JDBC
driver reports: ``int4``, ``serial``, ``varchar``...) plus enums. For those it takes the first
quoted literal of the expression (``'abc'::character varying`` -> ``abc``) or the bare text
(``42``, ``true``); a function call (``nextval(...)``, ``now()``, ``CURRENT_TIMESTAMP(6)``, and the
SQL value functions such as ``CURRENT_DATE``) yields the type's zero value instead. So a SERIAL
column gets ``"default": 0``. The literal then goes through the column's own converter. Domains,
arrays and the other types get no default, nor do values Debezium cannot represent as a schema
default (a struct such as ``VariableScaleDecimal``) or fails to parse (expressions, infinities).
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable
from decimal import Decimal, InvalidOperation
from typing import Any

from cdc_sources.common.kschema import NO_DEFAULT
from cdc_sources.postgres.converters.column_meta import VARIABLE_SCALE_DECIMAL_LENGTH
from cdc_sources.postgres.converters.model import ColumnType, TypeMapping
from cdc_sources.postgres.converters.settings import ConverterSettings
from cdc_sources.postgres.converters.temporal_text import civil_from_days, days_from_civil, iso_date

_FUNCTION = re.compile(r"[(]?[A-Za-z0-9_.]+\(.*\)")
_LITERAL = re.compile(r"'([^']*(?:''[^']*)*)'")
_SQL_VALUE_FUNCTIONS = frozenset({"current_timestamp", "current_time", "current_date", "localtime",
                                  "localtimestamp"})
_TRIMMED = frozenset({"bit", "varbit", "bool", "numeric", "float4", "float8", "int2", "int4", "serial",
                      "int8", "bigserial", "smallserial", "uuid", "date", "time", "timestamp",
                      "timestamptz", "interval"})
_INT_RANGES = {"int2": 16, "smallserial": 16, "int4": 32, "serial": 32, "int8": 64, "bigserial": 64}
_INTEGER = re.compile(r"[+-]?[0-9]+")
_DATE_ONLY = re.compile(r"(\d{4,}-\d\d-\d\d)( BC)?")

Normalizer = Callable[[str | None, ColumnType], str | None]
"""Turns the extracted literal into text the column converter reads (None: no default)."""


def extract_literal(expression: str) -> str | None:
    """The literal of a default expression: the bare text, or the first quoted string."""
    if "'" not in expression:
        return None if expression.startswith("NULL::") else expression
    match = _LITERAL.search(expression)
    return match.group(1).replace("''", "'") if match else None


def extract(expression: str, generated: str) -> str | None:
    """`extract_literal`, or ``generated`` when the default is computed by a function."""
    if _FUNCTION.match(expression) or expression.lower() in _SQL_VALUE_FUNCTIONS:
        return generated
    return extract_literal(expression)


def _same(literal: str | None, col: ColumnType) -> str | None:
    return literal


def _bool(literal: str | None, col: ColumnType) -> str | None:
    return "t" if literal is not None and literal.lower() == "true" else "f"


def _integer(bits: int) -> Normalizer:
    def normalize(literal: str | None, col: ColumnType) -> str | None:
        if literal is None or not _INTEGER.fullmatch(literal):
            return None
        return literal if -(2 ** (bits - 1)) <= int(literal) < 2 ** (bits - 1) else None
    return normalize


def _numeric(literal: str | None, col: ColumnType) -> str | None:
    if literal is None or not literal or literal[-1].isalpha():  # BigDecimal refuses NaN/Infinity
        return None
    try:
        value = Decimal(literal)
        if col.scale is not None and col.length != VARIABLE_SCALE_DECIMAL_LENGTH:
            exact = value.quantize(Decimal(1).scaleb(-col.scale))
            if exact != value:
                return None  # BigDecimal.setScale without rounding fails
            value = exact
        elif col.scale is not None and _exponent(value) > -col.scale:
            value = value.quantize(Decimal(1).scaleb(-col.scale))
    except InvalidOperation:
        return None
    return format(value, "f")


def _exponent(value: Decimal) -> int:
    exponent = value.as_tuple().exponent
    return exponent if isinstance(exponent, int) else 0


def _uuid(literal: str | None, col: ColumnType) -> str | None:
    try:
        return str(uuid.UUID(literal)) if literal is not None else None
    except ValueError:
        return None


def _not_infinite(literal: str | None) -> bool:
    return literal is not None and not literal.endswith("infinity")


def _date(literal: str | None, col: ColumnType) -> str | None:
    if not _not_infinite(literal):
        return None
    assert literal is not None
    return literal[:10] if literal[10:11] == " " and not literal.endswith("BC") else literal


def _time(literal: str | None, col: ColumnType) -> str | None:
    if literal is None:
        return None
    if len(literal) == 5:
        literal += ":00"
    return "23:59:59.999999999" if literal.startswith("24:00") else literal  # pgjdbc: LocalTime.MAX


def _timestamp(suffix: str) -> Normalizer:
    def normalize(literal: str | None, col: ColumnType) -> str | None:
        if not _not_infinite(literal):
            return None
        assert literal is not None
        m = _DATE_ONLY.fullmatch(literal)
        return f"{m[1]} 00:00:00{suffix}{m[2] or ''}" if m else literal
    return normalize


_MAPPERS: dict[str, tuple[str | None, Normalizer]] = {
    "bit": ("00", _same), "varbit": ("0", _same), "bool": ("false", _bool),
    "bpchar": ("", _same), "varchar": ("", _same), "text": ("", _same),
    "json": ("{}", _same), "jsonb": ("{}", _same), "xml": ("", _same),
    "numeric": ("0.0", _numeric), "float4": ("0.0", _same), "float8": ("0.0", _same),
    **{name: ("0", _integer(bits)) for name, bits in _INT_RANGES.items()},
    "uuid": ("00000000-0000-0000-0000-000000000000", _uuid),
    "date": ("1970-01-01", _date), "time": ("00:00", _time),
    "timestamp": ("1970-01-01", _timestamp("")), "timestamptz": ("1970-01-01", _timestamp("+00")),
    "interval": ("epoch", _same),
}


_MAX_DAYS = days_from_civil(999_999_999, 12, 31)  # pgjdbc parses 'infinity' as LocalDateTime.MAX
_MIN_DAYS = days_from_civil(-999_999_999, 1, 1)  # and '-infinity' as LocalDateTime.MIN


def _infinite(literal: str, type_name: str, col: ColumnType, settings: ConverterSettings) -> Any:
    """Debezium's schema default for an infinite DATE/TIMESTAMP default (Java overflow included)."""
    positive = literal == "infinity"
    mode = settings.time_precision_mode
    if type_name == "date":
        days = _MAX_DAYS if positive else _MIN_DAYS
        if mode == "isostring":
            return iso_date(*civil_from_days(days)) + "Z"
        return (days + 2**31) % 2**32 - 2**31  # the (int) cast of the epoch day
    if mode == "isostring":
        return "+999999999-12-31T23:59:59.999999999Z" if positive else "-999999999-01-01T00:00:00Z"
    micros = mode == "microseconds" or (
        mode in ("adaptive", "adaptive_time_microseconds") and 3 < col.time_precision <= 6)
    if not micros:
        return NO_DEFAULT  # milli- and nanosecond conversions overflow and fail
    # TimeUnit.toMicros saturates at Long.MAX/MIN, then the nanos (999999 or 0) wrap around
    return -9_223_372_036_853_775_810 if positive else -(2**63)


def _enum_literal(expression: str, enum_name: str) -> str | None:
    cast = expression.rfind("::")
    if cast < 0:
        return None
    suffix = expression[cast + 2:].replace('"', "").split(".")[-1]
    value = expression[:cast]
    if suffix != enum_name or len(value) < 2 or value[0] != "'" or value[-1] != "'":
        return None
    return value[1:-1]


def schema_default(expression: str | None, type_name: str, col: ColumnType, mapping: TypeMapping,
                   settings: ConverterSettings) -> Any:
    """The schema default of a column, or `NO_DEFAULT`.

    Args:
        expression: the default as ``pg_get_expr`` prints it.
        type_name: the type name Debezium looks the mapper up by (``serial``, ``int4``...).
        col: the column's resolved type facts.
        mapping: the column's type mapping (its converter renders the literal).
        settings: the rendering options (infinite temporal defaults depend on them).
    """
    if expression is None:
        return NO_DEFAULT
    if col.pg.kind == "e":
        text = _enum_literal(expression, col.pg.name)
    else:
        mapper = _MAPPERS.get(type_name)
        if mapper is None:
            return NO_DEFAULT
        generated, normalize = mapper
        if type_name in _TRIMMED:
            expression = expression.strip()
        if expression.startswith("NULL::"):
            return NO_DEFAULT
        literal = extract(expression, generated or "")
        if type_name in ("date", "timestamp") and literal in ("infinity", "-infinity"):
            assert literal is not None
            return _infinite(literal, type_name, col, settings)
        text = normalize(literal, col)
    if text is None:
        return NO_DEFAULT
    try:
        value = mapping.convert(text)
    except (ValueError, ArithmeticError):
        return NO_DEFAULT
    return NO_DEFAULT if value is None or isinstance(value, dict) else value
