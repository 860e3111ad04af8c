"""Decodes the TupleData of many pgoutput messages at once, a column at a time.

A run of Insert messages of one relation is the streaming hot path. Instead of decoding each
message into a tuple of Python strings (`pgoutput.decode`), `tuple_columns` walks all their
TupleData together with numpy: for column ``c`` it reads every message's kind byte and length at
once, then gathers the value bytes into one Arrow string array. The result is what the
per-message decoder gives, column-wise: the text of a ``t`` value, null for ``n``; messages
holding ``u`` (unchanged TOAST) or ``b`` (binary) values, a malformed layout or invalid UTF-8
raise `ColumnarUnsupportedError`, and the caller decodes that run message by message instead.

TupleData layout (protocol version 1): Int16 column count, then per column a kind byte
(``n`` null, ``u`` unchanged TOAST, ``t`` text, ``b`` binary) and, for ``t``/``b``, an Int32
length and that many bytes.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa

__all__ = ["ColumnarUnsupportedError", "tuple_columns"]

_T, _N = ord("t"), ord("n")
_PAD = b"\0\0\0\0\0"  # a trailing 'n' column's length read stays inside the buffer


class ColumnarUnsupportedError(Exception):
    """The messages can't be decoded column-wise: decode them one by one."""


def tuple_columns(payloads: Sequence[bytes], tuple_start: int) -> list[Any]:
    """The columns of the TupleData at ``tuple_start`` of every payload, as Arrow string arrays.

    Args:
        payloads: whole pgoutput messages (at least one), each holding one TupleData at
            ``tuple_start`` that runs to its end, all with the same column count.
        tuple_start: where the TupleData starts (the column count) in every payload.

    Raises:
        ColumnarUnsupportedError: a message the columnar path does not handle (see module doc).
    """
    rows = len(payloads)
    lengths = np.fromiter(map(len, payloads), np.int64, rows)
    ends = np.cumsum(lengths)
    starts = ends - lengths
    buf = np.frombuffer(b"".join(payloads) + _PAD, np.uint8)
    counts = (buf[starts + tuple_start].astype(np.int64) << 8) | buf[starts + tuple_start + 1]
    ncols = int(counts[0])
    if (counts != ncols).any():
        raise ColumnarUnsupportedError("messages with different column counts")
    pos = starts + tuple_start + 2
    columns: list[Any] = []
    for _ in range(ncols):
        if (pos >= ends).any():
            raise ColumnarUnsupportedError("TupleData shorter than its column count")
        kinds = buf[pos]
        text = kinds == _T
        if not (text | (kinds == _N)).all():
            raise ColumnarUnsupportedError("an unchanged-TOAST, binary or unknown tuple value")
        size = np.where(text, _be32(buf, pos + 1), 0)
        if (size < 0).any():
            raise ColumnarUnsupportedError("a negative value length")
        if (np.where(text, pos + 5 + size, pos + 1) > ends).any():
            raise ColumnarUnsupportedError("a value runs past the end of its message")
        columns.append(_strings(buf, pos + 5, size, text))
        pos = pos + 1 + np.where(text, 4 + size, 0)
    if (pos != ends).any():
        raise ColumnarUnsupportedError("TupleData does not end its message")
    return columns


def _be32(buf: Any, at: Any) -> Any:
    """The big-endian Int32 at each of the positions ``at`` (int64, sign kept)."""
    word = ((buf[at].astype(np.int64) << 24) | (buf[at + 1].astype(np.int64) << 16)
            | (buf[at + 2].astype(np.int64) << 8) | buf[at + 3])
    return np.where(word >= 1 << 31, word - (1 << 32), word)


def _strings(buf: Any, first: Any, size: Any, valid: Any) -> Any:
    """An Arrow string array of the byte ranges ``[first, first + size)``; null where not ``valid``."""
    offsets = np.zeros(len(size) + 1, np.int64)
    np.cumsum(size, out=offsets[1:])
    total = int(offsets[-1])
    if total >= 1 << 31:
        raise ColumnarUnsupportedError("more than 2 GiB of text in one column")
    if total:
        # index of every output byte in buf: its row's first byte plus its place in the row
        shift = np.repeat(first - offsets[:-1], size)
        data = buf[shift + np.arange(total, dtype=np.int64)]
    else:
        data = np.zeros(0, np.uint8)
    nulls = None
    null_count = int(len(valid) - np.count_nonzero(valid))
    if null_count:
        nulls = pa.py_buffer(np.packbits(valid, bitorder="little"))
    array = pa.StringArray.from_buffers(len(size), pa.py_buffer(offsets.astype(np.int32)), pa.py_buffer(data),
                                        nulls, null_count)
    try:
        array.validate(full=True)
    except pa.ArrowInvalid as exc:
        raise ColumnarUnsupportedError(f"a value that is not UTF-8: {exc}") from None
    return array
