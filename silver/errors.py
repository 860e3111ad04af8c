"""Errors raised while building silver tables.

Every error names the silver table (and bronze topic or column where it helps) and says what to
do next. A `SilverTableError` stops one table only; the runner records it and carries on with
the other tables.
"""

from __future__ import annotations

from cdc_sources.spi import CdcError, Fatal


class SilverError(CdcError):
    """Base of every silver-layer error."""


class SilverTableError(SilverError, Fatal):
    """One silver table cannot be applied; its table and progress are left untouched."""


class IncompatibleSchemaChangeError(SilverTableError):
    """The source schema changed in a way the declared ``schema_evolution`` mode does not allow."""

    def __init__(self, table: str, detail: str, *, mode: str) -> None:
        super().__init__(
            f"silver table {table!r}: incompatible schema change ({detail}) under "
            f"schema_evolution: {mode}. The table was left untouched. Rebuild it (drop the silver "
            "table and its progress under the state location) or cast the column with 'casts:'.",
            table=table,
            detail=detail,
            mode=mode,
        )


class KeyResolutionError(SilverTableError):
    """The key columns of a silver table cannot be determined or changed between schemas."""


class SchemaHistoryError(SilverTableError):
    """A bronze row points at a schema that the schema history does not have, or it is unusable."""


class EngineCapabilityError(SilverTableError):
    """The engine cannot do what the declaration asks (e.g. CLUSTER BY on Sail)."""
