"""Column defaults in field schemas, as Debezium 3.6.3's ``SqlServerDefaultValueConverter`` reads them.

SQL Server keeps a column's default as the text of its default constraint
(``sys.default_constraints.definition``, which JDBC's ``getColumns`` reports as ``COLUMN_DEF``):
``((0))``, ``('abc')``, ``(N'abc')``, ``((1.5))``, ``(0x0102)``, ``(getdate())``, ``(NULL)``.
Debezium does not evaluate it: it cuts a literal out of the text with a rule per type name, and
the column's value converter turns the literal into the field schema's ``default``. The rules
are kept here as Debezium has them, quirks included (checked against the jar:
tests/cdc_sources/sqlserver/test_defaults.py):

- ``bigint``, ``int``, ``smallint``, ``tinyint``, ``float``, ``real``: the text between the last
  ``(`` and the first ``)`` (``((0))`` -> ``0``), read as a Java number of the type (``tinyint``
  as a ``short``; ``bigint`` drops one trailing ``.``: ``((3147483648.))``); ``NULL`` is no default;
- ``bit``: ``true`` exactly when the text is ``((1))`` (so ``(NULL)`` is ``false``);
- ``decimal``, ``numeric``, ``money``, ``smallmoney``: the text without its two outer characters
  on each side, as a Java ``BigDecimal`` (``decimal.handling.mode: string`` writes it with its own
  digits: ``((1.5))`` is ``"1.5"`` in a ``decimal(9,2)``);
- ``char``, ``varchar``, ``text``, ``nchar``, ``nvarchar``, ``ntext``: the text
  between the first and the last ``'`` (doubled quotes are not undone), then the number rule's
  cut (``('a(b)c')`` -> ``b``; ``('NULL')`` is no default);
- ``binary``, ``varbinary``, ``image``: the hex digits of ``(0x...)``;
- ``date``, ``time``, ``datetime``, ``datetime2``, ``smalldatetime``, ``datetimeoffset``: Debezium
  asks the server (``SELECT PARSE(? AS <type>)``, see `catalogue.parse_default`) with the text
  without its two outer characters on each side; a function such as ``(getdate())`` fails there;
- any other type (``uniqueidentifier``, ``xml``, ``sysname``, ``rowversion``...) has no default.

A text that a rule cannot read (a function call, an expression) gives no default, and Debezium's
warning is logged; the schema change events still carry the text as ``defaultValueExpression``.
One deliberate difference: a ``decimal.handling.mode: precise`` default with more decimal digits
than the column's scale (``((1.25))`` for ``decimal(5,1)``) is left out with a warning, where
Debezium sets it and then fails to write every record of the table.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from decimal import Decimal
from typing import Any, Final

from cdc_sources.common.javacompat import float32
from cdc_sources.common.kschema import NO_DEFAULT
from cdc_sources.sqlserver.catalogue import PARSED_TYPES
from cdc_sources.sqlserver.converters import ColumnConverter, ValueConversionError

__all__ = ["SERVER_PARSED_TYPES", "ServerParse", "literal_default", "schema_default"]

log = logging.getLogger(__name__)

SERVER_PARSED_TYPES: Final = PARSED_TYPES
"""The types whose default Debezium has the server read (``SELECT PARSE(? AS <type>)``)."""

ServerParse = Callable[[str, str], Any]
"""``(type name, text) -> the value SELECT PARSE(text AS type) returns`` (as pyodbc returns it)."""


class _UnreadableError(ValueError):
    """A default text the type's rule cannot read (Debezium's caught exception)."""


_JAVA_INTEGER = re.compile(r"[+-]?\d+")
_JAVA_DOUBLE = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?[fFdD]?")
_JAVA_BIG_DECIMAL = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")
_HEX = re.compile(r"[0-9A-Fa-f]*")
_JAVA_WHITESPACE = "".join(chr(c) for c in range(33))  # String.trim() strips every char <= U+0020


def _substring(text: str, start: int, end: int) -> str:
    """Java's ``String.substring``: out-of-range bounds fail instead of clipping."""
    if start < 0 or end > len(text) or start > end:
        raise _UnreadableError(f"substring({start}, {end}) of {text!r}")
    return text[start:end]


def _unparenthesised(text: str) -> str | None:
    """``nullableDefaultValueMapper``'s cut: from after the last ``(`` to the first ``)``; None for ``NULL``."""
    end = text.find(")")
    value = _substring(text, text.rfind("(") + 1, len(text) if end < 0 else end)
    return None if value.upper() == "NULL" else value


def _unquoted(text: str) -> str | None:
    """``nullableStringDefaultValueMapper``'s cut: between the first and the last ``'``, then the number cut."""
    end = text.rfind("'")
    return _unparenthesised(_substring(text, text.find("'") + 1, len(text) if end < 0 else end))


