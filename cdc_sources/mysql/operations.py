"""Operations on a MySQL/MariaDB source: rewind streaming to a binlog position; decommission.

A binlog reader keeps nothing on the server (no slot), so decommissioning drops nothing there.
A rewind is to ``file:pos`` (as ``SHOW BINARY LOGS``/``SHOW BINLOG EVENTS`` print them) and is
refused when the server no longer has that file (purged) or the position lies past its end.
The rewound offset's GTIDs: MariaDB's are computed for the position (``BINLOG_GTID_POS``);
MySQL cannot compute a GTID set for a past position, so the stored offset's set is kept (it is
only used to check availability at the next start, which then looks at the binlog file).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from cdc_sources.mysql import connection
from cdc_sources.mysql.checks import check_flavor
from cdc_sources.mysql.config import MySqlSourceConfig
from cdc_sources.mysql.offset import MySqlOffset, binlog_file_number
from cdc_sources.spi.operations import PositionFormatError, Rewind, RewindRefusedError

_FILE_POS = re.compile(r"(?P<file>[^:\s]+\.\d+):(?P<pos>\d+)")
_GTID_SET = re.compile(r"[0-9a-fA-F-]{36}:|\d+-\d+-\d+")


def parse_position(text: str) -> tuple[str, int]:
    """A binlog position ``file:pos`` (``binlog.000003:4``).

    Raises:
        PositionFormatError: it is not one (a GTID set is named as not supported).
    """
    match = _FILE_POS.fullmatch(text.strip())
    if match is not None:
        return match["file"], int(match["pos"])
    if _GTID_SET.match(text.strip()):
        raise PositionFormatError(f"position {text!r} looks like a GTID set: rewinding to a GTID set is not "
                                  "supported; give the binlog file and position of the first transaction to "
                                  "read again (SHOW BINLOG EVENTS or mysqlbinlog show them), like binlog.000003:4")
    raise PositionFormatError(f"invalid binlog position {text!r}: expected FILE:POS, like binlog.000003:4")


def rewind(config: MySqlSourceConfig, position: str, stored: Mapping[str, Any] | None) -> Rewind:
    """Check the server still has ``position`` and return the offset that resumes there."""
    file, pos = parse_position(position)
    conn = connection.connect(config.connection)
    try:
        server = connection.server_info(conn)
        check_flavor(config, server)
        files = {f.name: f.size for f in connection.binary_logs(conn)}
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
        else:
            gtids = MySqlOffset.from_dict(stored).gtids if stored else None
    finally:
        conn.close()
    offset = MySqlOffset(file, pos, gtids).to_dict()
    return Rewind(offset, f"binlog position {file}:{pos}")


def decommission(config: MySqlSourceConfig) -> list[str]:
    """Nothing to drop: a binlog reader keeps no state on the server."""
    return [f"nothing to drop on the {config.flavor} server: a binlog reader keeps no state there (the binlog "
            "files are purged by the server's own expiry)"]
