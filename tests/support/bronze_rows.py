"""Reading bronze tables back in tests, and the connector-neutral exactly-once checks on them."""

from __future__ import annotations

import itertools
import operator
from collections import Counter
from collections.abc import Callable, Hashable, Mapping, Sequence
from typing import Any

import orjson
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


def snapshot_completed(root: str, source: str) -> bool:
    """Whether the source's last committed offsets row says its snapshot completed."""
    rows = read_offsets(root, source)
    return bool(rows) and bool(rows[-1]["snapshot_completed"])


def topic_committed_since(root: str, source: str, topic: str, batch: int) -> bool:
    """Whether a batch after ``batch`` committed rows of ``topic``, its offsets row included."""
    return any(r["batch"] > batch and topic in r["topics"] for r in read_offsets(root, source))


def holds_id(root: str, topic: str, row_id: int) -> bool:
    """Whether the topic holds an event keyed ``{"id": row_id}``."""
    return any(r["key"] == f'{{"id":{row_id}}}' for r in read_topic(root, topic))


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


def replay(rows: Sequence[dict[str, Any]]) -> dict[Any, dict[str, Any]]:
    """Apply bronze events in seq order: c/u/r upsert ``after``, d deletes, tombstones are skipped;
    the resulting rows by ``id``."""
    state: dict[Any, dict[str, Any]] = {}
    for r in rows:
        if r["op"] in ("c", "u", "r"):
            after = orjson.loads(r["value"])["after"]
            state[after["id"]] = after
        elif r["op"] == "d":
            state.pop(orjson.loads(r["key"])["id"], None)
    return state


def state_problems(rows: Sequence[dict[str, Any]], source: Mapping[Any, dict[str, Any]],
                   same: Callable[[dict[str, Any], dict[str, Any]], bool] = operator.eq) -> list[str]:
    """Replayed bronze must equal ``source`` (``SELECT *`` by ``id``); ``same(bronze row, source
    row)`` says whether two rows are equal."""
    state = replay(rows)
    missing = sorted(source.keys() - state.keys())
    extra = sorted(state.keys() - source.keys())
    wrong = sorted(k for k in source.keys() & state.keys() if not same(state[k], source[k]))
    if not (missing or extra or wrong):
        return []
    return [f"bronze state != SELECT *: {len(missing)} missing ids {missing[:5]}, {len(extra)} extra ids "
            f"{extra[:5]}, {len(wrong)} differing ids "
            + "; ".join(f"{k}: bronze {state[k]} source {source[k]}" for k in wrong[:3])]
