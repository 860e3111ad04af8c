"""Capture from the fake Oracle database into bronze, in this process or in a child process.

`capture_once` runs the real coordinator and bronze writer with an `OracleConnector` whose
connections are fake ones over a `FakeOracleDatabase` (the connector and everything after it are
the production code). ``python -m tests.support.oracle_capture <fixture.pickle> <root> <commit max
records> [options JSON]`` does the
same in a child process (what the SIGKILL test kills): the fixture is the pickled database state
(`save_database`).
"""

from __future__ import annotations

import json
import pickle
import sys
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from bronze.writer import BronzeWriter
from cdc_sources.oracle import OracleConnector, build_oracle_config
from pipelines.coordinator import CaptureResult, Coordinator
from tests.support.oracle_fake import FakeOracleDatabase

SOURCE = "ora"
OPTIONS: dict[str, Any] = {"topic.prefix": "ora", "table.include.list": "INVENTORY\\..*"}


def connector(db: FakeOracleDatabase, options: Mapping[str, Any] | None = None) -> OracleConnector:
    config, problems = build_oracle_config(name=SOURCE, connection={"host": "fake", "user": "c##dbzuser",
                                                                    "password": "dbz", "database": "ORCLPDB1"},
                                           options={**OPTIONS, **(options or {})}, path="sources[0]")
    assert config is not None, problems
    return OracleConnector(config, connect=db.connect)


def capture_once(root: str, db: FakeOracleDatabase, *, options: Mapping[str, Any] | None = None,
                 commit_max_records: int = 50, stop: threading.Event | None = None) -> CaptureResult:
    """One capture run until idle (the coordinator and writer of ``pipelines.capture``)."""
    writer = BronzeWriter(root, SOURCE, None)
    try:
        stored = writer.recover()
        session = connector(db, options).open(stored.offset if stored else None, writer.read_history())
        try:
            return Coordinator(session, writer, stored, commit_interval_ms=50, commit_max_records=commit_max_records,
                               stop=stop).run(until_idle=True)
        finally:
            session.close()
    finally:
        writer.close()


def save_database(db: FakeOracleDatabase, path: Path, rows_as_of: dict[tuple[str, str, int], Any]) -> None:
    """Pickle the database for a child process (``rows_as_of`` answers precomputed per query)."""
    state = {"tables": db.tables, "contents": db.contents, "current_scn": db.current_scn,
             "mining_query": db.mining_query, "final_scn": db.final_scn, "scn_step": db.scn_step,
             "window_delay_s": db.window_delay_s, "dictionary_changes": db.dictionary_changes,
             "snapshot_fetch_delay_s": db.snapshot_fetch_delay_s, "as_of": rows_as_of}
    path.write_bytes(pickle.dumps(state))


def load_database(path: Path) -> FakeOracleDatabase:
    state = pickle.loads(path.read_bytes())
    as_of = state.pop("as_of")

    def rows_as_of(owner: str, table: str, scn: int) -> list[tuple[Any, ...]]:
        return list(as_of[(owner, table, scn)])

    return FakeOracleDatabase(state["tables"], state["contents"], rows_as_of, state["current_scn"],
                              state["mining_query"], final_scn=state["final_scn"], scn_step=state["scn_step"],
                              window_delay_s=state["window_delay_s"],
                              dictionary_changes=state.get("dictionary_changes", []),
                              snapshot_fetch_delay_s=state.get("snapshot_fetch_delay_s", 0.0))


if __name__ == "__main__":
    extra = json.loads(sys.argv[4]) if len(sys.argv) > 4 else None  # more connector options, as JSON
    result = capture_once(sys.argv[2], load_database(Path(sys.argv[1])), commit_max_records=int(sys.argv[3]),
                          options=extra)
    print(f"snapshot={result.snapshot_rows} streamed={result.streamed_records}", flush=True)
