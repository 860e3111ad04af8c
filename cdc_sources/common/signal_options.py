"""The signal options (``signal.data.collection``, ``signal.enabled.channels``, ``signal.file``) as a typed value."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from cdc_sources.common.signals import CollectionName, parse_collection
from cdc_sources.spi import ConfigProblem

__all__ = ["WATERMARKING_DOC", "SignalChannel", "SignalSettings", "WatermarkStrategy", "signal_problems",
           "signal_settings"]


class SignalChannel(StrEnum):
    """Where signals come from. Debezium's ``kafka`` and ``jmx`` channels have no equivalent here."""

    SOURCE = "source"
    FILE = "file"


WATERMARKING_DOC = ("insert_delete: each incremental snapshot chunk's open watermark row is deleted at its close "
                    "instead of a close row inserted; no watermark row stays in the signal table")
"""What ``incremental.snapshot.watermarking.strategy`` does (the options reference's note)."""


class WatermarkStrategy(StrEnum):
    """``incremental.snapshot.watermarking.strategy``: how a chunk's window is closed in the signal table.

    ``insert_insert`` inserts a close row after the open row; ``insert_delete`` deletes the open
    row instead (the signal table keeps no watermark rows), and the stream reads that delete as
    the window's close.
    """

    INSERT_INSERT = "insert_insert"
    INSERT_DELETE = "insert_delete"


@dataclass(frozen=True)
class SignalSettings:
    """Attributes:
        table: the signal table (``signal.data.collection``), or None.
        channels: the enabled channels.
        file: the file channel's path.
        poll_interval_s: how often the file channel is read.
        watermarking: how incremental snapshots mark a chunk's window in the signal table.
    """

    table: CollectionName | None
    channels: frozenset[SignalChannel]
    file: str
    poll_interval_s: float
    watermarking: WatermarkStrategy = WatermarkStrategy.INSERT_INSERT

    @property
    def source_enabled(self) -> bool:
        """Whether signals (and incremental-snapshot watermarks) go through the signal table."""
        return self.table is not None and SignalChannel.SOURCE in self.channels

    @property
    def file_enabled(self) -> bool:
        return SignalChannel.FILE in self.channels


def _channels(raw: Mapping[str, Any]) -> list[str]:
    text = raw.get("signal.enabled.channels")
    items = list(text) if isinstance(text, list | tuple) else str(text if text is not None else "source").split(",")
    return [str(c).strip().lower() for c in items if str(c).strip()]


def _strategy(raw: Mapping[str, Any]) -> str:
    return str(raw.get("incremental.snapshot.watermarking.strategy") or "insert_insert").strip().lower()


def signal_problems(raw: Mapping[str, Any], path: str) -> list[ConfigProblem]:
    """Every problem of the signal options given in ``raw`` (``path``: where the options are)."""
    problems = []
    known = {c.value for c in SignalChannel}
    for c in _channels(raw):
        if c not in known:
            problems.append(ConfigProblem(f"{path}.signal.enabled.channels",
                                          f"unsupported channel {c!r}; supported: source, file"))
    skipped = {p.strip().lower() for p in str(raw.get("skipped.operations") or "").split(",")}
    if _strategy(raw) == WatermarkStrategy.INSERT_DELETE and "d" in skipped:
        problems.append(ConfigProblem(f"{path}.incremental.snapshot.watermarking.strategy",
                                      "insert_delete closes each incremental snapshot chunk with a delete in the "
                                      "signal table, and skipped.operations drops deletes: use insert_insert, or "
                                      "take d out of skipped.operations"))
    table = raw.get("signal.data.collection")
    if table is not None:
        try:
            name = parse_collection(str(table).strip())
        except ValueError as exc:
            problems.append(ConfigProblem(f"{path}.signal.data.collection", str(exc)))
        else:
            if len(name.parts) != 2:
                problems.append(ConfigProblem(f"{path}.signal.data.collection",
                                              f"must be <schema>.<table>, got {table!r}"))
    return problems


def signal_settings(values: Mapping[str, Any]) -> SignalSettings:
    """The settings from validated option values (defaults filled in)."""
    table = values.get("signal.data.collection")
    return SignalSettings(
        parse_collection(str(table).strip()) if table else None,
        frozenset(SignalChannel(c) for c in _channels(values)),
        str(values.get("signal.file") or "file-signals.txt"),
        int(values.get("signal.poll.interval.ms") or 5000) / 1000,
        WatermarkStrategy(_strategy(values)),
    )
