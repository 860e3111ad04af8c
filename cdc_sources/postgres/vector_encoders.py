"""Vectorised JSON renderings of the PostgreSQL-only text layouts, for the columnar snapshot path.

The layouts PostgreSQL shares with other databases (integers, strings, fixed-scale numerics,
timestamps, dates) are rendered by `cdc_sources.common.vector_encoders`; this module adds what
only PostgreSQL prints (``COPY`` output with the session settings of
`connection.SESSION_SETTINGS`): booleans as ``t``/``f``, ``NaN`` and infinities in numerics, and
UTC ``timestamptz`` texts ending in ``+00``. Same contract as the common encoders: rows whose
text has another layout are flagged "redo" and rendered by the per-value converter.

Which encoder serves which column is decided in `column_render`, from the converter's identity.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from cdc_sources.common.vector_encoders import (
    QUOTE,
    ZERO,
    Fragments,
    VectorEncoder,
    by_length,
    encode_string,
    from_fixed,
    gather,
    redo_mask,
    timestamp_layout,
)


def encode_boolean(texts: Any) -> Fragments:
    """``parse_bool``: ``t``/``T`` are true, any other text is false."""
    true = pc.or_(pc.equal(texts, "t"), pc.equal(texts, "T"))
    return pc.if_else(true, "true", "false"), None


def encode_decimal_string(texts: Any) -> Fragments:
    """``decimal.handling.mode=string``: the text as a JSON string; NaN and infinities redone."""
    quoted, redo = encode_string(texts)
    special = pc.is_in(texts, value_set=pa.array(["NaN", "Infinity", "-Infinity"]))
    redo = special if redo is None else pc.or_(redo, special)
    return quoted, redo if pc.any(redo).as_py() else None


def zoned_timestamp_encoder(width: int) -> VectorEncoder:
    """``ZonedTimestamp`` of UTC TIMESTAMPTZ texts (``...+00``, years 0000-9999): ISO with
    exactly ``width`` fraction digits (padded or cut), ``T`` and ``Z``."""
    lengths = (22,) if width == 0 else (22, *range(24, 32))

    def encode(texts: Any) -> Fragments:
        offsets, data, groups, other = by_length(texts, lengths)
        out = np.full((len(texts), 22 + (width + 1 if width else 0)), ZERO, np.uint8)
        out[:, 0] = out[:, -1] = QUOTE
        out[:, 11] = ord("T")
        out[:, -2] = ord("Z")
        if width:
            out[:, 20] = ord(".")
        bad = [other]
        for size, rows in groups:  # rows not matching the layout get junk here, and are redone
            m = gather(offsets, data, rows, size)
            whole = len(rows) == len(texts)  # one layout for every row: no scatter needed
            digits = min(size - 23, width) if size > 22 else 0
            for dst, src in ((slice(1, 11), slice(0, 10)), (slice(12, 20), slice(11, 19)),
                             (slice(21, 21 + digits), slice(20, 20 + digits))):
                if whole:
                    out[:, dst] = m[:, src]
                else:
                    out[rows, dst] = m[:, src]
            bad.append(rows[~timestamp_layout(m, size, b"+00")])
        return from_fixed(out), redo_mask(len(texts), bad)
    return encode
