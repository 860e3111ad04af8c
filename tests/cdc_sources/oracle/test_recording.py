"""A capture recorded through `RecordingConnection` (over the fake database) replays through
`ReplayConnection` to the same records, and a replay refuses what was not recorded."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from cdc_sources.oracle import OracleConnector
from cdc_sources.oracle.mining_query import MiningQuerySettings, mining_query
from cdc_sources.oracle.recording import RecordingConnection, ReplayConnection, ReplayError
from cdc_sources.spi import ChangeRecord
from tests.support.oracle_capture import connector
from tests.support.oracle_fake import FakeColumn, FakeOracleDatabase, FakeTable, load_contents

ITEMS = FakeTable("APP", "ITEMS", (FakeColumn("ID", "NUMBER", 22, 10, 0, nullable=False),
                                  FakeColumn("NAME", "VARCHAR2", 50)), ("ID",))
OPTIONS = {"table.include.list": "APP\\.ITEMS", "skipped.operations": "none"}


def _records(conn: OracleConnector, start: str = "99") -> list[tuple[Any, ...]]:
    session = conn.open({"scn": start})
    try:
        out = []
        for item in session.stream(until_idle=True):
            for r in item if isinstance(item, list) else [item]:
                if isinstance(r, ChangeRecord):
                    value = None if r.value is None else {k: v for k, v in orjson.loads(r.value).items()
                                                          if not k.startswith("ts_")}
                    out.append((r.topic, r.key, r.op, r.order_key, r.position, value))
        return out
    finally:
        session.close()


def test_recorded_capture_replays_to_the_same_records(tmp_path: Path) -> None:
    rows = load_contents(Path(__file__).parent / "fixtures" / "logminer_edge_cases.jsonl")
    db = FakeOracleDatabase({("APP", "ITEMS"): ITEMS}, rows, lambda o, t, s: [], 121,
                            mining_query(MiningQuerySettings()))
    recording = tmp_path / "rec.jsonl"
    live = connector(db, OPTIONS)
    recorded = _records(OracleConnector(live.config, connect=lambda: RecordingConnection(db.connect(), recording)))
    assert len(recorded) == 10
    replayed = _records(OracleConnector(live.config, connect=lambda: ReplayConnection(recording)))
    assert replayed == recorded
    assert "dbz" not in recording.read_text()  # the connection's password is not recorded

    # a replay refuses what the recording does not hold (logs from another SCN), naming the statement
    with pytest.raises(ReplayError, match=r"not in the recording .*SELECT MIN\(F.MEMBER\) AS FILE_NAME"):
        _records(OracleConnector(live.config, connect=lambda: ReplayConnection(recording)), start="100")
