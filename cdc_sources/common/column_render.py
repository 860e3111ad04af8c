"""Renders one batch of a column as JSON fragments: a vectorised encoder, the per-value converter
for the rows it declines, the field's fallback for NULL.

Used by the connectors' columnar snapshot paths; each connector decides which encoder (from
`vector_encoders` or its own dialect module) serves which field, and checks that choice with
`agrees_on_probes` before trusting it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import orjson
import pyarrow as pa
import pyarrow.compute as pc

from cdc_sources.common.vector_encoders import VectorEncoder


def dumps(value: Any) -> str:
    """JSON text of a converted value (as the per-row rendering writes it)."""
    return orjson.dumps(value).decode()


def render_column(values: Any, convert: Callable[[Any], Any], fallback: Any, encoder: VectorEncoder | None) -> Any:
    """The JSON text of a field for every row of ``values`` (a pyarrow array), as a string array without nulls.

    Byte for byte ``dumps(convert(value))`` with ``value`` the array's Python element (``str``
    for a string array, ``bytes`` for a binary one), and ``dumps(fallback)`` for NULL, as the
    per-row rendering writes them. Raises what ``convert`` raises on a value it rejects.

    Args:
        values: one batch of the column.
        convert: the field's converter, taking the array's elements.
        fallback: what NULL becomes.
        encoder: the vectorised encoder of the field (it takes string arrays), or None to
            render every value with ``convert``.
    """
    fragments, redo = None, None
    if encoder is not None:
        try:
            fragments, redo = encoder(values)
        except pa.ArrowInvalid:
            fragments = None
    if fragments is None:
        fragments = pa.nulls(len(values), pa.string())
        redo = values.is_valid()
    elif redo is not None and values.null_count:
        redo = pc.and_(redo, values.is_valid())
    if redo is not None and pc.any(redo).as_py():
        redone = [dumps(convert(v)) for v in values.filter(redo).to_pylist()]
        fragments = pc.replace_with_mask(fragments, redo, pa.array(redone, pa.string()))
    if values.null_count:
        fragments = pc.if_else(values.is_valid(), fragments, pa.scalar(dumps(fallback), pa.string()))
    return fragments


def same_function(a: Callable[[Any], Any], b: Callable[[Any], Any]) -> bool:
    """Whether ``a`` is ``b`` or another closure of the same code (same factory, same column):
    how a connector tells a field's plain converter from a transformed one."""
    if a is b:
        return True
    code = getattr(a, "__code__", None)
    return code is not None and code is getattr(b, "__code__", None)


def _fails(convert: Callable[[Any], Any], value: Any) -> bool:
    try:
        convert(value)
    except Exception:  # a probe the converter rejects must be redone, not encoded
        return True
    return False


def agrees_on_probes(encoder: VectorEncoder, convert: Callable[[Any], Any], probes: Sequence[str]) -> bool:
    """Whether ``encoder`` renders every probe text exactly as ``convert`` does.

    A probe the converter rejects must be flagged redo (left to the converter), never encoded;
    an encoder raising ``ArrowInvalid`` on the probes disagrees.
    """
    wanted = [None if _fails(convert, p) else dumps(convert(p)) for p in probes]
    texts = pa.array(list(probes), pa.string())
    try:
        fragments, redo = encoder(texts)
    except pa.ArrowInvalid:
        return False
    got: list[str | None] = fragments.to_pylist()
    flags = [False] * len(probes) if redo is None else redo.to_pylist()
    for i, flag in enumerate(flags):
        if flag:
            got[i] = None if _fails(convert, probes[i]) else dumps(convert(probes[i]))
    return got == wanted
