"""Vectorised JSON renderings of SQL text columns, for the connectors' columnar snapshot paths.

Each encoder turns a pyarrow string array of values as the database prints them (PostgreSQL's
``COPY`` output, MySQL's text protocol) into the JSON text a per-value converter produces,
``dumps(convert(text))``, for a whole column at once. An encoder only claims the rows whose
text has the exact layout it was written for; every other row is flagged "redo" and rendered by
the per-value converter, so the converters stay the single source of truth. Nulls are left to
the caller (they become the field's fallback). Encoders may raise ``pyarrow.ArrowInvalid``
(text that does not parse at all): the caller then renders the whole column per value, which
fails or succeeds exactly as the per-row path would.

The encoders here read layouts both databases print the same way (canonical integers, plain
decimals, ``yyyy-MM-dd[ HH:mm:ss[.f]]``); the connectors' own modules add their dialects and
decide, from a converter's identity, which encoder serves which column. The raw-access helpers
(`layout`, `gather`, `by_length`, `number`...) are for those connector encoders.
"""

from __future__ import annotations

import binascii
from collections.abc import Callable
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

Bytes = npt.NDArray[np.uint8]
Ints = npt.NDArray[np.int64]
Mask = npt.NDArray[np.bool_]

Fragments = tuple[Any, Any]
"""(JSON texts as a pyarrow string array, rows to redo per value as a boolean array or None)."""

VectorEncoder = Callable[[Any], Fragments]
"""A pyarrow string array of database texts -> `Fragments`."""

QUOTE, BACKSLASH, ZERO = 0x22, 0x5C, 0x30
_INT64_MIN_DIGITS = list(b"9223372036854775808")
_BYTE_LIMITS = np.array([1 << (8 * k + 7) for k in range(7)], np.int64)


# -- raw access to string arrays ------------------------------------------------------------------

def layout(texts: Any) -> tuple[Ints, Bytes]:
    """(n + 1 offsets into ``data``, data bytes) of a string array; nulls have empty spans or junk."""
    n = len(texts)
    bufs = texts.buffers()
    width = 8 if pa.types.is_large_string(texts.type) or pa.types.is_large_binary(texts.type) else 4
    offsets = np.frombuffer(bufs[1], np.int64 if width == 8 else np.int32, n + 1, texts.offset * width)
    data = np.frombuffer(bufs[2], np.uint8) if bufs[2] is not None else np.zeros(0, np.uint8)
    return offsets.astype(np.int64), data


def from_fixed(rows: Bytes) -> Any:
    """A string array whose row i is the bytes ``rows[i]`` (all rows the same width)."""
    n, width = rows.shape
    offsets = np.arange(0, (n + 1) * width, width, dtype=np.int32)
    return pa.StringArray.from_buffers(n, pa.py_buffer(offsets), pa.py_buffer(np.ascontiguousarray(rows)))


def from_padded(rows: Bytes, lengths: Ints) -> Any:
    """A string array whose row i is the first ``lengths[i]`` bytes of ``rows[i]``."""
    n, width = rows.shape
    offsets = np.zeros(n + 1, np.int32)
    np.cumsum(lengths, out=offsets[1:])
    data = rows[np.arange(width) < lengths[:, None]]  # row-major: the rows' bytes, concatenated
    return pa.StringArray.from_buffers(n, pa.py_buffer(offsets), pa.py_buffer(data))


def row_mask(n: int, rows: Ints) -> Any:
    """A boolean array of ``n`` rows, true at ``rows``."""
    mask = np.zeros(n, np.bool_)
    mask[rows] = True
    return pa.array(mask)


def redo_mask(n: int, bad: list[Ints]) -> Any:
    """The rows of ``bad`` (index arrays) as a redo mask; None when there are none."""
    rows = np.concatenate(bad) if bad else np.zeros(0, np.int64)
    return row_mask(n, rows) if len(rows) else None


def gather(offsets: Ints, data: Bytes, rows: Ints, width: int) -> Bytes:
    """The ``width`` bytes of each of ``rows`` as a (len(rows), width) matrix."""
    starts = offsets[rows]
    if len(rows) and rows[-1] - rows[0] == len(rows) - 1 and starts[-1] - starts[0] == width * (len(rows) - 1):
        first = int(starts[0])
        return data[first:first + width * len(rows)].reshape(len(rows), width)  # contiguous: no copy
    gathered: Bytes = data[starts[:, None] + np.arange(width)]
    return gathered


