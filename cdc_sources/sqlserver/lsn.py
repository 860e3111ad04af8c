"""SQL Server log sequence numbers and change positions, as Debezium 3.6.3 reads and orders them.

An LSN is 10 bytes (``binary(10)`` in the CDC tables), written ``xxxxxxxx:xxxxxxxx:xxxx`` in
lower-case hex (4:4:2 bytes); ``NULL`` is the absent LSN, smaller than every LSN. LSNs compare
as unsigned bytes. A `TxLogPosition` is the position of one change: the commit LSN of its
transaction (``__$start_lsn``), its LSN inside the transaction (``__$seqval``) and its operation
(``__$operation``). Checked against Debezium's ``Lsn`` and ``TxLogPosition``
(tests/cdc_sources/sqlserver/test_lsn.py).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import ClassVar

__all__ = ["Lsn", "LsnError", "TxLogPosition"]

_TEXT = re.compile(r"([0-9a-fA-F]{8}):([0-9a-fA-F]{8}):([0-9a-fA-F]{4})")
_NULL = "NULL"


class LsnError(ValueError):
    """Text or bytes that are not an LSN (the message names what was given)."""


@dataclass(frozen=True, slots=True)
class Lsn:
    """A 10-byte LSN, or the absent LSN (``binary`` None, written ``NULL``)."""

    binary: bytes | None

    NULL: ClassVar[Lsn]

    @classmethod
    def parse(cls, text: str | None) -> Lsn:
        """``xxxxxxxx:xxxxxxxx:xxxx`` (any case) or ``NULL``/None."""
        if text is None or text == _NULL:
            return cls.NULL
        match = _TEXT.fullmatch(text)
        if match is None:
            raise LsnError(f"not a SQL Server LSN (xxxxxxxx:xxxxxxxx:xxxx in hex, or NULL): {text!r}")
        return cls(bytes.fromhex("".join(match.groups())))

    @classmethod
    def of(cls, binary: bytes | bytearray | None) -> Lsn:
        """The LSN of a ``binary(10)`` value as the driver returns it (None: NULL)."""
        if binary is None:
            return cls.NULL
        if len(binary) != 10:
            raise LsnError(f"an LSN has 10 bytes, got {len(binary)}: {bytes(binary).hex()}")
        return cls(bytes(binary))

    @property
    def available(self) -> bool:
        return self.binary is not None

    def __str__(self) -> str:
        if self.binary is None:
            return _NULL
        h = self.binary.hex()
        return f"{h[:8]}:{h[8:16]}:{h[16:]}"

    def halves(self) -> tuple[int, int]:
        """The first 8 bytes and the last 2 as unsigned integers (NULL: zeros): an LSN in an order key."""
        raw = self.binary or bytes(10)
        return int.from_bytes(raw[:8], "big"), int.from_bytes(raw[8:], "big")

    def sort_key(self) -> tuple[int, bytes]:
        """Orders LSNs as Debezium does: NULL first, then unsigned bytes."""
        return (0, b"") if self.binary is None else (1, self.binary)

    def __lt__(self, other: Lsn) -> bool:
        return self.sort_key() < other.sort_key()

    def __le__(self, other: Lsn) -> bool:
        return self.sort_key() <= other.sort_key()

    def __gt__(self, other: Lsn) -> bool:
        return self.sort_key() > other.sort_key()

    def __ge__(self, other: Lsn) -> bool:
        return self.sort_key() >= other.sort_key()


Lsn.NULL = Lsn(None)


@dataclass(frozen=True, slots=True)
class TxLogPosition:
    """Where a change is: ``commit`` (``__$start_lsn``), ``change`` (``__$seqval``) and
    ``operation`` (``__$operation``: 1 delete, 2 insert, 3 update before, 4 update after; 0 none).

    Compared as Debezium compares positions: by commit LSN, then change LSN; the operation
    neither orders nor distinguishes positions (an update's 3 and 4 rows, and a key change's
    delete and insert, share one place).
    """

    commit: Lsn
    change: Lsn = Lsn.NULL
    operation: int = field(default=0, compare=False)

    def key(self) -> tuple[tuple[int, bytes], tuple[int, bytes]]:
        return self.commit.sort_key(), self.change.sort_key()

    def __lt__(self, other: TxLogPosition) -> bool:
        return self.key() < other.key()

    def __le__(self, other: TxLogPosition) -> bool:
        return self.key() <= other.key()
