"""Where a MariaDB binlog reader resumes for a GTID position (``reset --to 0-1-42``).

A GTID position (the last GTID of each replication domain, as ``@@gtid_binlog_pos`` and the
``gtids`` of a Debezium offset print it) names the transactions already processed. The reader
resumes at the first transaction boundary of the binlog where, for every domain of the position,
the last transaction seen is exactly that domain's GTID. Boundaries are the start of each GTID
event and the end of each file; the state at the start of a file is its ``Gtid_list`` event.
Domains the position does not name do not decide the point: transactions of theirs that follow
it are read again and skipped as duplicates by the bronze writer.

The walk reads ``SHOW BINLOG EVENTS`` rows (pure here: :func:`resume_point`); the caller checks
the point it found with the server's own ``BINLOG_GTID_POS``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from cdc_sources.mysql.gtid import MariaGtid, MariaGtidPosition
from cdc_sources.spi.operations import RewindRefusedError

__all__ = ["BinlogEvent", "BinlogFileEvents", "resume_point"]

_GTID_IN_INFO = re.compile(r"\b(\d+-\d+-\d+)\b")


@dataclass(frozen=True)
class BinlogEvent:
    """One ``SHOW BINLOG EVENTS`` row: start position, event type, end position, info text."""

    pos: int
    type: str
    end_pos: int
    info: str


@dataclass(frozen=True)
class BinlogFileEvents:
    """One binlog file's name, size and events, oldest file first in a sequence."""

    name: str
    size: int
    events: Sequence[BinlogEvent]


def _gtid_list(info: str) -> list[MariaGtid]:
    """The GTIDs of a ``Gtid_list`` event's info, e.g. ``[0-1-7,1-2-3]`` (``[]`` when none)."""
    return [MariaGtid.parse(g) for g in _GTID_IN_INFO.findall(info)]


def _matches(state: dict[int, MariaGtid], wanted: MariaGtidPosition) -> bool:
    return all(state.get(g.domain) == g for g in wanted.gtids)


def resume_point(files: Iterable[BinlogFileEvents], wanted: MariaGtidPosition) -> tuple[str, int]:
    """The ``(file, pos)`` a reader starts at to resume right after ``wanted``.

    Raises:
        RewindRefusedError: the position is empty; older than the oldest binlog file (purged);
            or no boundary of the binlog has it (not written yet, or GTIDs of another server).
    """
    if not wanted.gtids:
        raise RewindRefusedError("the GTID position is empty: give the last GTID of each domain to resume after, "
                                 "like 0-1-42")
    first = True
    state: dict[int, MariaGtid] = {}
    for file in files:
        for event in file.events:
            if event.type == "Gtid_list":
                listed = {g.domain: g for g in _gtid_list(event.info)}
                if first:
                    _refuse_if_purged(file.name, listed, wanted)
                    first = False
                state.update(listed)
            elif event.type == "Gtid":
                if _matches(state, wanted):
                    return file.name, event.pos
                found = _GTID_IN_INFO.search(event.info)
                if found is None:
                    raise RewindRefusedError(f"cannot read the GTID of the event at {file.name}:{event.pos} "
                                             f"({event.info!r})")
                gtid = MariaGtid.parse(found.group(1))
                state[gtid.domain] = gtid
        if _matches(state, wanted):
            return file.name, file.size
    seen = ",".join(str(state[d]) for d in sorted(state)) or "none"
    raise RewindRefusedError(f"the binlog has no point after GTID position {_text(wanted)} (its last GTIDs: "
                             f"{seen}): the position is not written yet, or its GTIDs come from another server; "
                             "@@gtid_binlog_pos shows the current position")


def _refuse_if_purged(name: str, listed: dict[int, MariaGtid], wanted: MariaGtidPosition) -> None:
    for g in wanted.gtids:
        at_start = listed.get(g.domain)
        if at_start is not None and at_start.sequence > g.sequence:
            raise RewindRefusedError(f"GTID {g} is older than the oldest binlog file {name} (which starts after "
                                     f"{at_start}): it was purged; reset the source (without --to) for a new "
                                     "snapshot instead")


def _text(position: MariaGtidPosition) -> str:
    return ",".join(str(g) for g in position.gtids)
