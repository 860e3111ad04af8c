"""Incremental snapshots of PostgreSQL tables started by signals, into bronze (real server)."""

from __future__ import annotations

import pytest

from pipelines.capture import run_capture
from tests.support.incremental_pg import incremental_rows, last_offset, pipeline, setup_items, signal, source_rows

pytestmark = [pytest.mark.integration, pytest.mark.postgres]


def test_execute_snapshot_emits_every_row_once_as_incremental_reads(pg_db, tmp_path):
    root = str(tmp_path / "lake")
    setup_items(pg_db, 230)
    cfg = pipeline(root, pg_db, **{"snapshot.mode": "no_data"})
    run_capture(cfg, until_idle=True)
    signal(pg_db, "ad-hoc-1", "execute-snapshot", {"data-collections": ["public.items"], "type": "incremental"})
    run_capture(cfg, until_idle=True)
    rows = incremental_rows(root)
    got = {r["v"]["after"]["id"]: (r["v"]["after"]["name"], r["v"]["after"]["qty"]) for r in rows}
    assert len(rows) == 230 and got == source_rows(pg_db)
    assert all(r["op"] == "r" and r["v"]["before"] is None for r in rows)
    assert "incremental_snapshot_collections" not in last_offset(root)  # finished: no state left
