"""Where the data-quality results table lives (`silver.quality_results` writes it; ``status`` and
``maintain`` read and prune it without Spark)."""

from __future__ import annotations

__all__ = ["quality_location"]


def quality_location(state_location: str) -> str:
    """The results table under a silver state location."""
    return f"{state_location.rstrip('/')}/quality"
