"""Debezium signals as typed values: a pure parser of the signal JSON every channel carries.

A signal is a row ``(id, type, data)``: inserted into the signal table (``source`` channel),
appended as a JSON line ``{"id": ..., "type": ..., "data": {...}}`` to ``signal.file``
(``file`` channel), or written by ``cdc-lakehouse signal``. ``data`` is a JSON object (or
its text). The kinds and their data follow Debezium:

* ``execute-snapshot``: ``data-collections`` (required; an empty list does nothing),
  ``type`` (``incremental``, the default, or ``blocking``; any case),
  ``additional-conditions`` (``[{"data-collection": ..., "filter": ...}]``; for an incremental
  snapshot the filter is a WHERE condition), ``surrogate-key`` (a column chunking instead of
  the primary key);
* ``stop-snapshot``: ``type`` is required (Debezium ignores a stop without it), and
  ``data-collections`` optional (none: stop the whole snapshot);
* ``pause-snapshot``, ``resume-snapshot``: no data;
* ``log``: ``{"message": ...}``;
* ``snapshot-window-open``/``snapshot-window-close``: the watermarks an incremental snapshot
  writes to the signal table itself, around each chunk.

Data-collection names are ``schema.table`` (PostgreSQL) or ``database.table`` (MySQL), each
part optionally in double quotes, which a part containing a dot, a space or another
non-alphanumeric character needs: ``public."My.Table"``. An unquoted name is a regular
expression matched against the whole ``schema.table``, as in Debezium.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

import orjson

__all__ = [
    "AdditionalCondition",
    "CollectionName",
    "ExecuteSnapshot",
    "LogMessage",
    "PauseSnapshot",
    "ResumeSnapshot",
    "Signal",
    "SignalAction",
    "SignalError",
    "SignalKind",
    "SnapshotKind",
    "StopSnapshot",
    "Watermark",
    "matching",
    "parse_collection",
    "parse_signal",
    "parse_signal_line",
    "signal_data",
    "signal_line",
]


class SignalError(ValueError):
    """A signal that cannot be understood; the message names the signal and what is wrong."""


class SignalKind(StrEnum):
    """The ``type`` column of a signal."""

    EXECUTE_SNAPSHOT = "execute-snapshot"
    STOP_SNAPSHOT = "stop-snapshot"
    PAUSE_SNAPSHOT = "pause-snapshot"
    RESUME_SNAPSHOT = "resume-snapshot"
    LOG = "log"
    WINDOW_OPEN = "snapshot-window-open"
    WINDOW_CLOSE = "snapshot-window-close"


class SnapshotKind(StrEnum):
    """``data.type`` of ``execute-snapshot`` and ``stop-snapshot``."""

    INCREMENTAL = "incremental"
    BLOCKING = "blocking"


@dataclass(frozen=True)
class CollectionName:
    """One entry of ``data-collections``.

    Attributes:
        text: the entry as written.
        parts: its dot-separated parts with quotes removed (``("public", "My.Table")``).
        quoted: whether any part was quoted (then it is a name, not a regular expression).
    """

    text: str
    parts: tuple[str, ...]
    quoted: bool

    def matches(self, schema: str, table: str, qualifier: str | None = None) -> bool:
        """Whether the entry names the table ``schema.table`` (``qualifier.schema.table`` when
        names start with one: SQL Server's database)."""
        full = (schema, table) if qualifier is None else (qualifier, schema, table)
        if self.parts == full:
            return True
        if self.quoted:
            return False
        try:
            return re.fullmatch(self.text, ".".join(full)) is not None
        except re.error:
            return False

    @property
    def identifier(self) -> str:
        """The name with each part quoted when needed (the form the CLI writes back)."""
        return ".".join(p if re.fullmatch(r"[A-Za-z0-9_]+", p) else '"' + p.replace('"', '""') + '"'
                        for p in self.parts)


@dataclass(frozen=True)
class AdditionalCondition:
    """``additional-conditions[i]``: a filter for one data collection."""

    collection: CollectionName
    filter: str


@dataclass(frozen=True)
class ExecuteSnapshot:
    """``execute-snapshot``."""

    collections: tuple[CollectionName, ...]
    kind: SnapshotKind = SnapshotKind.INCREMENTAL
    conditions: tuple[AdditionalCondition, ...] = ()
    surrogate_key: str | None = None

    def condition_for(self, schema: str, table: str, qualifier: str | None = None) -> str | None:
        """The filter of the first additional condition naming the table, if any (``qualifier``:
        as for `CollectionName.matches`)."""
        for c in self.conditions:
            if c.collection.matches(schema, table, qualifier):
                return c.filter
        return None


@dataclass(frozen=True)
class StopSnapshot:
    """``stop-snapshot``: ``collections`` empty means every table of the running snapshot."""

    kind: SnapshotKind
    collections: tuple[CollectionName, ...] = ()


@dataclass(frozen=True)
class PauseSnapshot:
    """``pause-snapshot``."""


@dataclass(frozen=True)
class ResumeSnapshot:
    """``resume-snapshot``."""


@dataclass(frozen=True)
class LogMessage:
    """``log``: a message to write to the connector's log."""

    message: str


@dataclass(frozen=True)
class Watermark:
    """``snapshot-window-open`` (``opens``) or ``snapshot-window-close`` of chunk ``chunk_id``."""

    opens: bool
    chunk_id: str


SignalAction = ExecuteSnapshot | StopSnapshot | PauseSnapshot | ResumeSnapshot | LogMessage | Watermark


@dataclass(frozen=True)
class Signal:
    """A signal: its ``id`` (for logs and correlation) and what it asks for."""

    id: str
    action: SignalAction

    @property
    def kind(self) -> SignalKind:
        return _KIND_OF[type(self.action)] if not isinstance(self.action, Watermark) else (
            SignalKind.WINDOW_OPEN if self.action.opens else SignalKind.WINDOW_CLOSE)


_KIND_OF: dict[type, SignalKind] = {
    ExecuteSnapshot: SignalKind.EXECUTE_SNAPSHOT, StopSnapshot: SignalKind.STOP_SNAPSHOT,
    PauseSnapshot: SignalKind.PAUSE_SNAPSHOT, ResumeSnapshot: SignalKind.RESUME_SNAPSHOT, LogMessage: SignalKind.LOG,
}


def parse_collection(text: str) -> CollectionName:
    """Split a data-collection name into its parts, honouring double quotes (``""`` inside quotes is a quote)."""
    parts: list[str] = []
    current: list[str] = []
    quoted = in_quotes = False
    i = 0
    while i < len(text):
        ch = text[i]
        if in_quotes:
            if ch == '"' and text[i + 1:i + 2] == '"':
                current.append('"')
                i += 1
            elif ch == '"':
                in_quotes = False
            else:
                current.append(ch)
        elif ch == '"':
            in_quotes = quoted = True
        elif ch == ".":
            parts.append("".join(current))
            current = []
        else:
            current.append(ch)
        i += 1
    if in_quotes:
        raise ValueError(f"unbalanced double quote in data collection {text!r}")
    parts.append("".join(current))
    if not quoted and len(parts) > 2:  # a regular expression may hold dots of its own: keep it whole
        return CollectionName(text, tuple(text.split(".", 1)), False)
    if any(not p for p in parts):
        raise ValueError(f"empty name part in data collection {text!r}")
    return CollectionName(text, tuple(parts), quoted)


def parse_signal(signal_id: str, kind: str, data: str | Mapping[str, Any] | None, *, where: str) -> Signal:
    """Parse one signal. ``where`` names its origin for errors (``signal table public.dbz_signal``).

    Raises:
        SignalError: an unknown type, data that is not a JSON object, a missing or malformed field.
    """
    label = f"signal {signal_id!r} ({kind}) from {where}"
    try:
        k = SignalKind(kind.strip().lower())
    except ValueError:
        raise SignalError(f"{label}: unknown signal type {kind!r}; expected one of "
                          f"{', '.join(s.value for s in SignalKind)}") from None
    fields = _data(data, label)
    try:
        return Signal(signal_id, _action(k, signal_id, fields))
    except (ValueError, TypeError) as exc:
        raise SignalError(f"{label}: {exc}") from None


def parse_signal_line(line: str, *, where: str) -> Signal:
    """Parse one line of the ``file`` channel: ``{"id": ..., "type": ..., "data": {...}}``."""
    try:
        obj = orjson.loads(line)
    except orjson.JSONDecodeError as exc:
        raise SignalError(f"{where}: not a JSON object: {exc}") from None
    if not isinstance(obj, dict):
        raise SignalError(f"{where}: a signal line must be a JSON object with id, type and data")
    if not isinstance(obj.get("type"), str):
        raise SignalError(f"{where}: the signal has no \"type\"")
    return parse_signal(str(obj.get("id", "")), obj["type"], obj.get("data"), where=where)


def _data(data: str | Mapping[str, Any] | None, label: str) -> Mapping[str, Any]:
    if data is None or (isinstance(data, str) and not data.strip()):
        return {}
    if isinstance(data, str):
        try:
            data = orjson.loads(data)
        except orjson.JSONDecodeError as exc:
            raise SignalError(f"{label}: data is not JSON: {exc}") from None
    if not isinstance(data, Mapping):
        raise SignalError(f"{label}: data must be a JSON object, got {type(data).__name__}")
    return data


def _action(k: SignalKind, signal_id: str, d: Mapping[str, Any]) -> SignalAction:
    if k is SignalKind.EXECUTE_SNAPSHOT:
        if "data-collections" not in d:
            raise ValueError("data-collections is required")
        return ExecuteSnapshot(_collections(d["data-collections"]), _snapshot_kind(d.get("type", "incremental")),
                               _conditions(d.get("additional-conditions")), _surrogate(d.get("surrogate-key")))
    if k is SignalKind.STOP_SNAPSHOT:
        if "type" not in d:
            raise ValueError("data.type is required (incremental); Debezium ignores a stop-snapshot without it")
        return StopSnapshot(_snapshot_kind(d["type"]), _collections(d.get("data-collections") or []))
    if k is SignalKind.PAUSE_SNAPSHOT:
        return PauseSnapshot()
    if k is SignalKind.RESUME_SNAPSHOT:
        return ResumeSnapshot()
    if k is SignalKind.LOG:
        message = d.get("message")
        if not isinstance(message, str):
            raise ValueError("data.message (a string) is required")
        return LogMessage(message)
    opens = k is SignalKind.WINDOW_OPEN
    suffix = "-open" if opens else "-close"
    return Watermark(opens, signal_id[: -len(suffix)] if signal_id.endswith(suffix) else signal_id)


def _collections(value: Any) -> tuple[CollectionName, ...]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise TypeError("data-collections must be a list of table names")
    return tuple(parse_collection(v.strip()) for v in value if v.strip())


def _snapshot_kind(value: Any) -> SnapshotKind:
    try:
        return SnapshotKind(str(value).strip().lower())
    except ValueError:
        raise ValueError(f"type must be incremental or blocking, got {value!r}") from None


def _conditions(value: Any) -> tuple[AdditionalCondition, ...]:
    if value is None:
        return ()
    if not isinstance(value, list):
        raise TypeError("additional-conditions must be a list of {data-collection, filter} objects")
    out = []
    for i, c in enumerate(value):
        if not isinstance(c, dict) or not isinstance(c.get("data-collection"), str) or not isinstance(
                c.get("filter"), str):
            raise TypeError(f"additional-conditions[{i}] must be an object with string data-collection and filter")
        out.append(AdditionalCondition(parse_collection(c["data-collection"].strip()), c["filter"]))
    return tuple(out)


def _surrogate(value: Any) -> str | None:
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise TypeError("surrogate-key must be a column name")
    return value


def signal_data(action: SignalAction) -> dict[str, Any] | None:
    """The ``data`` object of a signal, in Debezium's format (None for signals without data)."""
    if isinstance(action, ExecuteSnapshot):
        out: dict[str, Any] = {"data-collections": [c.text for c in action.collections], "type": action.kind.value}
        if action.conditions:
            out["additional-conditions"] = [{"data-collection": c.collection.text, "filter": c.filter}
                                            for c in action.conditions]
        if action.surrogate_key:
            out["surrogate-key"] = action.surrogate_key
        return out
    if isinstance(action, StopSnapshot):
        stop: dict[str, Any] = {"type": action.kind.value}
        if action.collections:
            stop["data-collections"] = [c.text for c in action.collections]
        return stop
    if isinstance(action, LogMessage):
        return {"message": action.message}
    return None


def signal_line(signal: Signal) -> str:
    """A signal as one line of the ``file`` channel."""
    return orjson.dumps({"id": signal.id, "type": signal.kind.value, "data": signal_data(signal.action)}).decode()


def matching(names: Iterable[CollectionName], tables: Iterable[tuple[str, str]],
             qualifier: str | None = None) -> list[tuple[str, str]]:
    """The tables (in the order given) that some name matches (``qualifier``: as for `CollectionName.matches`)."""
    names = list(names)
    return [t for t in tables if any(n.matches(*t, qualifier) for n in names)]
