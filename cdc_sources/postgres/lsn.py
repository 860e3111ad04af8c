"""`Lsn`: a PostgreSQL write-ahead-log position (``pg_lsn``).

An LSN is an unsigned 64-bit byte offset into the WAL. PostgreSQL prints it as two upper-case
hex numbers, the high and low 32 bits: ``16/B374D848``. Debezium stores it as the plain integer
(``"lsn": 97500059720``) in offsets and events.

`Lsn` is a frozen dataclass over an int rather than an ``int`` subclass: arithmetic on an int
subclass silently returns a plain ``int`` and an ``Lsn`` compares equal to any int, so an xid or
a timestamp could pass for a position. Here mixing them is a type error, and ``int(lsn)``
makes the conversion at the protocol and storage boundaries explicit.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

from cdc_sources.spi import CdcError, Fatal

_TEXT: Final = re.compile(r"([0-9A-Fa-f]{1,8})/([0-9A-Fa-f]{1,8})")
_MAX: Final = (1 << 64) - 1


class LsnFormatError(CdcError, Fatal, ValueError):
    """A text or number is not a valid LSN.

    Attributes:
        text: the rejected input as given (its ``repr`` when it was not a string).
        expected: what a valid input looks like.
    """

    text: str
    expected: str

    def __init__(self, text: str, *, expected: str = "") -> None:
        expected = expected or (
            "two hexadecimal numbers of 1 to 8 digits separated by '/', as PostgreSQL prints "
            "pg_lsn (for example 16/B374D848)"
        )
        super().__init__(f"invalid LSN {text!r}: expected {expected}", text=text, expected=expected)


@dataclass(frozen=True, slots=True, order=True)
class Lsn:
    """A WAL position. Immutable, hashable, totally ordered; thread-safe.

    Attributes:
        value: the position as an unsigned 64-bit integer (``(high << 32) | low``).
    """

    value: int

    def __post_init__(self) -> None:
        if type(self.value) is not int or not 0 <= self.value <= _MAX:
            raise LsnFormatError(repr(self.value), expected="an int from 0 to 2**64 - 1")

    @classmethod
    def parse(cls, text: str) -> Lsn:
        """Parse PostgreSQL's text form (``16/B374D848``; either hex case, optional zero padding).

        Raises:
            LsnFormatError: ``text`` is not in that form.
        """
        match = _TEXT.fullmatch(text) if isinstance(text, str) else None
        if match is None:
            raise LsnFormatError(text if isinstance(text, str) else repr(text))
        return cls((int(match[1], 16) << 32) | int(match[2], 16))

    def __str__(self) -> str:
        return f"{self.value >> 32:X}/{self.value & 0xFFFFFFFF:X}"

    def __int__(self) -> int:
        return self.value
