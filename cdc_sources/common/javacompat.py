"""Java behaviours that leak into Debezium's output and must be reproduced bit for bit.

* ``java.util.HashMap`` iteration order: hstore maps and sparse vectors are built in HashMaps,
  so their JSON keys come out in bucket order, not in the order PostgreSQL printed them.
* Jackson's JSON string escaping (hstore rendered as a JSON string).
* ``BigInteger.toByteArray`` (decimal unscaled values) and ``Double.toString`` (pgjdbc's
  rendering of geometric values).
* ``float`` (binary32) values and ``Float.toString``, ``Math.round`` and integer narrowing
  (MySQL FLOAT columns, numeric column defaults).
"""

from __future__ import annotations

import binascii
import math
import struct
from collections.abc import Iterable, Sequence
from decimal import Decimal

_MASK32 = 0xFFFFFFFF
_TREEIFY_THRESHOLD = 8
_MIN_TREEIFY_CAPACITY = 64


def b64(data: bytes) -> str:
    """Standard base64 with padding, as JsonConverter writes BYTES."""
    return binascii.b2a_base64(data, newline=False).decode("ascii")


def bigint_bytes(value: int) -> bytes:
    """``BigInteger.toByteArray``: minimal big-endian two's complement, at least one byte."""
    bits = value.bit_length() if value >= 0 else (~value).bit_length()
    return value.to_bytes(bits // 8 + 1, "big", signed=True)


def string_hash(text: str) -> int:
    """``String.hashCode`` (over UTF-16 code units), as an unsigned 32-bit number."""
    h = 0
    data = text.encode("utf-16-be", errors="surrogatepass")
    for i in range(0, len(data), 2):
        h = (31 * h + (data[i] << 8 | data[i + 1])) & _MASK32
    return h


def short_hash(value: int) -> int:
    """``Short.hashCode`` as an unsigned 32-bit number."""
    return value & _MASK32


def _table_size_for(capacity: int) -> int:
    n = 1
    while n < capacity:
        n <<= 1
    return n


def hashmap_order(hashes: Sequence[int], initial_capacity: int | None = None) -> list[int]:
    """Indices of distinct keys, inserted in order, in ``HashMap`` iteration order.

    Simulates table growth (including the resize that replaces treeification in small tables);
    bins that Java would turn into trees (nine or more colliding keys in a table of 64 or more
    buckets) keep insertion order here, which may differ from Java.
    """
    spread = [(h ^ (h >> 16)) & _MASK32 for h in hashes]
    capacity = 16 if initial_capacity is None else _table_size_for(initial_capacity)
    threshold = int(capacity * 0.75)
    buckets: dict[int, list[int]] = {}
    for index, h in enumerate(spread):
        chain = buckets.setdefault(h & (capacity - 1), [])
        chain.append(index)
        if len(chain) > _TREEIFY_THRESHOLD and capacity < _MIN_TREEIFY_CAPACITY:
            capacity *= 2
            threshold = int(capacity * 0.75)
            buckets = _rehash(buckets, spread, capacity)
        if index + 1 > threshold:
            capacity *= 2
            threshold = int(capacity * 0.75)
            buckets = _rehash(buckets, spread, capacity)
    return [i for b in sorted(buckets) for i in buckets[b]]


def _rehash(buckets: dict[int, list[int]], spread: list[int], capacity: int) -> dict[int, list[int]]:
    out: dict[int, list[int]] = {}
    for b in sorted(buckets):
        for i in buckets[b]:
            out.setdefault(spread[i] & (capacity - 1), []).append(i)
    return out


_JSON_ESCAPES = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f", "\r": "\\r"}


def jackson_string(text: str) -> str:
    """A JSON string literal as Jackson writes it (``\\u00XX`` with upper-case hex, raw non-ASCII)."""
    out = ['"']
    for ch in text:
        if ch in _JSON_ESCAPES:
            out.append(_JSON_ESCAPES[ch])
        elif ch < " ":
            out.append(f"\\u{ord(ch):04X}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def jackson_object(pairs: Iterable[tuple[str, str | None]]) -> str:
    """A compact JSON object of string (or null) values, as Jackson's generator writes it."""
    body = ",".join(
        jackson_string(k) + ":" + ("null" if v is None else jackson_string(v)) for k, v in pairs
    )
    return "{" + body + "}"


def double_to_string(value: float) -> str:
    """``Double.toString`` (shortest round-trip digits; JDK 17 differs in rare cases)."""
    if math.isnan(value):
        return "NaN"
    if value in (float("inf"), float("-inf")):
        return "Infinity" if value > 0 else "-Infinity"
    if value == 0.0:
        return "-0.0" if str(value).startswith("-") else "0.0"
    sign, digits, exponent = Decimal(repr(value)).normalize().as_tuple()
    text = "".join(map(str, digits))
    point = len(text) + int(exponent)
    prefix = "-" if sign else ""
    if 1e-3 <= abs(value) < 1e7:
        if point <= 0:
            return f"{prefix}0.{'0' * -point}{text}"
        whole, fraction = text[:point].ljust(point, "0"), text[point:]
        return f"{prefix}{whole}.{fraction or '0'}"
    return f"{prefix}{text[0]}.{text[1:] or '0'}E{point - 1}"


_F32 = struct.Struct("<f")
_LONG_MIN, _LONG_MAX = -(2**63), 2**63 - 1


_FLOAT32_MAX = 3.4028234663852886e38
_FLOAT32_ROUNDS_TO_MAX = _FLOAT32_MAX + 2.0**103  # half a binary32 ulp above the largest float


def float32(value: float) -> float:
    """The value as a Java ``float`` would hold it: rounded to the nearest IEEE binary32
    (beyond the largest float: the largest float within half an ulp of it, else infinity)."""
    if math.isfinite(value) and abs(value) > _FLOAT32_MAX:
        magnitude = _FLOAT32_MAX if abs(value) < _FLOAT32_ROUNDS_TO_MAX else math.inf
        return math.copysign(magnitude, value)
    return _F32.unpack(_F32.pack(value))[0]  # type: ignore[no-any-return]


def float32_shortest(value: float) -> float:
    """What JsonConverter's text of a Java ``float`` reads back as, as a Python float:
    ``Float.toString``'s digits, the shortest decimal that rounds to the same binary32 but never
    fewer than two significant digits (then the two-digit decimal closest to the value), so
    ``Float.MIN_VALUE`` is 1.4E-45, not 1E-45.

    ``value`` must already be a binary32 value (see `float32`); NaN and the infinities pass
    through unchanged.
    """
    if math.isnan(value) or math.isinf(value) or value == 0.0:
        return value
    for digits in range(2, 10):
        candidate = float(f"{value:.{digits}g}")
        if float32(candidate) == value:
            return candidate
    return value


def java_round(value: float) -> int:
    """``Math.round(double)``: half up (towards positive infinity), saturating at the ``long``
    range; NaN gives 0."""
    if math.isnan(value):
        return 0
    if value >= 2.0**63:
        return _LONG_MAX
    if value <= -(2.0**63):
        return _LONG_MIN
    floor = math.floor(value)
    return floor + 1 if value - floor >= 0.5 else floor  # the difference is exact below 2^52


def narrow(value: int, bits: int) -> int:
    """Java's narrowing of an integer to ``bits`` (``shortValue()``, ``intValue()``...): wraps."""
    half = 1 << (bits - 1)
    return ((value + half) & ((1 << bits) - 1)) - half


def string_hashmap_order(keys: Iterable[str]) -> list[str]:
    """The iteration order of a Java ``HashMap<String, ?>`` filled with ``keys`` in order
    (duplicates kept once): Debezium leaks it into transaction END records."""
    distinct = list(dict.fromkeys(keys))
    return [distinct[i] for i in hashmap_order([string_hash(k) for k in distinct])]
