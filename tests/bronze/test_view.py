"""The read-only bronze view reads what the writer committed, without a writer."""

from __future__ import annotations

import orjson

from bronze.view import BronzeView, CaptureCommit, TableState
from bronze.writer import BronzeWriter
from cdc_sources.spi import HISTORY_TOPIC, ChangeRecord, SchemaVersion

T = "p.public.t"
SCHEMA = SchemaVersion(T, "s1", '{"type":"struct"}', '{"type":"struct"}', "public.t", ("id",))


def rec(topic: str, n: int) -> ChangeRecord:
    return ChangeRecord(topic, orjson.dumps({"id": n}).decode(), orjson.dumps({"after": {"id": n}}).decode(),
                        "c", orjson.dumps({"lsn": n}).decode(), (100, n, 0), "s1")


def test_the_view_reads_offsets_table_states_and_history(tmp_path):
    root = str(tmp_path)
    view = BronzeView(root, "p")
    assert view.last_offset() == (None, 0)
    assert view.capture_commit() is None
    assert view.table_state(T) == TableState()
    assert view.history() == []
    w = BronzeWriter(root, "p")
    w.recover()
    w.commit([rec(T, 1), rec(HISTORY_TOPIC, 2)], [SCHEMA], {"lsn": 1, "snapshot": True}, snapshot_completed=True)
    w.stage([rec(T, 3)], transaction_end=True)
    w.commit([rec(T, 4)], [], {"lsn": 3}, snapshot_completed=True, transaction_end=False)
    w.close()
    stored, batch = view.last_offset()
    assert batch == 2 and stored is not None
    assert (stored.offset, stored.snapshot_completed, dict(stored.open_from)) == ({"lsn": 3}, True, {T: 3})
    assert view.capture_commit() == CaptureCommit(2, True, {T: 2})
    assert view.table_state(T) == TableState(3, (100, 4, 0), 2)
    assert [orjson.loads(h.value)["after"] for h in view.history()] == [{"id": 2}]
    assert view.schema_ids() == ["s1"]
    assert view.topics() == {T, HISTORY_TOPIC}
    assert view.last_completed_snapshot_batch() == 2
