"""Where the silver code does things differently per engine, decided in one place.

The silver layer runs the same DataFrame code on every engine; a few choices depend on what an
engine does well, and are made here from the session (or a frame) alone:

* **Staging** (`silver.staging`): classic Spark keeps an increment's decoded rows in its own
  cache (memory, spilling to local disk); a Spark Connect session (Sail, the default) writes
  them as parquet under the state location and reads them back, which is fast on Sail, whose
  cache does not hold rows across actions.
* **Float re-read** (`silver.decode`): over Spark Connect (Sail), columns holding floating-point
  numbers are re-read from the JSON text (Sail's ``from_json`` can lose a double's last digit);
  classic Spark's ``from_json`` (Jackson) is exact.
* **Table creation** (`silver.target`): classic Delta records every column of a table created
  by a write as nullable, so the first rows create the table in one commit; Sail keeps a
  frame's NOT NULL columns, so the table is created empty with nullable columns first.
* **Streaming** (`silver.streaming`): only classic Spark has Structured Streaming with a Delta
  source and ``foreachBatch``.
"""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import DataFrame, SparkSession

__all__ = ["EngineTraits"]


@dataclass(frozen=True)
class EngineTraits:
    """What one engine session does well.

    Attributes:
        classic: a classic (JVM, in-process) Spark session, not Spark Connect.
    """

    classic: bool

    @staticmethod
    def of(session_or_frame: SparkSession | DataFrame) -> EngineTraits:
        """The traits of the engine behind a session or a DataFrame."""
        return EngineTraits(classic=".connect." not in type(session_or_frame).__module__)

    @property
    def stage_in_cache(self) -> bool:
        """Staged rows stay in the engine's cache (classic Spark), not in parquet files (Spark Connect)."""
        return self.classic

    @property
    def rereads_floats(self) -> bool:
        """Floats are re-read from the JSON text (Spark Connect; classic ``from_json`` is exact)."""
        return not self.classic

    @property
    def writes_nullable(self) -> bool:
        """A table created by a write records every column nullable (classic Delta)."""
        return self.classic

    @property
    def streams(self) -> bool:
        """Structured Streaming with a Delta source and ``foreachBatch`` (classic Spark)."""
        return self.classic
