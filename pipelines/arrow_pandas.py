"""Keep pyarrow from importing pandas in a capture process.

pyarrow looks for pandas the first time it converts Python values (``pa.scalar``, ``pa.array``,
``Table.from_pydict``: the offsets row of every bronze commit) and the first time
``pyarrow.dataset`` is imported, to recognise pandas objects. Importing pandas costs a capture
about as much CPU as the rest of a run with nothing to capture (`bench/startup_bench.py`), and
capture never hands pandas objects to pyarrow. `skip_pandas_probe` lets that first look find no
pandas: pyarrow remembers the answer for its implicit checks, while an explicit pandas
conversion (``Table.to_pandas``, ``Table.from_pandas``) still imports pandas as usual.
"""

from __future__ import annotations

import importlib.machinery
import sys
from collections.abc import Sequence
from types import ModuleType

import pyarrow as pa


class _NoPandas:
    """A meta path finder that refuses to import pandas."""

    def find_spec(self, name: str, path: Sequence[str] | None = None,
                  target: ModuleType | None = None) -> importlib.machinery.ModuleSpec | None:
        if name == "pandas":
            raise ImportError("pandas is not needed by capture (pipelines.arrow_pandas)")
        return None


def skip_pandas_probe() -> None:
    """Answer pyarrow's implicit look for pandas with "none" (unless pandas is imported already)."""
    if "pandas" in sys.modules:
        return
    finder = _NoPandas()
    sys.meta_path.insert(0, finder)
    try:
        pa.scalar(0)  # converts a Python value: pyarrow looks for pandas now, and only now
    finally:
        sys.meta_path.remove(finder)
