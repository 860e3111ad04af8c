"""What `verify` works with and reports: column plans, read points, differences, reports."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from pipelines.verify.canonical import ColumnKind

__all__ = ["ColumnPlan", "ComparedColumn", "DiffKind", "KeyDiff", "ReadPoint", "SkippedColumn", "SourceColumn",
           "TableReport", "VerifyError"]


class VerifyError(Exception):
    """A table cannot be verified (the message says why); reported, exit code 1 or 2."""

    def __init__(self, message: str, *, config: bool = False) -> None:
        super().__init__(message)
        self.config = config


@dataclass(frozen=True)
class SourceColumn:
    """A source column as the source catalog describes it.

    Attributes:
        name: the column name.
        type_name: the source type (``integer``, ``numeric``, ``varchar``... lower case).
        scale: a numeric column's declared scale (None if it has none).
    """

    name: str
    type_name: str
    scale: int | None = None


@dataclass(frozen=True)
class ComparedColumn:
    """A column compared by its canonical text (`pipelines.verify.canonical`)."""

    source: str
    silver: str
    kind: ColumnKind
    source_type: str


@dataclass(frozen=True)
class SkippedColumn:
    """A source column not compared, and why (masked, cast, no canonical text for its type...)."""

    source: str
    reason: str


@dataclass(frozen=True)
class ColumnPlan:
    """How one silver table is compared with its source table.

    Attributes:
        table: the silver table.
        container: the source schema (PostgreSQL) or database (MySQL).
        source_table: the source table name.
        keys: the key columns (compared first, in order).
        columns: the other compared columns.
        skipped: source columns left out of the comparison.
    """

    table: str
    container: str
    source_table: str
    keys: tuple[ComparedColumn, ...]
    columns: tuple[ComparedColumn, ...]
    skipped: tuple[SkippedColumn, ...] = ()

    @property
    def compared(self) -> tuple[ComparedColumn, ...]:
        """Keys, then the other compared columns: the fields of a row text."""
        return self.keys + self.columns


class ReadPoint(ABC):
    """A consistent read of the source at a known position.

    It answers two questions about the lakehouse: has capture committed everything up to it
    (from the newest offset in ``_cdc/<source>/offsets``), and was a bronze row's transaction
    part of the read (from the row's ``position``)?
    """

    @abstractmethod
    def describe(self) -> str:
        """The position in the source's words (LSN, binlog file:pos)."""

    @abstractmethod
    def capture_reached(self, offset: Mapping[str, Any]) -> bool:
        """True if a committed capture offset is at or past this point."""

    @abstractmethod
    def includes(self, position: Mapping[str, Any]) -> bool:
        """True if the bronze row with this ``position`` was committed before the read.

        Raises:
            VerifyError: the position does not say.
        """


class DiffKind(Enum):
    """How a key differs between source and silver."""

    MISSING = "missing in silver"
    EXTRA = "extra in silver"
    DUPLICATE = "more than one current row in silver"
    DIFFERENT = "different values"
    UNSETTLED = "changed during every read"


@dataclass(frozen=True)
class KeyDiff:
    """One key that differs.

    Attributes:
        key: the key's values, ``column=value`` (source names).
        kind: missing, extra, different, duplicate (or unsettled: silver had moved past every
            read point).
        columns: for ``DIFFERENT``, the differing columns (source names).
    """

    key: str
    kind: DiffKind
    columns: tuple[str, ...] = ()


@dataclass
class TableReport:
    """The outcome of one silver table.

    Attributes:
        table: the silver table.
        source_rows: the source table's rows at the read point.
        silver_rows: silver's current rows when read (silver keeps applying while verify waits);
            silver_ahead of them changed after the read point.
        buckets / buckets_differing: key ranges (hash buckets) compared / that differed.
        read_point: the source position compared at.
        upto_seq: the bronze ``seq`` of the read point in this table.
        diffs: the differing keys.
        compared / skipped: the columns compared and the ones left out (with why).
        error: why the table could not be verified.
        config_error: the error is one of configuration (exit 2).
    """

    table: str
    source_rows: int = 0
    silver_rows: int = 0
    silver_ahead: int = 0
    buckets: int = 0
    buckets_differing: int = 0
    read_point: str = ""
    upto_seq: int | None = None
    rounds: int = 0
    diffs: list[KeyDiff] = field(default_factory=list)
    compared: tuple[str, ...] = ()
    skipped: tuple[SkippedColumn, ...] = ()
    error: str | None = None
    config_error: bool = False

    @property
    def equal(self) -> bool:
        """True if the table was verified and nothing differs."""
        return self.error is None and not self.diffs
