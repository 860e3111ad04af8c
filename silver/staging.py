"""Staging: an increment's decoded rows fixed once, so that the counts, the quarantine and the
MERGE (or the first write) read the same rows without decoding the JSON again.

How depends on the engine (`silver.engine_traits`):

* **classic Spark**: the engine's cache (``persist`` at ``MEMORY_AND_DISK``: rows that do not
  fit in memory spill to local disk). The first action over the staged frame (the counts) fills
  it; the apply releases it when it ends, failed or not. A parquet round trip there costs a
  compressed write and a re-read of every row for nothing the cache does not give.
* **Spark Connect (Sail)**: parquet under ``<state>/staging/<table>/<name>``, read back (each
  stage overwrites its folder). Sail's cache does not keep rows across actions.

Both are safe to recompute: an increment is a ``seq`` range of a pinned bronze version (or a
micro-batch), and its decoding is deterministic, so an evicted cache block read again gives
the same rows.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from pyspark import StorageLevel
from pyspark.sql import DataFrame, SparkSession

from silver.engine_traits import EngineTraits

__all__ = ["Staging", "staging"]


class Staging:
    """Stages frames of one apply (see module doc); `release` frees what it holds. Not thread-safe."""

    def __init__(self, spark: SparkSession, location: str) -> None:
        self._spark = spark
        self._location = location.rstrip("/")
        self._in_cache = EngineTraits.of(spark).stage_in_cache
        self._held: list[DataFrame] = []

    def stage(self, df: DataFrame, name: str) -> DataFrame:
        """``df`` fixed once; ``name`` tells stages of one apply apart (the parquet folder)."""
        if self._in_cache:
            staged = df.persist(StorageLevel.MEMORY_AND_DISK)
            self._held.append(staged)
            return staged
        path = f"{self._location}/{name}"
        df.write.mode("overwrite").parquet(path)
        return self._spark.read.schema(df.schema).parquet(path)  # an empty frame writes no file

    def release(self) -> None:
        """Free the cached stages (parquet folders stay: the next apply overwrites them)."""
        held, self._held = self._held, []
        for df in held:
            df.unpersist()


@contextmanager
def staging(spark: SparkSession, location: str) -> Iterator[Staging]:
    """A `Staging` for one apply, released when the block ends."""
    s = Staging(spark, location)
    try:
        yield s
    finally:
        s.release()
