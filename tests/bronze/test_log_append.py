"""Bronze commits in one conditional put on an object store, and their fall-back to delta-rs."""

from __future__ import annotations

import obstore
import orjson
import pyarrow as pa
import pytest
from deltalake import DeltaTable, TableFeatures, write_deltalake

from bronze.log_append import LogAppender, can_append, commit_file, commit_path, puts_conditionally
from bronze.obstore_client import open_obstore
from bronze.schema import META_BATCH, META_LAST_SEQ, META_SOURCE, topic_path
from bronze.writer import WRITER_VERSION, BronzeWriter
from cdc_sources.spi import ChangeRecord, SchemaVersion
from pipelines.local_s3 import LocalS3

TOPIC = "p.public.t"
SCHEMA = SchemaVersion(TOPIC, "s1", '{"type":"struct"}', '{"type":"struct"}', "public.t", ("id",))
ROWS = 20


def _batch(first: int) -> list[ChangeRecord]:
    return [ChangeRecord(TOPIC, orjson.dumps({"id": n}).decode(), orjson.dumps({"after": {"id": n}}).decode(), "c",
                         orjson.dumps({"lsn": n}).decode(), (n, 0, 0), "s1") for n in range(first, first + ROWS)]


def _commit(writer: BronzeWriter, batch: int) -> None:
    writer.commit(_batch((batch - 1) * ROWS + 1), [SCHEMA], {"lsn": batch * ROWS}, snapshot_completed=True)


def _commit_infos(server: LocalS3, table_uri: str) -> dict[int, dict[str, object]]:
    """Each version's ``commitInfo``, read from the log's files (not through delta-rs)."""
    store = open_obstore(table_uri, server.storage_options())
    infos = {}
    for batch in obstore.list(store, prefix="_delta_log/"):
        for meta in batch:
            name = str(meta["path"]).rsplit("/", 1)[-1]
            if name.endswith(".json") and not name.startswith("_"):
                lines = bytes(obstore.get(store, f"_delta_log/{name}").bytes()).splitlines()
                info = next(orjson.loads(line)["commitInfo"] for line in lines if b'"commitInfo"' in line)
                infos[int(name.split(".")[0])] = info
    return infos


def test_commits_take_one_put_and_fall_back_to_delta_rs_after_a_concurrent_commit(s3_server, s3_root):
    """After its first commit through delta-rs, a writer commits a table with one conditional put;
    a commit by another writer in between (here an OPTIMIZE, as `maintain` runs) makes the next
    put find its version taken: that commit goes through delta-rs, nothing lost or doubled."""
    options = s3_server.storage_options()
    path = topic_path(s3_root, TOPIC)
    writer = BronzeWriter(s3_root, "p", options)
    writer.recover()
    for batch in (1, 2, 3):
        _commit(writer, batch)
    DeltaTable(path, storage_options=options).optimize.compact()
    for batch in (4, 5):
        _commit(writer, batch)
    writer.close()

    infos = _commit_infos(s3_server, path)
    by_batch = {int(str(info[META_BATCH])): (version, info) for version, info in infos.items() if META_BATCH in info}
    assert sorted(by_batch) == [1, 2, 3, 4, 5]  # each batch committed once
    engines = {batch: info["engineInfo"] for batch, (_, info) in by_batch.items()}
    assert engines[3] == WRITER_VERSION and engines[5] == WRITER_VERSION  # one put
    assert engines[1] != WRITER_VERSION and engines[2] != WRITER_VERSION and engines[4] != WRITER_VERSION
    assert by_batch[4][0] == by_batch[3][0] + 2  # the OPTIMIZE took the version in between
    table = DeltaTable(path, storage_options=options)
    assert sorted(table.to_pyarrow_table(columns=["seq"]).column("seq").to_pylist()) == list(range(1, 5 * ROWS + 1))
    assert table.transaction_version("p") == 5
    # the files' statistics are in the log (silver plans by seq ranges), whichever way they were committed
    adds = pa.table(table.get_add_actions(flatten=True))
    ranges = sorted(zip(adds.column("min.seq").to_pylist(), adds.column("max.seq").to_pylist(), strict=True))
    assert ranges[-2:] == [(3 * ROWS + 1, 4 * ROWS), (4 * ROWS + 1, 5 * ROWS)]
    assert adds.column("num_records").to_pylist() and all(n > 0 for n in adds.column("num_records").to_pylist())
    # a new writer resumes from the last commit's metadata, written by the put
    again = BronzeWriter(s3_root, "p", options)
    assert again.recover() is not None
    assert again.table_state(TOPIC).last_seq == 5 * ROWS
    assert by_batch[5][1][META_LAST_SEQ] == str(5 * ROWS) and by_batch[5][1][META_SOURCE] == "p"
    again.close()


