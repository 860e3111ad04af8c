"""Source positions in the source's own notation, read from a connector's offset map.

Pure functions over the offset maps the connectors store (Debezium's keys): PostgreSQL's
``lsn`` (an integer) is shown as PostgreSQL prints a ``pg_lsn`` (``0/1A4AA58``), MySQL's
``file``/``pos`` as ``file:pos`` with the GTID set. No connector package is imported, so
``status`` runs without the database drivers.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


def format_lsn(lsn: int) -> str:
    """An LSN as PostgreSQL prints it: the high and low 32 bits in upper-case hex."""
    return f"{lsn >> 32:X}/{lsn & 0xFFFFFFFF:X}"


@dataclass(frozen=True)
class SourcePosition:
    """Where a source's capture stands.

    Attributes:
        text: the position as the source writes it (``0/1A4AA58``, ``mysql-bin.000003:1234``,
            SQL Server's commit LSN ``0000002a:000001f0:0003``).
        lsn: PostgreSQL: the LSN, else None.
        binlog_file / binlog_pos: MySQL/MariaDB: the binlog coordinates, else None.
        gtids: MySQL/MariaDB: the GTID set, if the offset has one.
        ts_ms: the source's commit time of that position (Unix ms), if the offset has it.
    """

    text: str
    lsn: int | None = None
    binlog_file: str | None = None
    binlog_pos: int | None = None
    gtids: str | None = None
    ts_ms: int | None = None


def source_position(offset: Mapping[str, Any]) -> SourcePosition | None:
    """The position of an offset map of either connector; None if it has none."""
    lsn = offset.get("lsn")
    if isinstance(lsn, int) and not isinstance(lsn, bool):
        ts_us = offset.get("ts_usec")
        return SourcePosition(format_lsn(lsn), lsn=lsn, ts_ms=int(ts_us) // 1000 if isinstance(ts_us, int) else None)
    file, pos = offset.get("file"), offset.get("pos")
    if isinstance(file, str) and isinstance(pos, int):
        gtids = offset.get("gtids")
        ts_sec = offset.get("ts_sec")
        gtid_text = str(gtids) if gtids else None
        text = f"{file}:{pos}" + (f" gtids {gtid_text}" if gtid_text else "")
        return SourcePosition(text, binlog_file=file, binlog_pos=pos, gtids=gtid_text,
                              ts_ms=int(ts_sec) * 1000 if isinstance(ts_sec, int) else None)
    commit, change = offset.get("commit_lsn"), offset.get("change_lsn")
    if isinstance(commit, str):  # SQL Server: commit LSN, then the change inside it
        if isinstance(change, str) and change != "NULL":
            return SourcePosition(f"{commit} (change {change}, serial {offset.get('event_serial_no')})")
        return SourcePosition(commit)
    partitions = offset.get("partitions")
    if isinstance(partitions, list):  # SQL Server with several databases: each database's position
        texts = []
        for entry in partitions:
            if isinstance(entry, Mapping) and isinstance(entry.get("offset"), Mapping):
                found = source_position(entry["offset"])
                database = entry.get("partition", {}).get("database")
                if found is not None:
                    texts.append(f"{database} {found.text}")
        return SourcePosition("; ".join(texts)) if texts else None
    return None


def offset_time_ms(offset: Mapping[str, Any]) -> int | None:
    """The source commit time an offset map records (Unix ms), or None."""
    found = source_position(offset)
    return found.ts_ms if found else None
