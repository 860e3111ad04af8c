"""The transaction id of MySQL/MariaDB transaction metadata (``provide.transaction.metadata``;
the records themselves: `cdc_sources.common.transactions`).

Debezium's binlog connectors use one id for the whole transaction: the GTID when the server
writes GTIDs (always on MariaDB), else ``file=<binlog file>,pos=<BEGIN position>``.
"""

from __future__ import annotations


def transaction_id(gtid: str | None, file: str, begin_pos: int) -> str:
    """The transaction id Debezium writes."""
    return gtid if gtid else f"file={file},pos={begin_pos}"