def test_checkpoints_and_log_cleanup_happen_between_one_put_commits(s3_server, s3_root):
    """delta-rs's post-commit checkpoint (every ``delta.checkpointInterval`` versions) and the
    expired log cleanup still happen when commits bypass delta-rs."""
    options = s3_server.storage_options()
    path = topic_path(s3_root, TOPIC)
    writer = BronzeWriter(s3_root, "p", options)
    writer.recover()
    _commit(writer, 1)
    DeltaTable(path, storage_options=options).alter.set_table_properties(
        {"delta.checkpointInterval": "5", "delta.logRetentionDuration": "interval 0 seconds"})
    for batch in range(2, 14):
        _commit(writer, batch)
    writer.close()
    store = open_obstore(path, options)
    names = [str(m["path"]).rsplit("/", 1)[-1] for b in obstore.list(store, prefix="_delta_log/") for m in b]
    versions = sorted(int(n.split(".")[0]) for n in names if n.endswith(".json") and not n.startswith("_"))
    checkpoints = sorted(int(n.split(".")[0]) for n in names if n.endswith(".checkpoint.parquet"))
    assert checkpoints and checkpoints[-1] >= 9, names
    assert all((v + 1) % 5 == 0 for v in checkpoints), checkpoints
    assert versions[0] >= checkpoints[-1], (versions, checkpoints)  # the expired commit files are gone
    assert sum(_commit_infos(s3_server, path)[v].get("engineInfo") == WRITER_VERSION for v in versions) >= 1
    rows = DeltaTable(path, storage_options=options).to_pyarrow_table(columns=["seq"]).column("seq").to_pylist()
    assert sorted(rows) == list(range(1, 13 * ROWS + 1))


@pytest.mark.parametrize("store", ["s3", "gcs", "azure"])
def test_a_put_whose_answer_was_lost_is_its_own_commit_and_a_stranger_is_not(store, request):
    """A retried put that finds the version taken by the very same bytes (its first attempt landed)
    has committed; a different commit there means the version was lost to another writer. On
    each store the conditional put's refusal is told apart from a failure."""
    server = request.getfixturevalue(f"{store}_server")
    options = server.storage_options()
    uri = f"{request.getfixturevalue(f'{store}_root')}/t"
    write_deltalake(uri, pa.table({"a": [1]}), storage_options=options)
    store = open_obstore(uri, options)
    ours = commit_file([], {"k": "v"}, "app", 7, "test", 1_000)
    obstore.put(store, commit_path(1), ours, mode="create")
    appender = LogAppender(store, 0)
    assert appender.append([], {"k": "v"}, "app", 7, "test", timestamp_ms=1_000)
    assert appender.version == 1
    assert appender.append([], {"k": "v"}, "app", 8, "test", timestamp_ms=1_000)
    assert appender.version == 2
    obstore.put(store, commit_path(3), commit_file([], {}, "other", 1, "test", 5), mode="create")
    stale = LogAppender(store, 2)
    assert not stale.append([], {"k": "v"}, "app", 9, "test", timestamp_ms=1_000)
    assert stale.version == 2
    assert DeltaTable(uri, storage_options=options).transaction_version("app") == 8


def test_only_tables_delta_rs_would_append_to_the_same_way_take_the_put(tmp_path):
    plain = str(tmp_path / "plain")
    write_deltalake(plain, pa.table({"a": [1]}))
    assert can_append(DeltaTable(plain))
    constrained = str(tmp_path / "constrained")
    write_deltalake(constrained, pa.table({"a": [1]}))
    DeltaTable(constrained).alter.add_constraint({"positive": "a > 0"})  # writer version 3
    assert not can_append(DeltaTable(constrained))
    featured = str(tmp_path / "featured")
    write_deltalake(featured, pa.table({"a": [1]}))
    DeltaTable(featured).alter.add_feature(TableFeatures.AppendOnly, allow_protocol_versions_increase=True)
    assert not can_append(DeltaTable(featured))


def test_a_store_configured_to_create_files_another_way_leaves_commits_to_delta_rs():
    assert puts_conditionally(None) and puts_conditionally({"AWS_REGION": "us-east-1"})
    assert not puts_conditionally({"AWS_CONDITIONAL_PUT": "etag"})
    assert not puts_conditionally({"copy_if_not_exists": "header: x-cond: true"})
