"""What python-mysql-replication loses in a row image, put back before rendering.

The library reports an empty SET as None, exactly like SQL NULL, and tells them apart only in
the row's ``none_sources`` (``"empty set"``). Debezium writes ``""`` for an empty set, so the
stream reader calls `restore_empty_sets` on each row image before rendering it; the SET
converter renders the empty set it puts back as ``""``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

EMPTY_SET_SOURCE: Final = "empty set"
"""``pymysqlreplication.constants.NONE_SOURCE.EMPTY_SET``."""

EMPTY_SET: Final = frozenset[str]()


def restore_empty_sets(values: dict[str, Any], none_sources: Mapping[str, str]) -> dict[str, Any]:
    """Replace the None of every empty SET in ``values`` (a row's ``values``, ``before_values``
    or ``after_values``) by an empty set, using the matching ``none_sources``; returns ``values``
    (changed in place)."""
    for name, source in none_sources.items():
        if source == EMPTY_SET_SOURCE:
            values[name] = EMPTY_SET
    return values
