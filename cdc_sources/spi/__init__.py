"""The connector kernel: contracts, value types and errors shared by every connector.

This package imports nothing else of ours and no database driver.
"""

from cdc_sources.spi.errors import (
    CdcError,
    ConfigError,
    ConfigProblem,
    EngineError,
    Fatal,
    MissingDependencyError,
    Retriable,
    SourceError,
)
from cdc_sources.spi.events import (
    BINLOG_FILE_FACTOR,
    HEADER_NEW_KEY,
    HEADER_OLD_KEY,
    HISTORY_TOPIC,
    POSITION_INCREMENTAL_ID,
    POSITION_INCREMENTAL_LAST,
    POSITION_INCREMENTAL_START,
    ChangeBlock,
    ChangeRecord,
    Checkpoint,
    OffsetWithExtras,
    Op,
    SchemaVersion,
    SnapshotProgress,
    SourceOffset,
    StreamItem,
    commit_mark,
    connector_offset,
)
from cdc_sources.spi.source import CaptureSession, Connector, HistoryEntry, SnapshotPlan

__all__ = [
    "BINLOG_FILE_FACTOR",
    "HEADER_NEW_KEY",
    "HEADER_OLD_KEY",
    "HISTORY_TOPIC",
    "POSITION_INCREMENTAL_ID",
    "POSITION_INCREMENTAL_LAST",
    "POSITION_INCREMENTAL_START",
    "CaptureSession",
    "CdcError",
    "ChangeBlock",
    "ChangeRecord",
    "Checkpoint",
    "ConfigError",
    "ConfigProblem",
    "Connector",
    "EngineError",
    "Fatal",
    "HistoryEntry",
    "MissingDependencyError",
    "OffsetWithExtras",
    "Op",
    "Retriable",
    "SchemaVersion",
    "SnapshotPlan",
    "SnapshotProgress",
    "SourceError",
    "SourceOffset",
    "StreamItem",
    "commit_mark",
    "connector_offset",
]
