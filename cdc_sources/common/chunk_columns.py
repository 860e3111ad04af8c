"""An incremental snapshot chunk's rows kept as Arrow arrays until its close watermark.

A connector that renders a chunk column by column (MySQL/MariaDB: `cdc_sources.mysql.incremental_columnar`)
hands its rows to the driver (`cdc_sources.common.incremental_snapshot`) as `ArrowChunkRows`
instead of a dict of texts: the key and ``after`` JSON texts stay two string arrays, and the
window's de-duplication (a streamed event of a key drops the buffered row of that key) clears one
flag per dropped row. At the close watermark `arrow_rows_block` builds the chunk's ``r`` events
column-wise: the rows in `emission_order` (a hash of each key, computed once per row, sorted with
numpy), each value the envelope's fixed text around the row's ``after`` text (`envelope_around`),
the order keys a sequence that makes each one when asked (`PrefixedOrderKeys`). The texts and their
hash order (`prepare`) may be made on another thread while the chunk's close watermark travels
(`ArrowChunkRows.later`).
The events are byte for byte what `emission_order` and `blocking_snapshot.rows_block` give for
the same rows as a dict (``ts_*``, processing time, taken once per chunk instead of once per
row); on the one case numpy's order cannot settle, two keys with the same 63-bit hash, the rows
go through `emission_order` itself.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, overload

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from cdc_sources.common.incremental_snapshot import emission_order
from cdc_sources.common.snapshot_blocks import envelope_around, join_texts, same_text
from cdc_sources.spi import ChangeBlock

__all__ = ["ArrowChunkRows", "PrefixedOrderKeys", "PreparedRows", "arrow_rows_block", "hash_order", "prepare"]


@dataclass(frozen=True)
class PreparedRows:
    """A chunk's texts and their `hash_order` (None: two keys share a hash, or a key repeats)."""

    keys: Any
    afters: Any
    order: tuple[np.ndarray, np.ndarray] | None


def prepare(keys: Any, afters: Any) -> PreparedRows:
    """The texts of a chunk's rows (string arrays) with their `hash_order`: pure, for any thread."""
    return PreparedRows(keys, afters, hash_order(keys) if keys.null_count == 0 else None)


class ArrowChunkRows(Mapping[str | None, str]):
    """A chunk's rows: key JSON text -> ``after`` JSON text, held as two string arrays in key order.

    The same mapping as ``dict(zip(keys, afters))``, and supports what the driver does to
    `Chunk.rows` (``pop`` of a streamed key, ``clear`` on a truncate, ``len``) without turning the
    rows into Python objects; the key -> row index is built on the first ``pop`` only. Keys that
    repeat (a message key that is not unique in the table) keep the last row of each, as the dict.

    The texts may still be rendering when the rows are handed over (`later`): they are waited
    for on the first use that needs them (``len``, a look-up, `remaining`); ``bool`` does not
    wait. What rendering raises is raised there.

    Args:
        keys: each row's key JSON text, a string array without nulls.
        afters: each row's ``after`` JSON text, a string array.
    """

    def __init__(self, keys: Any, afters: Any) -> None:
        self._load: Callable[[], PreparedRows] | None = None
        self._rows = len(afters)
        self._kept: np.ndarray | None = None  # None: every row is kept
        self._index: dict[str, int] | None = None
        self._set(prepare(keys, afters))

    @classmethod
    def later(cls, load: Callable[[], PreparedRows], rows: int) -> ArrowChunkRows:
        """Rows that ``load`` returns (waiting for them: `prepare` ran elsewhere), ``rows`` of them."""
        out = cls.__new__(cls)
        out._load, out._rows, out._kept, out._index = load, rows, None, None
        return out

    def _set(self, rows: PreparedRows) -> None:
        keys, afters, order = rows.keys, rows.afters, rows.order
        if len(keys) != len(afters) or len(afters) != self._rows:
            raise ValueError(f"{len(keys)} keys for {len(afters)} rows ({self._rows} expected)")
        if keys.null_count:
            raise ValueError("a chunk row without a key text")
        # keys with distinct hashes are distinct; else one row per key, the last, as a dict keeps
        if order is None and pc.count_distinct(keys).as_py() != len(keys):
            unique = dict(zip(keys.to_pylist(), afters.to_pylist(), strict=True))
            keys, afters = pa.array(list(unique), pa.string()), pa.array(list(unique.values()), pa.string())
        self._keys, self._afters, self._count, self._order = keys, afters, len(keys), order

    def _texts(self) -> tuple[Any, Any]:
        if self._load is not None:
            self._set(self._load())  # raises again if used again
            self._load = None
        return self._keys, self._afters

    def emission(self) -> tuple[Sequence[int] | np.ndarray, Any, Any]:
        """The rows not dropped in `emission_order`: ``(h, keys, afters)``, ``h`` each row's last
        order-key element."""
        keys, afters = self._texts()
        if self._order is None:  # a hash shared by two keys: the exact rule, row by row
            kept_keys, kept_afters = self.remaining()
            ranked = emission_order(dict(zip(kept_keys.to_pylist(), kept_afters.to_pylist(), strict=True)))
            return ([h for h, _, _ in ranked], pa.array([k for _, k, _ in ranked], pa.string()),
                    pa.array([a for _, _, a in ranked], pa.string()))
        hashes, permutation = self._order
        if self._kept is not None:  # the order of what is left is the order of everything, filtered
            kept = self._kept[permutation]
            hashes, permutation = hashes[kept], permutation[kept]
        taken = pa.array(permutation)
        return hashes, keys.take(taken), afters.take(taken)

    @property
    def key_texts(self) -> Any:
        """Every row's key text (dropped rows too; `remaining`: those not dropped)."""
        return self._texts()[0]

    @property
    def after_texts(self) -> Any:
        """Every row's ``after`` text (dropped rows too)."""
        return self._texts()[1]

    def __bool__(self) -> bool:
        return self._rows > 0 if self._load is not None else self._count > 0

    def __len__(self) -> int:
        self._texts()
        return self._count

    def _position(self, key: object) -> int | None:
        keys, _ = self._texts()
        if self._index is None:
            self._index = {k: i for i, k in enumerate(keys.to_pylist())}
        i = self._index.get(key) if isinstance(key, str) else None
        if i is None or (self._kept is not None and not self._kept[i]):
            return None
        return i

    def __getitem__(self, key: str | None) -> str:
        i = self._position(key)
        if i is None:
            raise KeyError(key)
        return str(self._afters[i].as_py())

    def __iter__(self) -> Iterator[str | None]:
        keys, _ = self.remaining()
        return iter(keys.to_pylist())

    def __contains__(self, key: object) -> bool:
        return self._position(key) is not None

    def pop(self, key: str | None, default: str | None = None) -> str | None:
        """Drop the row of ``key`` (a streamed event of it is newer); its ``after`` text, or ``default``."""
        i = self._position(key)
        if i is None:
            return default
        if self._kept is None:
            self._kept = np.ones(len(self._keys), dtype=bool)
        self._kept[i] = False
        self._count -= 1
        return str(self._afters[i].as_py())

    def clear(self) -> None:
        """Drop every row (a truncate of the table)."""
        keys, _ = self._texts()
        self._kept = np.zeros(len(keys), dtype=bool)
        self._count = 0

    def remaining(self) -> tuple[Any, Any]:
        """The rows not dropped: ``(keys, afters)`` string arrays, in key order."""
        keys, afters = self._texts()
        if self._kept is None:
            return keys, afters
        mask = pa.array(self._kept)
        return keys.filter(mask), afters.filter(mask)


