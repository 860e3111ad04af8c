"""Silver: YAML-declared tables built from bronze change events by PySpark (see docs/silver.md).

The public surface: the declarations (`SilverTable`, `SilverOptions`), the apply function both
drivers share (`apply_increment` with its `ApplyContext`/`ApplyResult`), and the Structured
Streaming driver (`silver.streaming.start_stream`). The incremental runner lives in
``pipelines.silver_runner``. Importing this package starts no Spark session, and imports no
pyspark either: the declarations are pyspark-free (the pipeline YAML loads in a capture-only
install), and the Spark-side names are loaded on first access.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from silver.declarations import SilverOptions, SilverTable

if TYPE_CHECKING:
    from silver.context import ApplyContext, ApplyResult
    from silver.increment import apply_increment

__all__ = ["ApplyContext", "ApplyResult", "SilverOptions", "SilverTable", "apply_increment"]

_SPARK_SIDE = {"ApplyContext": "silver.context", "ApplyResult": "silver.context", "apply_increment": "silver.increment"}


def __getattr__(name: str) -> Any:
    module = _SPARK_SIDE.get(name)
    if module is None:
        raise AttributeError(f"module 'silver' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
