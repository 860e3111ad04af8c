"""The binlog a MySQL/MariaDB capture still needs (`SHOW BINARY LOGS` against its ``file:pos``)."""

from __future__ import annotations

from typing import Any

from cdc_sources.common.retention import Retention
from cdc_sources.mysql.config import MySqlSourceConfig
from cdc_sources.mysql.connection import BinlogFile, binary_logs, connect


def binlog_retention(config: MySqlSourceConfig, offset: dict[str, Any]) -> Retention:
    """The binlog bytes after the stored position, and whether its file is still on the server.

    Raises:
        MySqlError: the server cannot be reached (classified as the connector does).
    """
    conn = connect(config.connection, initial_statements=())
    try:
        files = binary_logs(conn)
    finally:
        conn.close()
    return retention_of(files, str(offset.get("file") or ""), int(offset.get("pos") or 0))


def retention_of(files: list[BinlogFile], file: str, pos: int) -> Retention:
    """Pure part of `binlog_retention`: ``files`` as ``SHOW BINARY LOGS`` lists them, oldest first."""
    server = f"{files[-1].name}:{files[-1].size}" if files else "-"
    names = [f.name for f in files]
    if file not in names:
        oldest = names[0] if names else "none"
        return Retention(None, None, True, False, server,
                         f"binlog {file} was purged (oldest kept: {oldest}): the capture needs a new snapshot")
    i = names.index(file)
    behind = max(files[i].size - pos, 0) + sum(f.size for f in files[i + 1:])
    first_kept = i == 0 and len(files) > 1
    detail = f"binlog {file}:{pos}" + (", the oldest binlog the server keeps" if first_kept else "")
    return Retention(behind, None, False, first_kept, server, detail)
