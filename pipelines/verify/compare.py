"""Comparing canonical rows: silver's side, bucket sums, and the keys that differ. Pure."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from pipelines.verify.canonical import ColumnKind, bucket_of, column_texts, join_fields, row_checksum
from pipelines.verify.model import ColumnPlan, DiffKind, KeyDiff
from silver.declarations import METADATA_PREFIX, SilverTable

__all__ = [
    "SilverSide",
    "bookkeeping_columns",
    "bucket_sums",
    "diff_rows",
    "differing_buckets",
    "key_label",
    "key_text_of_json",
    "silver_side",
    "source_side",
]

Texts = tuple[str | None, ...]


@dataclass
class SilverSide:
    """Silver's current rows as canonical texts.

    Attributes:
        rows: key text -> the compared columns' texts (keys first), current rows only (SCD2:
            the open version; soft deletes: rows not flagged deleted).
        seqs: key text -> the highest bronze ``seq`` silver holds for the key, deleted and
            closed versions included: above the read point's, silver has moved on for that key.
        duplicates: key texts with more than one current row.
    """

    rows: dict[str, Texts] = field(default_factory=dict)
    seqs: dict[str, int] = field(default_factory=dict)
    duplicates: set[str] = field(default_factory=set)


def bookkeeping_columns(decl: SilverTable) -> list[str]:
    """The silver columns `silver_side` reads besides the compared ones (those silver has)."""
    names = [f"{METADATA_PREFIX}seq"]
    if decl.history == "scd2":
        names += [decl.scd2.end_seq, decl.scd2.current]
    elif decl.deletes == "soft":
        names.append(decl.soft_delete.flag)
    return names


def _is_true(values: list[Any]) -> list[bool]:
    return [v is True for v in values]


def silver_side(plan: ColumnPlan, decl: SilverTable, table: pa.Table) -> SilverSide:
    """Silver's rows (see `SilverSide`)."""
    n = table.num_rows
    current = [True] * n
    if decl.history == "scd2":
        current = _is_true(table.column(decl.scd2.current).to_pylist())
    elif decl.deletes == "soft" and decl.soft_delete.flag in table.column_names:
        current = [not d for d in _is_true(table.column(decl.soft_delete.flag).to_pylist())]
    seq_columns = [c for c in (f"{METADATA_PREFIX}seq", decl.scd2.end_seq if decl.history == "scd2" else None)
                   if c is not None and c in table.column_names]
    seqs = [table.column(c).to_pylist() for c in seq_columns]
    columns = [column_texts(c.kind, table.column(c.silver)) for c in plan.compared]
    keys = len(plan.keys)
    side = SilverSide()
    for i in range(n):
        texts = tuple(col[i] for col in columns)
        key = join_fields(texts[:keys])
        seq = max((int(s[i]) for s in seqs if s[i] is not None), default=-1)
        side.seqs[key] = max(seq, side.seqs.get(key, -1))
        if current[i]:
            if key in side.rows:
                side.duplicates.add(key)
            side.rows[key] = texts
    return side


def source_side(plan: ColumnPlan, rows: Iterable[Sequence[str | None]]) -> dict[str, Texts]:
    """Key text -> texts of source rows (as the source reader returns them)."""
    keys = len(plan.keys)
    return {join_fields(r[:keys]): tuple(r) for r in rows}


def bucket_sums(rows: Mapping[str, Texts], buckets: int) -> dict[int, tuple[int, int]]:
    """Bucket -> (rows, checksum), as the source computes them in SQL."""
    out: dict[int, tuple[int, int]] = {}
    for key, texts in rows.items():
        b = bucket_of(key, buckets)
        n, h = out.get(b, (0, 0))
        out[b] = (n + 1, h + row_checksum(join_fields(texts)))
    return out


def differing_buckets(source: Mapping[int, tuple[int, int]], silver: Mapping[int, tuple[int, int]]) -> list[int]:
    """The buckets whose row count or checksum differ."""
    return sorted(b for b in set(source) | set(silver) if source.get(b, (0, 0)) != silver.get(b, (0, 0)))


def key_label(plan: ColumnPlan, texts: Texts) -> str:
    """``id=42`` / ``a=1, b=x``: a key for people (source column names, canonical values)."""
    return ", ".join(f"{c.source}={'null' if t is None else t}" for c, t in zip(plan.keys, texts, strict=False))


def diff_rows(plan: ColumnPlan, source: Mapping[str, Texts], silver: Mapping[str, Texts]) -> dict[str, KeyDiff]:
    """Key text -> how it differs, for every key whose rows differ."""
    keys = len(plan.keys)
    out: dict[str, KeyDiff] = {}
    for key in sorted(set(source) | set(silver)):
        s, t = source.get(key), silver.get(key)
        if s == t:
            continue
        if t is None:
            assert s is not None
            out[key] = KeyDiff(key_label(plan, s[:keys]), DiffKind.MISSING)
        elif s is None:
            out[key] = KeyDiff(key_label(plan, t[:keys]), DiffKind.EXTRA)
        else:
            columns = tuple(c.source for c, a, b in zip(plan.compared, s, t, strict=True) if a != b)
            out[key] = KeyDiff(key_label(plan, s[:keys]), DiffKind.DIFFERENT, columns)
    return out


def key_text_of_json(plan: ColumnPlan, key: Mapping[str, Any] | None) -> str | None:
    """The key text of a bronze row's Debezium key (JSON), when its key columns' JSON values are
    plain integers and strings; None when that cannot be told (or there is no key)."""
    if key is None:
        return None
    texts: list[str | None] = []
    for column in plan.keys:
        value = key.get(column.source)
        if column.kind is ColumnKind.INT and isinstance(value, int) and not isinstance(value, bool):
            texts.append(str(value))
        elif column.kind is ColumnKind.TEXT and isinstance(value, str):
            texts.append(value)
        else:
            return None
    return join_fields(texts)
