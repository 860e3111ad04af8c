"""Operations on a MySQL/MariaDB source: rewind streaming to a binlog position; decommission.

A binlog reader keeps nothing on the server (no slot), so decommissioning drops nothing there.
A rewind is to ``file:pos`` (as ``SHOW BINARY LOGS``/``SHOW BINLOG EVENTS`` print them) or, on
MariaDB, to a GTID position (``0-1-42``, several domains comma-separated: resume right after
those transactions; `cdc_sources.mysql.gtid_rewind` finds the binlog point). It is refused when
the server no longer has that file or transaction (purged) or the point lies past the binlog's end.
The rewound offset's GTIDs: MariaDB's are computed for the position (``BINLOG_GTID_POS``);
MySQL cannot compute a GTID set for a past position, so the stored offset's set is kept (it is
only used to check availability at the next start, which then looks at the binlog file).
Rewinding a MySQL server to a GTID set is not supported (no MySQL server to prove it on).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from cdc_sources.mysql import connection
from cdc_sources.mysql.checks import check_flavor
from cdc_sources.mysql.config import MySqlSourceConfig
from cdc_sources.mysql.gtid import GtidError, MariaGtidPosition
from cdc_sources.mysql.gtid_rewind import BinlogEvent, BinlogFileEvents, resume_point
from cdc_sources.mysql.offset import MySqlOffset, binlog_file_number
from cdc_sources.spi.operations import PositionFormatError, Rewind, RewindRefusedError

_FILE_POS = re.compile(r"(?P<file>[^:\s]+\.\d+):(?P<pos>\d+)")
_MYSQL_GTID_SET = re.compile(r"[0-9a-fA-F-]{36}:")
_MARIA_GTIDS = re.compile(r"\d+-\d+-\d+(\s*,\s*\d+-\d+-\d+)*")


def parse_position(text: str) -> tuple[str, int] | MariaGtidPosition:
    """A binlog position ``file:pos`` (``binlog.000003:4``) or a MariaDB GTID position (``0-1-42``).

    Raises:
        PositionFormatError: it is neither (a MySQL GTID set is named as not supported).
    """
    text = text.strip()
    match = _FILE_POS.fullmatch(text)
    if match is not None:
        return match["file"], int(match["pos"])
    if _MARIA_GTIDS.fullmatch(text):
        try:
            return MariaGtidPosition.parse(text)
        except GtidError as exc:
            raise PositionFormatError(f"invalid GTID position {text!r}: {exc}") from None
    if _MYSQL_GTID_SET.match(text):
        raise PositionFormatError(f"position {text!r} looks like a MySQL GTID set: rewinding a MySQL server to a "
                                  "GTID set is not supported; give the binlog file and position of the first "
                                  "transaction to read again (SHOW BINLOG EVENTS or mysqlbinlog show them), like "
                                  "binlog.000003:4")
    raise PositionFormatError(f"invalid binlog position {text!r}: expected FILE:POS, like binlog.000003:4, or on "
                              "MariaDB a GTID position, like 0-1-42")


def rewind(config: MySqlSourceConfig, position: str, stored: Mapping[str, Any] | None) -> Rewind:
    """Check the server still has ``position`` and return the offset that resumes there."""
    parsed = parse_position(position)
    conn = connection.connect(config.connection)
    try:
        server = connection.server_info(conn)
        check_flavor(config, server)
        files = {f.name: f.size for f in connection.binary_logs(conn)}
        if isinstance(parsed, MariaGtidPosition):
            if server.flavor != "mariadb":
                raise PositionFormatError(f"position {position.strip()!r} is a MariaDB GTID position, but the server "
                                          "is MySQL: give FILE:POS, like binlog.000003:4")
            file, pos = resume_point(_file_events(conn, files), parsed)
            described = f"binlog position {file}:{pos} (right after GTID position {position.strip()})"
        else:
            file, pos = parsed
            described = f"binlog position {file}:{pos}"
        if file not in files:
            names = sorted(files, key=binlog_file_number)
            listed = f"{names[0]} to {names[-1]}" if names else "none"
            raise RewindRefusedError(f"binlog file {file} is no longer on the server (it has {listed}): it was "
                                     "purged, or the name is wrong; reset the source (without --to) for a new "
                                     "snapshot instead")
        if pos < 4 or pos > files[file]:
            raise RewindRefusedError(f"position {pos} is outside binlog file {file} (4 to {files[file]})")
        if server.flavor == "mariadb":
            gtids: str | None = connection.gtid_position_at(conn.cursor(), server, file, pos) or None
            if isinstance(parsed, MariaGtidPosition):
                _check_server_agrees(parsed, gtids, file, pos)
        else:
            gtids = MySqlOffset.from_dict(stored).gtids if stored else None
    finally:
        conn.close()
    offset = MySqlOffset(file, pos, gtids).to_dict()
    return Rewind(offset, described)


def _file_events(conn: Any, files: Mapping[str, int]) -> list[BinlogFileEvents]:
    """Every binlog file's events, oldest first (``SHOW BINLOG EVENTS IN``: an operations command
    may read the whole binlog once)."""
    out = []
    for name in sorted(files, key=binlog_file_number):
        rows = connection.query_rows(conn, "SHOW BINLOG EVENTS IN %s", (name,))
        events = [BinlogEvent(int(r[1]), connection.as_text(r[2]), int(r[4]), connection.as_text(r[5] or ""))
                  for r in rows]
        out.append(BinlogFileEvents(name, files[name], events))
    return out


def _check_server_agrees(wanted: MariaGtidPosition, at_point: str | None, file: str, pos: int) -> None:
    """The server's own ``BINLOG_GTID_POS`` at the point must name the wanted GTIDs."""
    server_says = MariaGtidPosition.parse(at_point)
    if any(server_says.for_domain(g.domain) != g for g in wanted.gtids):
        raise RewindRefusedError(f"the server places {file}:{pos} at GTID position {at_point or 'none'}, not "
                                 f"{','.join(str(g) for g in wanted.gtids)}: give FILE:POS instead")


def decommission(config: MySqlSourceConfig) -> list[str]:
    """Nothing to drop: a binlog reader keeps no state on the server."""
    return [f"nothing to drop on the {config.flavor} server: a binlog reader keeps no state there (the binlog "
            "files are purged by the server's own expiry)"]