def by_length(texts: Any, lengths: tuple[int, ...]) -> tuple[Ints, Bytes, list[tuple[int, Ints]], Ints]:
    """Offsets, data, (length, rows) for each wanted length, and the non-null rows of other lengths."""
    offsets, data = layout(texts)
    size = np.diff(offsets)
    valid = np.ones(len(texts), np.bool_) if texts.null_count == 0 else texts.is_valid().to_numpy(False)
    groups = [(w, np.flatnonzero((size == w) & valid)) for w in lengths]
    other = valid & ~np.isin(size, np.array(lengths, np.int64))
    return offsets, data, [(w, r) for w, r in groups if len(r)], np.flatnonzero(other)


def digits_ok(m: Bytes, cols: list[int]) -> Mask:
    """Rows of ``m`` whose bytes at ``cols`` are all ASCII digits."""
    ok: Mask = np.all((m[:, cols] - np.uint8(ZERO)) <= 9, axis=1)
    return ok


def number(m: Bytes, start: int, stop: int) -> Ints:
    """The decimal number in columns ``[start, stop)`` of each row of ``m`` (digits assumed)."""
    out = np.zeros(len(m), np.int64)
    for i in range(start, stop):
        out = out * 10 + (m[:, i].astype(np.int64) - ZERO)
    return out


def days_from_civil(year: Ints, month: Ints, day: Ints) -> Ints:
    """Days since 1970-01-01 of proleptic Gregorian dates, element-wise (days past a month's end
    roll over; numpy ``//`` floors like Python's)."""
    y = year - (month <= 2)
    era = y // 400
    yoe = y - era * 400
    doy = (153 * (month + np.where(month > 2, -3, 9)) + 2) // 5 + day - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    days: Ints = era * 146097 + doe - 719468
    return days


_MONTH_DAYS = np.array([0, 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31], np.int64)


def month_lengths(year: Ints, month: Ints) -> Ints:
    """Days in each (year, month) (months 1-12, proleptic Gregorian)."""
    leap = (year % 4 == 0) & ((year % 100 != 0) | (year % 400 == 0))
    out: Ints = _MONTH_DAYS[month] + ((month == 2) & leap)
    return out


# -- encoders --------------------------------------------------------------------------------------

def encode_integer(texts: Any) -> Fragments:
    """Integers: canonical decimal texts pass through unchanged.

    Claimed: 1 to 19 digits, optionally negative down to -2**63, without leading zeros (``-0``
    excluded): what ``int`` reads and orjson writes back identically (orjson takes
    -2**63..2**64-1); every other text is redone.
    """
    offsets, data = layout(texts)
    n = len(texts)
    size = np.diff(offsets)
    region = data[offsets[0]:offsets[-1]]
    starts = np.minimum(offsets[:-1], max(len(data) - 1, 0))
    negative = (size > 0) & (data[starts] == ord("-")) if len(data) else np.zeros(n, np.bool_)
    digits = size - negative
    lead = data[np.minimum(starts + negative, max(len(data) - 1, 0))] if len(data) else np.zeros(n, np.uint8)
    ok = (digits >= 1) & (digits <= 19) & ((lead != ZERO) | ((digits == 1) & ~negative))
    big = np.flatnonzero(ok & negative & (digits == 19))
    if len(big):  # beyond -2**63 orjson refuses the int: leave those to the converter
        below = np.array(_INT64_MIN_DIGITS, np.int16) - gather(offsets + 1, data, big, 19).astype(np.int16)
        differs = below != 0
        first = np.argmax(differs, axis=1)
        ok[big[differs.any(axis=1) & (below[np.arange(len(big)), first] < 0)]] = False
    odd = np.flatnonzero((region - np.uint8(ZERO)) > 9) + offsets[0]
    if len(odd):  # a sign past the first byte, blanks, hex...: not canonical
        rows = np.searchsorted(offsets, odd, side="right") - 1
        leading_sign = negative[rows] & (odd == offsets[rows])
        ok[rows[~leading_sign]] = False
    return texts, None if ok.all() else pa.array(~ok)


