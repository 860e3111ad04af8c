"""Debezium 3.6.3's Lsn, TxLogPosition, SqlServerOffsetContext and source struct, asked through
SqlServerOffsetProbe.java (see that file for the requests and answers)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tests.cdc_sources.sqlserver.java_probe import run_json


def ask(requests: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    return run_json("SqlServerOffsetProbe", requests)
