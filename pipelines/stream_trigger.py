"""The ``--trigger`` values of the silver streaming commands, without importing pyspark.

``cdc-lakehouse silver --stream``, ``jobs/silver_job.py`` and the bundle writers (which must not
import pyspark) share them.
"""

from __future__ import annotations

from enum import StrEnum


class StreamTrigger(StrEnum):
    """How the silver streaming job triggers its micro-batches."""

    AVAILABLE_NOW = "available-now"
    PROCESSING_TIME = "processing-time"


TRIGGER_CHOICES = tuple(t.value for t in StreamTrigger)
"""The ``--trigger`` values of the command lines (``cdc-lakehouse silver``, ``jobs/silver_job.py``)."""
