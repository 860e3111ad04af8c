"""The pipeline YAML's ``maintenance:`` key: how ``cdc-lakehouse maintain`` compacts and vacuums."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["DEFAULT_QUALITY_RETENTION_DAYS", "DELTA_DEFAULT_RETENTION_HOURS",
           "MaintenanceOptions"]

DELTA_DEFAULT_RETENTION_HOURS = 168
"""Delta's default ``delta.deletedFileRetentionDuration`` (7 days)."""

DEFAULT_QUALITY_RETENTION_DAYS = 30.0
"""How long data-quality results are kept by default (``status`` shows only the newest run)."""


class MaintenanceOptions(BaseModel):
    """Options of ``cdc-lakehouse maintain`` and of the automatic compaction (YAML ``maintenance:``).

    Attributes:
        target_file_size: compaction's target data file size in bytes (None: the table's
            ``delta.targetFileSize``, else delta-rs's 100 MB).
        vacuum_retention_hours: removed files younger than this are kept. It is only a floor:
            files a silver table or stream may still read are kept whatever its value. Below
            Delta's 168 hours (7 days) only when set here.
        bronze_retention_days: delete bronze rows ingested longer ago than this, once every silver
            table reading the topic has applied them (None: keep bronze rows for ever).
        quality_retention_days: delete data-quality results (``<state>/quality``, one row per
            expectation per checked increment) recorded longer ago than this (None: keep them).
        silver: also compact and vacuum the silver tables (path-addressed ones) and the
            data-quality results table.
        checkpoint_root: where the silver streams' checkpoints are, as given to
            ``silver --stream --checkpoints`` (default ``<root>/silver/_checkpoints``).
        auto_compact_min_files: ``run`` and a looping ``silver`` compact a bronze topic or silver
            table between passes once it holds this many small data files (smaller than half the
            target size); None (the default): only ``maintain`` compacts.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    target_file_size: int | None = Field(None, ge=1024 * 1024)
    vacuum_retention_hours: int = Field(DELTA_DEFAULT_RETENTION_HOURS, ge=0)
    bronze_retention_days: float | None = Field(None, gt=0)
    quality_retention_days: float | None = Field(DEFAULT_QUALITY_RETENTION_DAYS, gt=0)
    silver: bool = True
    checkpoint_root: str | None = None
    auto_compact_min_files: int | None = Field(None, ge=2)
