"""The schema history of a run or of a streaming query, read again only when it lacks a version.

The schema history only grows (the capture appends a version before any bronze row points at
it), and a ``schema_id`` always names the same schema. So versions read once stay right: a
reader must go back to the history only when an increment points at a ``schema_id`` it does
not hold yet, or holds no ``schema_id`` at all (then the newest version is wanted).
"""

from __future__ import annotations

from collections.abc import Callable, Set

from silver.schema_history import TopicSchema

__all__ = ["SchemaCache"]


class SchemaCache:
    """Schema versions per topic, loaded by ``load`` (one read of the history per topic) and
    reloaded when asked for a ``schema_id`` they lack. Not thread-safe."""

    def __init__(self, load: Callable[[str], list[TopicSchema]]) -> None:
        self._load = load
        self._held: dict[str, list[TopicSchema]] = {}
        self.loads = 0
        """How many times the history was read (for reports and tests)."""

    def __call__(self, topic: str, needed: Set[str]) -> list[TopicSchema]:
        """Every version of ``topic``, oldest first, including each of ``needed`` the history has."""
        held = self._held.get(topic)
        if held is None or not needed or not needed <= {v.schema_id for v in held}:
            held = self._held[topic] = self._load(topic)
            self.loads += 1
        return held
