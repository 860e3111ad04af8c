"""The connector kernel: contracts, value types and errors shared by every connector.

This package imports nothing else of ours and no database driver.
"""

from cdc_sources.spi.errors import (
    CdcError,
    ConfigError,
    ConfigProblem,
    Fatal,
    MissingDependencyError,
    Retriable,
    SourceError,
)
from cdc_sources.spi.events import (
    HEADER_NEW_KEY,
    HEADER_OLD_KEY,
    HISTORY_TOPIC,
    ChangeBlock,
    ChangeRecord,
    Checkpoint,
    Op,
    SchemaVersion,
    SnapshotProgress,
    SourceOffset,
    StreamItem,
)
from cdc_sources.spi.source import CaptureSession, Connector, HistoryEntry, SnapshotPlan

__all__ = [
    "HEADER_NEW_KEY",
    "HEADER_OLD_KEY",
    "HISTORY_TOPIC",
    "CaptureSession",
    "CdcError",
    "ChangeBlock",
    "ChangeRecord",
    "Checkpoint",
    "ConfigError",
    "ConfigProblem",
    "Connector",
    "Fatal",
    "HistoryEntry",
    "MissingDependencyError",
    "Op",
    "Retriable",
    "SchemaVersion",
    "SnapshotPlan",
    "SnapshotProgress",
    "SourceError",
    "SourceOffset",
    "StreamItem",
]