def _java_integer(text: str, bits: int) -> int:
    """``Long``/``Integer``/``Short.parseX``: a sign and decimal digits, within the type's range."""
    if not _JAVA_INTEGER.fullmatch(text):
        raise _UnreadableError(f"not a number: {text!r}")
    value = int(text)
    if not -(2 ** (bits - 1)) <= value < 2 ** (bits - 1):
        raise _UnreadableError(f"out of range: {text!r}")
    return value


def _java_double(text: str) -> float:
    """``Double.parseDouble`` of a decimal text (whitespace trimmed, an ``f``/``d`` suffix allowed)."""
    trimmed = text.strip(_JAVA_WHITESPACE)
    if not _JAVA_DOUBLE.fullmatch(trimmed):
        raise _UnreadableError(f"not a floating-point number: {text!r}")
    return float(trimmed.rstrip("fFdD"))


def _big_decimal(text: str) -> Decimal:
    if not _JAVA_BIG_DECIMAL.fullmatch(text):
        raise _UnreadableError(f"not a decimal number: {text!r}")
    return Decimal(text)


def _inner(text: str) -> str:
    """``v.substring(2, v.length() - 2)``: ``((1.5))`` -> ``1.5``, ``('2019-02-03')`` -> ``2019-02-03``."""
    return _substring(text, 2, len(text) - 2)


def _binary(text: str) -> bytes:
    digits = _substring(text, 3, len(text) - 1)
    if len(digits) % 2 or not _HEX.fullmatch(digits):
        raise _UnreadableError(f"not hex digits: {digits!r}")
    return bytes.fromhex(digits)


def _integer(bits: int, *, bigint: bool = False) -> Callable[[str], Any]:
    def read(text: str) -> Any:
        value = _unparenthesised(text)
        if value is None:
            return None
        if bigint:
            if not value:
                raise _UnreadableError("an empty number")
            value = value[:-1] if value.endswith(".") else value
        return _java_integer(value, bits)
    return read


def _number(parse: Callable[[str], Any]) -> Callable[[str], Any]:
    def read(text: str) -> Any:
        value = _unparenthesised(text)
        return None if value is None else parse(value)
    return read


def _string(parse: Callable[[str], Any]) -> Callable[[str], Any]:
    def read(text: str) -> Any:
        value = _unquoted(text)
        return None if value is None else parse(value)
    return read


_READERS: Final[dict[str, Callable[[str], Any]]] = {
    "bigint": _integer(64, bigint=True),
    "int": _integer(32),
    "smallint": _integer(16),
    "tinyint": _integer(16),
    "bit": lambda text: text == "((1))",
    **dict.fromkeys(("decimal", "numeric", "money", "smallmoney"), lambda text: _big_decimal(_inner(text))),
    "float": _number(_java_double),
    "real": _number(lambda text: float32(_java_double(text))),
    **dict.fromkeys(("char", "text", "varchar", "nchar", "ntext", "nvarchar"), _string(str)),
    **dict.fromkeys(("binary", "image", "varbinary"), _binary),
}


def literal_default(type_name: str, expression: str, server_parse: ServerParse | None = None) -> Any:
    """The value Debezium cuts out of ``expression`` for a column of ``type_name``, as pyodbc would
    return it (``int``, ``bool``, ``Decimal``, ``float``, ``str``, ``bytes``, a
    temporal value from ``server_parse``); None when there is none.

    Raises:
        ValueError: a text the type's rule cannot read.
    """
    kind = type_name.lower()
    if kind in SERVER_PARSED_TYPES:
        if server_parse is None:
            raise _UnreadableError("no server to read a date/time default")
        if not (expression.startswith("('") and expression.endswith("')")):
            # Debezium sends the text without its outer two characters on each side (``etdate(``
            # of ``(getdate())``), which PARSE fails on; it is not sent (a failed statement would
            # end the transaction it ran in on some servers)
            raise _UnreadableError("not a quoted date/time literal")
        return server_parse(kind, _inner(expression))
    reader = _READERS.get(kind)
    return None if reader is None else reader(expression)


def schema_default(name: str, type_name: str, expression: str | None,
                   converter: ColumnConverter, server_parse: ServerParse | None = None) -> Any:
    """The field schema's ``default`` (JsonConverter form) of a column whose default constraint
    reads ``expression`` (None: no constraint), or `NO_DEFAULT`.

    """
    if expression is None:
        return NO_DEFAULT
    try:
        value = literal_default(type_name, expression, server_parse)
    except Exception as error:  # Debezium catches every failure here and logs a warning
        log.warning("column %s: cannot read the default %r of type %s (expressions are not evaluated): %s",
                    name, expression, type_name, error)
        return NO_DEFAULT
    if value is None:
        return NO_DEFAULT
    try:
        converted = converter.convert(value)
    except ValueConversionError as error:
        # more decimal digits than the column's scale: Debezium sets the default and then fails
        # to write every record of the table (JsonConverter's "mismatching scale"); here the
        # default is left out instead
        log.warning("column %s: the default %r does not fit the column (%s); the schema has no default",
                    name, expression, error)
        return NO_DEFAULT
    return NO_DEFAULT if converted is None else converted
