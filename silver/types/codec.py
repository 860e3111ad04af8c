"""The codec contract: how one Kafka Connect schema is parsed from JSON and decoded for silver.

Every field of a change event is parsed by ``from_json`` into a *raw* form first: leaves as
their JSON text (so ``1.50``, ``true`` and ``"x"`` all arrive as strings), arrays as arrays of
raw elements, maps as maps of raw values, structs as structs of raw fields. A codec then turns
the raw form into the silver type with Spark Column expressions only (Spark Connect safe).
Parsing leaves as text lets silver detect values that do not match their schema (an int that
overflows, a date that is not a number) instead of silently reading them as null or a
wrapped-around number, and lets it see the type-adapted unavailable-value placeholders.

Floating-point leaves are the exception: some engines lose digits inside ``from_json`` (Sail
0.7 parses every JSON number with an inexact float parser, even into a string field, so a
double can come out one unit in the last place off). `Codec.exact` re-reads them from the
field's JSON text as ``get_json_object`` returns it, which keeps the number's own digits.
"""

from __future__ import annotations

import base64
import hashlib
import uuid
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property

from pyspark.sql import Column
from pyspark.sql import functions as sf
from pyspark.sql.types import DataType, StringType

__all__ = ["Codec", "LeafCodec", "Placeholder", "json_member"]


def json_member(text: Column, *path: str) -> Column | None:
    """The JSON text at ``path`` (object member names) in the JSON ``text``, digits as written.

    ``get_json_object`` with bracket notation (names may hold dots); strings come out unquoted,
    objects and arrays as JSON text, JSON null as null. None when a name holds a single quote
    (no JSONPath both Spark and Sail accept can address it).
    """
    if any("'" in name for name in path):
        return None
    return sf.get_json_object(text, "$" + "".join(f"['{name}']" for name in path))


@dataclass(frozen=True)
class Placeholder:
    """The connector's unavailable-value placeholder (unchanged TOAST) in every form it takes.

    Debezium adapts the placeholder to the column type: the string for text-like columns, its
    bytes for ``bytea``, a one-element list for text/bytea/uuid arrays, the bytes as a list of
    numbers for int/bigint/date arrays, ``{ph: ph}`` for hstore, fixed points/WKBs for PostGIS.

    Attributes:
        configured: ``unavailable.value.placeholder``; a ``hex:`` prefix means hex bytes.
    """

    configured: str = "__debezium_unavailable_value"

    @cached_property
    def raw_bytes(self) -> bytes:
        """The placeholder bytes."""
        if self.configured.startswith("hex:"):
            return bytes.fromhex(self.configured[4:])
        return self.configured.encode()

    @cached_property
    def text(self) -> str:
        """The placeholder as a string (bytes decoded as UTF-8, like ``new String(bytes)``)."""
        return self.raw_bytes.decode("utf-8", errors="replace")

    @cached_property
    def string_forms(self) -> tuple[str, ...]:
        """Every text form a string or bytes column may carry (binary.handling.mode variants)."""
        b = self.raw_bytes
        hstore = f'{{"{self.text}":"{self.text}"}}'  # hstore.handling.mode=json
        return (self.text, base64.b64encode(b).decode(), base64.urlsafe_b64encode(b).decode(),
                b.hex(), b.hex().upper(), hstore)

    @cached_property
    def uuid(self) -> str:
        """``UUID.nameUUIDFromBytes(placeholder)`` (version 3, no namespace), for uuid arrays."""
        digest = bytearray(hashlib.md5(self.raw_bytes, usedforsecurity=False).digest())
        digest[6] = (digest[6] & 0x0F) | 0x30
        digest[8] = (digest[8] & 0x3F) | 0x80
        return str(uuid.UUID(bytes=bytes(digest)))

    @cached_property
    def number_list(self) -> tuple[str, ...]:
        """The placeholder bytes as Java ``(int) byte`` values, as JSON text."""
        return tuple(str(x - 256 if x > 127 else x) for x in self.raw_bytes)

    def is_text(self, raw: Column) -> Column:
        """True where a raw leaf holds the placeholder (any text form)."""
        return raw.isin(*self.string_forms)


class Codec(ABC):
    """Decodes one raw field into its silver type. Immutable; safe to share."""

    @property
    @abstractmethod
    def raw_type(self) -> DataType:
        """The type ``from_json`` parses the field into."""

    @property
    @abstractmethod
    def target_type(self) -> DataType:
        """The silver type."""

    @property
    @abstractmethod
    def signature(self) -> str:
        """Identifies the decoding: two schemas with equal signatures decode alike."""

    @abstractmethod
    def decode(self, raw: Column) -> Column:
        """The silver value of a raw field."""

    def mismatch(self, raw: Column, decoded: Column) -> Column:
        """True where the raw value is present but did not decode (wrong type, overflow).

        Args:
            raw: the raw field.
            decoded: ``decode(raw)`` as already computed (a column reference, so the decoding
                expression is not repeated in the plan).
        """
        return raw.isNotNull() & decoded.isNull()

    def unavailable(self, raw: Column, ph: Placeholder) -> Column | None:
        """True where the raw value is the unavailable-value placeholder; None if it cannot be."""
        return None

    def exact(self, raw: Column, text: Column) -> Column | None:
        """``raw`` with its floating-point leaves re-read from ``text``; None if it has none.

        Args:
            raw: the raw field as ``from_json`` parsed it.
            text: the same field's JSON text as `json_member` returns it (strings unquoted).
        """
        return None


@dataclass(frozen=True, eq=False)
class LeafCodec(Codec):
    """A codec for a primitive (JSON scalar) field, parsed as its JSON text.

    Attributes:
        target: the silver type.
        sig: the signature.
        fn: raw text -> silver value (None: the text is the value).
        toastable: whether the field can carry the text placeholder.
        floating: whether the value is a JSON floating-point number (see `Codec.exact`).
    """

    target: DataType
    sig: str
    fn: Callable[[Column], Column] | None = None
    toastable: bool = False
    floating: bool = False

    @property
    def raw_type(self) -> DataType:
        return StringType()

    @property
    def target_type(self) -> DataType:
        return self.target

    @property
    def signature(self) -> str:
        return self.sig

    def decode(self, raw: Column) -> Column:
        return raw if self.fn is None else self.fn(raw)

    def mismatch(self, raw: Column, decoded: Column) -> Column:
        if self.fn is None:
            return sf.lit(False)
        return super().mismatch(raw, decoded)

    def unavailable(self, raw: Column, ph: Placeholder) -> Column | None:
        return ph.is_text(raw) if self.toastable else None

    def exact(self, raw: Column, text: Column) -> Column | None:
        return text if self.floating else None
