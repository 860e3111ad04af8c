"""Silver: YAML-declared tables built from bronze change events by PySpark (see docs/silver.md).

The public surface: the declarations (`SilverTable`, `SilverOptions`), the apply function both
drivers share (`apply_increment` with its `ApplyContext`/`ApplyResult`), and the Structured
Streaming driver (`silver.streaming.start_stream`). The incremental runner lives in
``pipelines.silver_runner``. Importing this package starts no Spark session.
"""

from silver.context import ApplyContext, ApplyResult
from silver.declarations import SilverOptions, SilverTable
from silver.increment import apply_increment

__all__ = ["ApplyContext", "ApplyResult", "SilverOptions", "SilverTable", "apply_increment"]
