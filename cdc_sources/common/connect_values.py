"""Value encodings that Debezium's connectors share, as Kafka Connect's JsonConverter writes them.

* ``binary.handling.mode``: ``bytes`` (a BYTES schema; JsonConverter writes base64),
  ``base64``, ``base64-url-safe`` (padded, like ``java.util.Base64``) or ``hex`` (lower case),
  the last three as STRING schemas.
* ``decimal.handling.mode=precise``: ``org.apache.kafka.connect.data.Decimal`` values are the
  unscaled integer as ``BigInteger.toByteArray`` bytes, written as base64.

The option values are the same in every Debezium relational connector, so their types live here.
"""

from __future__ import annotations

import base64
from collections.abc import Callable
from typing import Final, Literal

from cdc_sources.common import kschema as ks
from cdc_sources.common.javacompat import b64

__all__ = ["BINARY_ENCODERS", "BinaryMode", "DecimalMode", "binary_schema", "decimal_bytes"]

DecimalMode = Literal["precise", "double", "string"]
"""``decimal.handling.mode``."""

BinaryMode = Literal["bytes", "base64", "base64-url-safe", "hex"]
"""``binary.handling.mode``."""


def _url_safe(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode("ascii")


BINARY_ENCODERS: Final[dict[str, Callable[[bytes], str]]] = {
    "bytes": b64,
    "base64": b64,
    "base64-url-safe": _url_safe,
    "hex": bytes.hex,
}
"""How each binary mode renders bytes in JSON (``bytes``: JsonConverter's base64 of BYTES)."""


def binary_schema(mode: BinaryMode) -> ks.Schema:
    """BYTES for ``bytes``, STRING for the text modes."""
    return ks.primitive("bytes" if mode == "bytes" else "string")


def decimal_bytes(unscaled: int) -> str:
    """A Connect ``Decimal`` value as JsonConverter writes it: base64 of the minimal big-endian
    two's complement of the unscaled integer (``BigInteger.toByteArray``)."""
    bits = unscaled.bit_length() if unscaled >= 0 else (~unscaled).bit_length()
    return b64(unscaled.to_bytes(bits // 8 + 1, "big", signed=True))
