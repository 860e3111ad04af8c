"""Base64 text to hex digits, guarded so that malformed text is null on every engine."""

from __future__ import annotations

from pyspark.sql import Column
from pyspark.sql import functions as sf

__all__ = ["hex_of_base64"]


def hex_of_base64(b64: Column) -> Column:
    """The hex digits of base64 text; null when it is not base64. Only well-formed base64
    reaches ``try_to_binary``: Sail's returns null for a whole batch when one row is malformed."""
    valid = b64.rlike(r"^([A-Za-z0-9+/]{4})*([A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$")
    return sf.hex(sf.try_to_binary(sf.when(valid, b64), sf.lit("base64")))
