"""Vectorised JSON renderings of MySQL's text-protocol values, for the columnar snapshot path.

Built on `cdc_sources.common.vector_encoders` (same contract: rows whose text has another
layout, or that the per-value converter treats specially, are flagged "redo" and rendered by
that converter). What is MySQL's own here:

* zero dates (``0000-00-00``, a zero month or day) and, with ``enable.time.adjuster``, years
  0-99 are left to the converters (they become null, or 1970-2069);
* a DATE past its month's end (``ALLOW_INVALID_DATES``) is left to the converter, which rejects it;
* ``BIGINT UNSIGNED`` (``long`` mode) wraps values of 2^63 and more: only shorter texts are claimed;
* ``YEAR`` moves 0-99 like the time adjuster: only four-digit years are claimed;
* ``TIMESTAMP`` is a ``ZonedTimestamp`` with the shortest fraction (``...:05.5Z``), as the
  snapshot's ``java.sql.Timestamp`` is written.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from cdc_sources.common.vector_encoders import (
    QUOTE,
    ZERO,
    Bytes,
    Fragments,
    Mask,
    TimestampCheck,
    VectorEncoder,
    by_length,
    date_encoder,
    encode_integer,
    from_padded,
    gather,
    month_lengths,
    number,
    redo_mask,
    timestamp_encoder,
    timestamp_layout,
)


def _years_below_100(m: Bytes) -> Mask:
    """Rows whose year (columns 0-3) the time adjuster moves."""
    below: Mask = number(m, 0, 4) < 100
    return below


def _never(m: Bytes) -> Mask:
    none: Mask = np.zeros(len(m), np.bool_)
    return none


def _invalid_day(m: Bytes) -> Mask:
    """Rows whose day is past the end of its month (checked where month is 1-12)."""
    month = np.clip(number(m, 5, 7), 1, 12)
    bad: Mask = number(m, 8, 10) > month_lengths(number(m, 0, 4), month)
    return bad


def date_days_encoder(adjust: bool) -> VectorEncoder:
    """Epoch days (``Date``, Kafka ``Date``) of DATE texts; ``adjust``: ``enable.time.adjuster``."""
    def leave(m: Bytes) -> Mask:
        out = _invalid_day(m)
        return out | _years_below_100(m) if adjust else out
    return date_encoder(leave)


def datetime_encoder(divisor: int, adjust: bool) -> VectorEncoder:
    """Epoch microseconds (``divisor`` 1, ``MicroTimestamp``) or milliseconds (1000, ``Timestamp``,
    Kafka ``Timestamp``) of DATETIME texts; ``adjust``: ``enable.time.adjuster``."""
    leave: TimestampCheck = _years_below_100 if adjust else _never
    return timestamp_encoder(divisor, leave)


def unsigned_long_encoder(texts: Any) -> Fragments:
    """``BIGINT UNSIGNED`` in ``long`` mode: canonical texts up to 18 digits pass through (they are
    below 2^63, which the converter wraps)."""
    fragments, redo = encode_integer(texts)
    long = pc.greater(pc.binary_length(texts), 18)
    redo = long if redo is None else pc.or_(redo, long)
    return fragments, redo if pc.any(redo).as_py() else None


def year_encoder(texts: Any) -> Fragments:
    """``YEAR``: four-digit years (1000-9999: the time adjuster leaves them) pass through."""
    fragments, redo = encode_integer(texts)
    short = pc.not_equal(pc.binary_length(texts), 4)
    redo = short if redo is None else pc.or_(redo, short)
    return fragments, redo if pc.any(redo).as_py() else None


_TIMESTAMP_LENGTHS = (19, *range(21, 27))


def zoned_timestamp_encoder(texts: Any) -> Fragments:
    """``ZonedTimestamp`` of TIMESTAMP texts (UTC session): ``"yyyy-MM-ddTHH:mm:ss[.f]Z"`` with the
    fraction's trailing zeros (and a bare ``.``) cut."""
    offsets, data, groups, other = by_length(texts, _TIMESTAMP_LENGTHS)
    n = len(texts)
    out = np.full((n, 29), QUOTE, np.uint8)  # '"' + 26 characters at most + 'Z"'
    lengths = np.zeros(n, np.int64)
    bad = [other]
    for size, rows in groups:
        m = gather(offsets, data, rows, size)
        ok = timestamp_layout(m, size, b"")
        keep = np.full(len(rows), size, np.int64)  # characters kept of the text
        if size > 19:
            fraction = m[:, 20:size] == ZERO  # trailing zeros: from the end, while '0'
            zeros = np.cumprod(fraction[:, ::-1], axis=1).sum(axis=1)
            keep = size - zeros
            keep[keep == 20] = 19  # all zeros: the '.' goes too
        out[rows, 1:size + 1] = m
        out[rows, 11] = ord("T")
        out[rows, keep + 1] = ord("Z")
        out[rows, keep + 2] = QUOTE
        lengths[rows] = keep + 3
        bad.append(rows[~ok])
    return from_padded(out, lengths), redo_mask(n, bad)


def string_array(values: Any) -> Any:
    """``values`` as a plain (not large) string array, for the encoders."""
    return values if values.type == pa.string() else values.cast(pa.string())
