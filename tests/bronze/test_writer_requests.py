"""Requests a small bronze commit makes on S3, counted by the local S3 server (SeaweedFS)."""

from __future__ import annotations

import orjson
from deltalake import DeltaTable

from bronze.schema import offsets_path, topic_path
from bronze.writer import BronzeWriter
from cdc_sources.spi import ChangeRecord, SchemaVersion
from pipelines.local_s3 import LocalS3

TOPIC = "p.public.t"
SCHEMA = SchemaVersion(TOPIC, "s1", '{"type":"struct"}', '{"type":"struct"}', "public.t", ("id",))
ROWS = 100
BATCHES = 10

MAX_REQUESTS_PER_BATCH = 11
"""Requests of a 100-row batch to one table (data file, table commit, offsets commit), on
average over ten batches: 10.2 measured (a data file put in one request, each commit one
conditional put, and the offsets table's checkpoint every ten commits, which reads its log);
20.4 when data files were multipart uploads and commits went through delta-rs, 34 when the
offsets table was loaded by path at every commit and delta-rs listed each log after every commit
for expired files."""


def _batch(first: int) -> list[ChangeRecord]:
    return [ChangeRecord(TOPIC, orjson.dumps({"id": n}).decode(), orjson.dumps({"after": {"id": n}}).decode(), "c",
                         orjson.dumps({"lsn": n}).decode(), (n, 0, 0), "s1") for n in range(first, first + ROWS)]


def test_small_batch_requests_stay_within_budget(s3_server: LocalS3, s3_root: str) -> None:
    options = s3_server.storage_options()
    writer = BronzeWriter(s3_root, "p", options)
    assert writer.recover() is None
    writer.commit(_batch(1), [SCHEMA], {"lsn": ROWS}, snapshot_completed=True)  # creates the tables
    before = s3_server.request_counts()
    for i in range(1, BATCHES + 1):
        writer.commit(_batch(i * ROWS + 1), [SCHEMA], {"lsn": (i + 1) * ROWS}, snapshot_completed=True)
    after = s3_server.request_counts()
    writer.close()
    by_type = {kind: n - before.get(kind, 0) for kind, n in after.items() if n - before.get(kind, 0)}
    per_batch = sum(by_type.values()) / BATCHES
    assert per_batch <= MAX_REQUESTS_PER_BATCH, f"{per_batch:g} requests a batch: {by_type}"
    assert "POST" not in by_type, by_type  # no multipart upload for a small data file
    # every batch landed, each once, with its offset
    rows = DeltaTable(topic_path(s3_root, TOPIC), storage_options=options).to_pyarrow_table(columns=["seq"])
    assert sorted(rows.column("seq").to_pylist()) == list(range(1, (BATCHES + 1) * ROWS + 1))
    offsets = DeltaTable(offsets_path(s3_root, "p"), storage_options=options).to_pyarrow_table(columns=["batch"])
    assert sorted(offsets.column("batch").to_pylist()) == list(range(1, BATCHES + 2))


def test_checkpoints_and_expired_log_cleanup_still_happen(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """The writer turns off delta-rs's log cleanup after every commit and cleans at checkpoints."""
    root = str(tmp_path)
    writer = BronzeWriter(root, "p")
    writer.recover()
    writer.commit(_batch(1), [SCHEMA], {"lsn": ROWS}, snapshot_completed=True)
    writer.commit(_batch(ROWS + 1), [SCHEMA], {"lsn": 2 * ROWS}, snapshot_completed=True)  # offsets kept open
    properties = {"delta.checkpointInterval": "5", "delta.logRetentionDuration": "interval 0 seconds"}
    for path in (topic_path(root, TOPIC), offsets_path(root, "p")):
        DeltaTable(path).alter.set_table_properties(properties)
    for i in range(2, 12):
        writer.commit(_batch(i * ROWS + 1), [SCHEMA], {"lsn": (i + 1) * ROWS}, snapshot_completed=True)
    writer.close()
    for path in (topic_path(root, TOPIC), offsets_path(root, "p")):
        log = tmp_path.joinpath(path[len(root) + 1:], "_delta_log")
        versions = sorted(int(f.name.split(".")[0]) for f in log.glob("*.json"))
        checkpoints = sorted(int(f.name.split(".")[0]) for f in log.glob("*.checkpoint.parquet"))
        assert checkpoints, path
        # expired commit files before the newest checkpoint are gone
        assert versions[0] >= checkpoints[-1], (path, versions, checkpoints)