def hash_order(keys: Any) -> tuple[np.ndarray, np.ndarray] | None:
    """The `emission_order` of rows with these key texts (a string array, no nulls): ``(h,
    permutation)``, ``h`` each emitted row's last order-key element (ascending) and row ``i``
    emitted being ``keys[permutation[i]]``; None when two keys share a hash (then `emission_order`
    breaks the tie by the key text and numbers them apart)."""
    blake2b = hashlib.blake2b
    digests = b"".join([blake2b(k.encode(), digest_size=8).digest() for k in keys.to_pylist()])
    hashes = np.frombuffer(digests, dtype=">u8").astype(np.uint64) >> np.uint64(1)
    permutation = np.argsort(hashes, kind="stable")
    ordered = hashes[permutation]
    if len(ordered) > 1 and not bool(np.all(ordered[1:] != ordered[:-1])):
        return None
    return ordered, permutation


class PrefixedOrderKeys(Sequence[tuple[int, ...]]):
    """The order keys ``(*prefix, h)`` for each ``h`` of ``last`` (ascending), made when asked for.

    Args:
        prefix: every order key but its last element.
        last: the last elements (integers below 2^63), ascending.
    """

    def __init__(self, prefix: tuple[int, ...], last: Sequence[int] | np.ndarray) -> None:
        self.prefix = prefix
        self.last = last

    def __len__(self) -> int:
        return len(self.last)

    @overload
    def __getitem__(self, i: int) -> tuple[int, ...]: ...

    @overload
    def __getitem__(self, i: slice) -> PrefixedOrderKeys: ...

    def __getitem__(self, i: int | slice) -> tuple[int, ...] | PrefixedOrderKeys:
        if isinstance(i, slice):
            return PrefixedOrderKeys(self.prefix, self.last[i])
        return (*self.prefix, int(self.last[i]))


def arrow_rows_block(topic: str, rows: ArrowChunkRows, source: dict[str, Any], order_prefix: tuple[int, ...],
                     position: str, schema_id: str | None, headers: Mapping[str, str] | None) -> ChangeBlock | None:
    """A chunk's remaining rows as one ``r`` block in `emission_order`: every row with the
    ``source`` block ``source`` and the position ``position``, row ``i`` with order key
    ``(*order_prefix, h)``; None when no row remains."""
    hashes, keys, afters = rows.emission()
    n = len(keys)
    if n == 0:
        return None
    head, tail = envelope_around(source)
    return ChangeBlock(topic, keys, join_texts([head, afters, tail], n), "r", same_text(position, n), order_prefix,
                       0, schema_id, headers, PrefixedOrderKeys(order_prefix, hashes))
