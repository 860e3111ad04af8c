"""The snapshot's values as pymysql delivers them, recovered from the text protocol's raw bytes.

The converters of `cdc_sources.mysql.converters` (``origin="snapshot"``) take what pymysql
returns for a ``SELECT`` read with `SNAPSHOT_CONVERSIONS`. The columnar snapshot receives the
same rows as raw bytes (`snapshot_process`); `decoding` tells, per result column, how pymysql
would have turned those bytes into the converter's input, following pymysql's own rule
(``MySQLResult._get_descriptions``):

* JSON, and the text types (``CHAR``, ``VARCHAR``, ``TEXT``, ``ENUM``, ``SET``...) with a
  character set other than ``binary``: decoded as the connection's ``utf8mb4``;
* the text types with the ``binary`` character set (``BINARY``, ``BLOB``, ``BIT``,
  ``GEOMETRY``): the bytes themselves;
* every other type (numbers, dates and times): decoded as text (pymysql decodes them as ASCII;
  the server prints them in ASCII);

then the conversion the table lists for the type (``int`` for integers and ``YEAR``, ``float``
for ``FLOAT``/``DOUBLE``; decimals and temporal types stay text).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
from pymysql import converters as pymysql_converters
from pymysql.constants import FIELD_TYPE

from cdc_sources.mysql.converters import SNAPSHOT_CONVERSIONS

BINARY_CHARSET = 63
"""The ``binary`` character set's number in a column definition."""

TEXT_TYPES = frozenset({
    FIELD_TYPE.BIT, FIELD_TYPE.BLOB, FIELD_TYPE.LONG_BLOB, FIELD_TYPE.MEDIUM_BLOB, FIELD_TYPE.STRING,
    FIELD_TYPE.TINY_BLOB, FIELD_TYPE.VAR_STRING, FIELD_TYPE.VARCHAR, FIELD_TYPE.GEOMETRY,
})
"""Result types pymysql decodes with the connection's character set unless their charset is binary."""


@dataclass(frozen=True, slots=True)
class ResultColumn:
    """One column of a text-protocol result set, as the server describes it.

    Attributes:
        name: the column's name in the result.
        type_code: the protocol's field type (``pymysql.constants.FIELD_TYPE``).
        flags: the column definition flags (``NOT_NULL``, ``UNSIGNED``, ``BINARY``...).
        charset: the collation number of the values (63: ``binary``).
    """

    name: str
    type_code: int
    flags: int
    charset: int


@dataclass(frozen=True, slots=True)
class ValueDecoding:
    """How one result column's raw bytes become pymysql's value.

    Attributes:
        text: the bytes are text (pymysql returns ``str``); else pymysql returns the bytes.
        post: the conversion pymysql applies after decoding (``int``, ``float``), or None.
    """

    text: bool
    post: Callable[[Any], Any] | None = None

    def array(self, raw: Any) -> Any:
        """The column as the converter's input type: a string array for text (UTF-8 checked:
        raises ``pyarrow.ArrowInvalid`` on bytes that are not), else the binary array itself."""
        return raw.cast(pa.string()) if self.text else raw

    def converter(self, convert: Callable[[Any], Any]) -> Callable[[Any], Any]:
        """``convert`` taking an element of `array` (applies `post` first)."""
        post = self.post
        if post is None:
            return convert

        def converted(value: Any) -> Any:
            return convert(post(value))
        return converted

    def raw_converter(self, convert: Callable[[Any], Any]) -> Callable[[bytes], Any]:
        """``convert`` taking the raw bytes (decodes them as pymysql does, strictly)."""
        text, post = self.text, self.post

        def converted(value: bytes) -> Any:
            decoded: Any = value.decode("utf-8") if text else value
            return convert(decoded if post is None else post(decoded))
        return converted


def decoding(column: ResultColumn, conversions: Mapping[Any, Any] = SNAPSHOT_CONVERSIONS) -> ValueDecoding:
    """pymysql's decoding of ``column`` under the conversion table ``conversions``."""
    code = column.type_code
    if code == FIELD_TYPE.JSON:
        text = True
    elif code in TEXT_TYPES:
        text = column.charset != BINARY_CHARSET
    else:
        text = True
    post = conversions.get(code)
    return ValueDecoding(text, None if post is None or post is pymysql_converters.through else post)