def encode_string(texts: Any) -> Fragments:
    """A string as orjson writes it: quoted, ``"`` and ``\\`` escaped; control characters redone."""
    quoted = pc.binary_join_element_wise('"', texts, '"', "")
    offsets, data = layout(texts)
    region = data[offsets[0]:offsets[-1]]
    special = (region == QUOTE) | (region == BACKSLASH) | (region < 0x20)
    if not special.any():
        return quoted, None
    hits = np.flatnonzero(special) + offsets[0]
    rows = np.unique(np.searchsorted(offsets, hits, side="right") - 1)
    control = np.unique(np.searchsorted(offsets, np.flatnonzero(region < 0x20) + offsets[0], side="right") - 1)
    escape = np.setdiff1d(rows, control, assume_unique=True)
    if len(escape):
        subset = texts.take(pa.array(escape))
        subset = pc.replace_substring(pc.replace_substring(subset, "\\", "\\\\"), '"', '\\"')
        quoted = pc.replace_with_mask(quoted, row_mask(len(texts), escape),
                                      pc.binary_join_element_wise('"', subset, '"', ""))
    return quoted, row_mask(len(texts), control) if len(control) else None


def decimal_encoder(scale: int) -> VectorEncoder:
    """Connect ``Decimal`` (fixed scale): base64 of the unscaled value's two's complement bytes.

    Claims the texts with exactly ``scale`` fraction digits (none for scale 0) whose unscaled
    value fits in 64 bits, as both databases print NUMERIC/DECIMAL(p <= 18, scale).
    """
    def encode(texts: Any) -> Fragments:
        dot = pc.find_substring(texts, ".")
        expected = -1 if scale == 0 else pc.subtract(pc.utf8_length(texts), scale + 1)
        offsets, data = layout(texts)
        region = data[offsets[0]:offsets[-1]]
        odd = np.flatnonzero(((region - np.uint8(ZERO)) > 9) & (region != ord(".")) & (region != ord("-")))
        redo = pc.fill_null(pc.not_equal(dot, expected), False)
        if len(odd):  # hex digits, signs, blanks...: the per-value converter decides
            odd_rows = np.unique(np.searchsorted(offsets, odd + offsets[0], side="right") - 1)
            redo = pc.or_(redo, row_mask(len(texts), odd_rows))
        digits = pc.replace_substring(texts, ".", "", max_replacements=1)
        digits = pc.if_else(pc.or_(redo, pc.is_null(texts)), "0", digits)  # no nulls: exact int64s
        values = pc.cast(digits, pa.int64()).to_numpy()
        return base64_quoted(values), redo if pc.any(redo).as_py() else None
    return encode


def base64_quoted(values: Ints) -> Any:
    """``"<base64>"`` of each value's minimal big-endian two's complement (``BigInteger.toByteArray``)."""
    n = len(values)
    magnitude = np.where(values >= 0, values, ~values)
    size = 1 + np.searchsorted(_BYTE_LIMITS, magnitude, side="right")  # bytes: bit length // 8 + 1
    groups = (size + 2) // 3
    shifted = (values.view(np.uint64) << (8 * (8 - size)).astype(np.uint64)).astype(">u8")  # left-aligned
    raw = np.zeros((n, 9), np.uint8)  # 9 bytes a row: each row is whole base64 groups
    raw[:, :8] = shifted.view(np.uint8).reshape(n, 8)
    out = np.full((n, 14), QUOTE, np.uint8)
    out[:, 1:13] = np.frombuffer(binascii.b2a_base64(raw.tobytes(), newline=False), np.uint8).reshape(n, 12)
    end = 4 * groups  # the last base64 character; the closing quote goes after it
    pad = 3 * groups - size
    one, two = np.flatnonzero(pad >= 1), np.flatnonzero(pad == 2)
    out[one, end[one]] = ord("=")
    out[two, end[two] - 1] = ord("=")
    out[np.arange(n), end + 1] = QUOTE
    return from_padded(out, end + 2)


