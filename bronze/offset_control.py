"""Operations on a source's stored offsets: reset, rewind, decommission.

Each is one commit to ``_cdc/<source>/offsets`` with the next batch number and the operation
in its commit metadata (``cdc.control``), so the history of what was done stays in the table
and batch numbers keep growing (every bronze table's commits are ordered by them):

* **reset**: no offset; `BronzeWriter.recover` returns None, so the next capture plans from
  scratch per ``snapshot.mode``;
* **rewind**: a new offset in the connector's format (with ``snapshot_completed``), where the
  next capture resumes streaming;
* **decommission**: the last offset, kept for ``status``; capture refuses the source until a
  reset.

A row of the offsets table written by an operation has ``records`` = 0 and no ``topics``.
"""

from __future__ import annotations

import datetime as dt
import enum
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import orjson
import pyarrow as pa
from deltalake import CommitProperties, DeltaTable, Transaction, write_deltalake
from deltalake.exceptions import TableNotFoundError

from bronze.schema import (
    META_BATCH,
    META_CONTROL,
    META_OFFSET,
    META_SOURCE,
    OFFSETS_CONFIGURATION,
    OFFSETS_SCHEMA,
    offsets_path,
)


class Control(enum.StrEnum):
    """An operation recorded in the offsets table."""

    RESET = "reset"
    REWIND = "rewind"
    DECOMMISSION = "decommission"


@dataclass(frozen=True)
class ControlState:
    """The newest commit of a source's offsets table.

    Attributes:
        batch: its batch number (0: the table does not exist).
        control: the operation that wrote it, None for a capture commit.
        at: when it was committed (ISO-8601), "" if unknown.
    """

    batch: int
    control: Control | None
    at: str = ""


def read_control(root: str, source: str, storage_options: Mapping[str, str] | None = None) -> ControlState:
    """What the newest commit of the source's offsets table is."""
    try:
        table = DeltaTable(offsets_path(root, source), storage_options=dict(storage_options or {}) or None)
    except TableNotFoundError:
        return ControlState(0, None)
    for commit in table.history(10):
        if META_BATCH in commit:
            control = commit.get(META_CONTROL)
            stamp = commit.get("timestamp")
            at = (dt.datetime.fromtimestamp(int(stamp) / 1000, dt.UTC).isoformat(timespec="seconds")
                  if stamp is not None else "")
            return ControlState(int(commit[META_BATCH]), Control(control) if control else None, at)
    return ControlState(0, None)


def write_control(root: str, source: str, control: Control, *, offset: Mapping[str, Any] | None,
                  snapshot_completed: bool, storage_options: Mapping[str, str] | None = None) -> int:
    """Commit an operation to the source's offsets table; returns its batch number.

    ``offset``: the offset to resume from (rewind), the one kept (decommission) or None (reset).
    """
    batch = read_control(root, source, storage_options).batch + 1
    text = "null" if offset is None else orjson.dumps(offset, option=orjson.OPT_SORT_KEYS).decode()
    now = dt.datetime.now(dt.UTC)
    row = pa.Table.from_pydict(
        {"batch": [batch], "offset": [text], "snapshot_completed": [snapshot_completed], "topics": [[]],
         "records": [0], "committed_at": [now]},
        schema=OFFSETS_SCHEMA,
    )
    metadata = {META_SOURCE: source, META_BATCH: str(batch), META_CONTROL: control.value,
                "cdc.snapshot_completed": str(snapshot_completed).lower()}
    if offset is not None:
        metadata[META_OFFSET] = text
    write_deltalake(offsets_path(root, source), row, mode="append", configuration=OFFSETS_CONFIGURATION,
                    commit_properties=CommitProperties(custom_metadata=metadata,
                                                       app_transactions=[Transaction(app_id=source, version=batch)]),
                    storage_options=dict(storage_options or {}) or None)
    return batch
