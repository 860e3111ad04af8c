"""Reading bronze tables back in tests, and the connector-neutral exactly-once checks on them."""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Hashable, Sequence
from typing import Any

from deltalake import DeltaTable

from bronze.schema import offsets_path, topic_path

SEQ_GAPS = "seq has gaps: not exactly"
SEQ_NOT_INCREASING = "seq is not strictly increasing"
SNAPSHOT_DUPLICATES = "extra snapshot rows"
SNAPSHOT_LEFTOVERS = "snapshot rows of interrupted snapshots remain"
"""Problem labels the checks use, so tests can tell known bugs from new ones."""

BRONZE_COLUMNS = ("key", "value", "op", "seq", "position", "batch")


def read_topic(root: str, topic: str, columns: Sequence[str] = BRONZE_COLUMNS) -> list[dict[str, Any]]:
    """A bronze topic's rows in ``seq`` order; empty if it does not exist."""
    return read_table(topic_path(root, topic), columns)


def read_table(path: str, columns: Sequence[str] = BRONZE_COLUMNS) -> list[dict[str, Any]]:
    """The rows of a bronze-layout Delta table (topic or private history) in ``seq`` order; empty
    if it does not exist."""
    try:
        table = DeltaTable(path)
    except Exception:  # TableNotFoundError: nothing captured yet
        return []
    return sorted(table.to_pyarrow_table(columns=list(columns)).to_pylist(), key=lambda r: r["seq"])


def read_offsets(root: str, source: str) -> list[dict[str, Any]]:
    """The committed offsets rows of a source, by batch; empty if none."""
    try:
        table = DeltaTable(offsets_path(root, source))
    except Exception:
        return []
    return sorted(table.to_pyarrow_table().to_pylist(), key=lambda r: r["batch"])


def seq_problems(rows: Sequence[dict[str, Any]]) -> list[str]:
    """``seq`` must be 1..N, strictly increasing, without gaps (rows in ``seq`` order)."""
    seqs = [r["seq"] for r in rows]
    if any(b <= a for a, b in itertools.pairwise(seqs)):
        return [f"{SEQ_NOT_INCREASING}: {[(a, b) for a, b in itertools.pairwise(seqs) if b <= a][:5]}"]
    if seqs != list(range(1, len(rows) + 1)):
        gaps = [(a, b) for a, b in itertools.pairwise([0, *seqs]) if b != a + 1]
        return [f"{SEQ_GAPS} 1..{len(rows)}: {len(gaps)} gaps (prev, next), e.g. {gaps[:5]}"]
    return []


def duplicates(what: str, items: Sequence[Hashable]) -> list[str]:
    """One problem naming the items that occur more than once, if any."""
    dupes = [k for k, n in Counter(items).items() if n > 1]
    return [f"{len(dupes)} duplicated {what}, e.g. {dupes[:3]}"] if dupes else []


def event_diff(actual: Sequence[Hashable], expected: Sequence[Hashable]) -> list[str]:
    """Bronze's streamed events must be the expected ones, in the same order, each once."""
    if list(actual) == list(expected):
        return []
    i = next((k for k, (a, b) in enumerate(zip(actual, expected, strict=False)) if a != b),
             min(len(actual), len(expected)))
    surplus = list((Counter(actual) - Counter(expected)).elements())
    lacking = list((Counter(expected) - Counter(actual)).elements())
    return [f"streamed events differ from the source's committed changes: bronze {len(actual)}, source "
            f"{len(expected)}; first difference at #{i}: bronze {list(actual[i:i + 3])} vs source "
            f"{list(expected[i:i + 3])}; {len(surplus)} surplus (duplicates) e.g. {surplus[:3]}, "
            f"{len(lacking)} missing e.g. {lacking[:3]}"]