DATE_DIGITS = [0, 1, 2, 3, 5, 6, 8, 9]
TIME_DIGITS = [11, 12, 14, 15, 17, 18]
_TIME_PUNCT = {4: ord("-"), 7: ord("-"), 10: ord(" "), 13: ord(":"), 16: ord(":")}


def timestamp_layout(m: Bytes, width: int, suffix: bytes) -> Mask:
    """Rows of ``m`` shaped ``yyyy-MM-dd HH:mm:ss[.f...]<suffix>`` with sane field ranges."""
    body = width - len(suffix)
    ok = digits_ok(m, DATE_DIGITS + TIME_DIGITS + list(range(20, body)))
    for col, char in _TIME_PUNCT.items():
        ok &= m[:, col] == char
    if body > 19:
        ok &= m[:, 19] == ord(".")
    for i, char in enumerate(suffix):
        ok &= m[:, body + i] == char
    month, day = number(m, 5, 7), number(m, 8, 10)
    ok &= (month >= 1) & (month <= 12) & (day >= 1) & (day <= 31)
    ok &= (number(m, 11, 13) <= 23) & (number(m, 14, 16) <= 59) & (number(m, 17, 19) <= 59)
    return ok


TimestampCheck = Callable[[Bytes], Mask]
"""Extra rows of a ``yyyy-MM-dd...`` byte matrix an encoder must leave to the converter (a
connector's own rule: MySQL's time adjuster for years 0-99...)."""


def _claims_all(m: Bytes) -> Mask:
    none: Mask = np.zeros(len(m), np.bool_)
    return none


def timestamp_encoder(divisor: int, leave: TimestampCheck = _claims_all) -> VectorEncoder:
    """Epoch microseconds (``divisor`` 1) or milliseconds (1000, floored) of timestamp texts
    ``yyyy-MM-dd HH:mm:ss[.ffffff]`` (years 0000-9999, read as UTC); rows ``leave`` marks are redone."""
    def encode(texts: Any) -> Fragments:
        offsets, data, groups, other = by_length(texts, (19, *range(21, 27)))
        micros = np.zeros(len(texts), np.int64)
        bad = [other]
        for size, rows in groups:
            m = gather(offsets, data, rows, size)
            ok = timestamp_layout(m, size, b"") & ~leave(m)
            days = days_from_civil(number(m, 0, 4), number(m, 5, 7), number(m, 8, 10))
            seconds = days * 86_400 + number(m, 11, 13) * 3600 + number(m, 14, 16) * 60 + number(m, 17, 19)
            fraction = number(m, 20, size) * 10 ** (6 - (size - 20)) if size > 19 else 0
            micros[rows[ok]] = (seconds * 1_000_000 + fraction)[ok]
            bad.append(rows[~ok])
        return pa.array(micros // divisor).cast(pa.string()), redo_mask(len(texts), bad)
    return encode


def date_layout(m: Bytes) -> Mask:
    """Rows of ``m`` (10 bytes wide) shaped ``yyyy-MM-dd`` with month 1-12 and day 1-31."""
    ok: Mask = digits_ok(m, DATE_DIGITS) & (m[:, 4] == ord("-")) & (m[:, 7] == ord("-"))
    month, day = number(m, 5, 7), number(m, 8, 10)
    ok &= (month >= 1) & (month <= 12) & (day >= 1) & (day <= 31)
    return ok


def date_encoder(leave: TimestampCheck = _claims_all) -> VectorEncoder:
    """Epoch days of date texts ``yyyy-MM-dd`` (years 0000-9999); rows ``leave`` marks are redone."""
    def encode(texts: Any) -> Fragments:
        offsets, data, groups, other = by_length(texts, (10,))
        days = np.zeros(len(texts), np.int64)
        bad = [other]
        for _size, rows in groups:
            m = gather(offsets, data, rows, 10)
            ok = date_layout(m) & ~leave(m)
            days[rows[ok]] = days_from_civil(number(m, 0, 4), number(m, 5, 7), number(m, 8, 10))[ok]
            bad.append(rows[~ok])
        return pa.array(days).cast(pa.string()), redo_mask(len(texts), bad)
    return encode


encode_date = date_encoder()
"""Epoch days (``Date``, Kafka ``Date``) of date texts ``yyyy-MM-dd`` (years 0000-9999)."""
