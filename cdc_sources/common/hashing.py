"""Debezium's salted-hash pseudonyms (``column.mask.hash[.v2].<alg>.with.salt.<salt>``).

Byte-for-byte what ``io.debezium.relational.mapping.MaskStrings.HashValueConverter`` does
(Debezium 3.6.3, checked by ``tests/cdc_sources/common/DebeziumProbe.java``):

- ``digest = MessageDigest(alg); digest.update(salt bytes); digest.digest(value bytes)``,
  written as lower-case hex (two digits per byte).
- The salt is ``salt.getBytes()``: the JVM default charset, UTF-8 on every current JVM
  (JDK 18+ always; Debezium's images on JDK 17 too). Assumed UTF-8 here.
- v1 (``HashingByteArrayStrategy.V1``) hashes the Java serialization of the value
  (``ObjectOutputStream.writeObject``). For a string that is ``AC ED 00 05`` (stream magic
  and version), then ``74`` + a 2-byte length + the string in *modified* UTF-8, or, when
  that is longer than 65535 bytes, ``7C`` + an 8-byte length + the bytes. Modified UTF-8
  writes U+0000 as ``C0 80`` and each UTF-16 surrogate as its own 3-byte sequence.
- v2 hashes ``value.toString().getBytes()``: plain UTF-8, ``?`` for a lone surrogate.
- A null value stays null. The caller cuts the hex to the column length (MaskStrings does
  when the length is positive).
- Algorithm names are Java ``MessageDigest`` names, case-insensitive, with the SUN
  provider's aliases (``SHA`` and ``SHA1`` for ``SHA-1``, ``SHA256`` for ``SHA-256``...).
  ``MD2`` exists in Java but not in Python's hashlib, so it is refused.

Only text values can be hashed: masks apply to character columns, whose values are ``str``.
"""

from __future__ import annotations

import hashlib
import re
import struct
from collections.abc import Callable
from enum import Enum
from typing import Any

__all__ = [
    "JAVA_DIGESTS",
    "HashStrategy",
    "hashlib_name",
    "java_serialized_string",
    "make_hasher",
    "supported_algorithms",
]

JAVA_DIGESTS: dict[str, str] = {
    "MD5": "md5",
    "SHA-1": "sha1",
    "SHA": "sha1",
    "SHA1": "sha1",
    "SHA-224": "sha224",
    "SHA224": "sha224",
    "SHA-256": "sha256",
    "SHA256": "sha256",
    "SHA-384": "sha384",
    "SHA384": "sha384",
    "SHA-512": "sha512",
    "SHA512": "sha512",
    "SHA-512/224": "sha512_224",
    "SHA512/224": "sha512_224",
    "SHA-512/256": "sha512_256",
    "SHA512/256": "sha512_256",
    "SHA3-224": "sha3_224",
    "SHA3-256": "sha3_256",
    "SHA3-384": "sha3_384",
    "SHA3-512": "sha3_512",
}
"""Java ``MessageDigest`` names and aliases (upper-case) and the hashlib algorithm of each."""

_ASTRAL = re.compile("[\U00010000-\U0010ffff]")
_TC_STRING = 0x74
_TC_LONGSTRING = 0x7C
_STREAM_HEADER = b"\xac\xed\x00\x05"


class HashStrategy(Enum):
    """How the value is turned into bytes before hashing (Debezium's ``HashingByteArrayStrategy``)."""

    V1 = "v1"
    V2 = "v2"


def hashlib_name(java_name: str) -> str | None:
    """The hashlib name for a Java ``MessageDigest`` name, or None if unsupported here."""
    name = JAVA_DIGESTS.get(java_name.upper())
    if name is None or name not in hashlib.algorithms_available:
        return None
    return name


def supported_algorithms() -> list[str]:
    """The canonical Java names this Python build can hash with, for error messages."""
    return ["MD5"] + [n for n in JAVA_DIGESTS if "-" in n and hashlib_name(n) is not None]


def _split_surrogates(match: re.Match[str]) -> str:
    code = ord(match.group()) - 0x10000
    return chr(0xD800 + (code >> 10)) + chr(0xDC00 + (code & 0x3FF))


def _modified_utf8(value: str) -> bytes:
    if value.isascii() and "\x00" not in value:
        return value.encode("ascii")
    utf16_units = _ASTRAL.sub(_split_surrogates, value)
    return utf16_units.encode("utf-8", "surrogatepass").replace(b"\x00", b"\xc0\x80")


def java_serialized_string(value: str) -> bytes:
    """``ObjectOutputStream.writeObject(value)`` for a ``java.lang.String``, header included."""
    data = _modified_utf8(value)
    if len(data) <= 0xFFFF:
        return _STREAM_HEADER + struct.pack(">BH", _TC_STRING, len(data)) + data
    return _STREAM_HEADER + struct.pack(">BQ", _TC_LONGSTRING, len(data)) + data


def _java_default_bytes(value: str) -> bytes:
    return value.encode("utf-8", "replace")


def make_hasher(java_name: str, salt: str, strategy: HashStrategy, *, length: int | None) -> Callable[[Any], Any]:
    """A function mapping a text value to its pseudonym, as Debezium's hash mask does.

    Args:
        java_name: the Java ``MessageDigest`` name from the option name.
        salt: the salt from the option name.
        strategy: v1 or v2.
        length: the column length; a positive one cuts the hex string to it.

    Raises:
        ValueError: the algorithm is not supported (check with `hashlib_name` first).
    """
    algorithm = hashlib_name(java_name)
    if algorithm is None:
        raise ValueError(f"unsupported hash algorithm {java_name!r}")
    salted = hashlib.new(algorithm)
    salted.update(_java_default_bytes(salt))
    to_bytes = java_serialized_string if strategy is HashStrategy.V1 else _java_default_bytes
    cut = length if length is not None and length > 0 else None

    def pseudonym(value: Any) -> Any:
        if value is None:
            return None
        if not isinstance(value, str):
            raise TypeError(f"hash masking applies to text values only, got {type(value).__name__}")
        digest = salted.copy()
        digest.update(to_bytes(value))
        return digest.hexdigest()[:cut]

    return pseudonym
