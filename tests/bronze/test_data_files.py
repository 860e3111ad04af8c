"""Bronze data files: row groups appended to an open file, its add action and statistics."""

from __future__ import annotations

import base64
import datetime as dt
import os
import sys
import time

import orjson
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from deltalake import DeltaTable

from bronze import data_files
from bronze.data_files import STATS_COLUMNS, OpenDataFile, TableLocation, _stat_value
from bronze.schema import BRONZE_SCHEMA, topic_path
from bronze.writer import BronzeWriter
from cdc_sources.spi import ChangeRecord
from pipelines.local_s3 import LocalS3

T0 = dt.datetime(2026, 11, 22, 10, 0, 0, 123456, tzinfo=dt.UTC)


def rows(first_seq: int, n: int, *, op: str | None = "c", batch: int = 1, at: dt.datetime = T0,
         headers: bool = False) -> pa.Table:
    return pa.Table.from_pydict(
        {
            "key": [f'{{"id":{i}}}' for i in range(first_seq, first_seq + n)],
            "value": [f'{{"after":{{"id":{i}}}}}' if op else None for i in range(first_seq, first_seq + n)],
            "op": [op] * n,
            "seq": list(range(first_seq, first_seq + n)),
            "position": ['{"lsn":1}'] * n,
            "schema_id": ["s1"] * n,
            "headers": [[("__debezium.newkey", "{}")] if headers else None] * n,
            "ingested_at": [at] * n,
            "batch": [batch] * n,
        },
        schema=BRONZE_SCHEMA,
    )


def test_row_groups_are_appended_and_the_add_action_describes_the_file(tmp_path):
    location = TableLocation.of(str(tmp_path / "t"), None)
    data_file = OpenDataFile(location)
    first, second = rows(1, 3), rows(4, 2, op=None, batch=2, at=T0 + dt.timedelta(seconds=5), headers=True)
    data_file.append(first)
    data_file.append(second)
    add = data_file.close()

    path = tmp_path / "t" / add.path
    assert add.size == os.path.getsize(path)
    parquet = pq.ParquetFile(path)
    assert parquet.metadata.num_row_groups == 2
    assert parquet.read().cast(BRONZE_SCHEMA).equals(pa.concat_tables([first, second]))
    assert parquet.metadata.row_group(0).column(1).compression == "ZSTD"

    stats = orjson.loads(add.stats)
    assert stats["numRecords"] == 5
    assert stats["minValues"] == {"op": "c", "seq": 1, "schema_id": "s1", "ingested_at": "2026-11-22T10:00:00.123Z",
                                  "batch": 1}
    assert stats["maxValues"] == {"op": "c", "seq": 5, "schema_id": "s1", "ingested_at": "2026-11-22T10:00:05.124Z",
                                  "batch": 2}
    assert stats["nullCount"] == {"op": 2, "seq": 0, "schema_id": 0, "ingested_at": 0, "batch": 0}
    assert set(stats["minValues"]) <= set(STATS_COLUMNS)


def test_an_empty_file_has_no_add_action(tmp_path):
    with pytest.raises(ValueError, match="empty data file"):
        OpenDataFile(TableLocation.of(str(tmp_path), None)).close()


@pytest.mark.parametrize(("value", "upper", "expected"), [
    (dt.datetime(2026, 1, 1, 0, 0, 0, 999999, tzinfo=dt.UTC), False, "2026-01-01T00:00:00.999Z"),
    (dt.datetime(2026, 1, 1, 0, 0, 0, 999999, tzinfo=dt.UTC), True, "2026-01-01T00:00:01.000Z"),
    (dt.datetime(2026, 1, 1, 0, 0, 0, 5000, tzinfo=dt.UTC), True, "2026-01-01T00:00:00.005Z"),
    ("x" * 32, True, "x" * 32),
    ("x" * 33, False, None),
    (7, True, 7),
])
def test_bounds_are_written_so_that_they_still_hold(value, upper, expected):
    assert _stat_value(value, upper=upper) == expected


def test_local_paths_and_file_uris_are_written_directly(tmp_path):
    assert TableLocation.of(f"file://{tmp_path}/t", None).folder == f"{tmp_path}/t"
    assert TableLocation.of(f"{tmp_path}/t/", None).folder == f"{tmp_path}/t"


def test_files_go_through_delta_rs_object_store_on_other_stores(tmp_path):
    """The object-store path (S3, ADLS, GCS...) runs here on a ``file://`` URI."""
    (tmp_path / "t").mkdir()
    location = TableLocation.object_store(f"file://{tmp_path}/t", {"timeout": "30s"})
    data_file = OpenDataFile(location)
    data_file.append(rows(1, 2))
    add = data_file.close()
    assert pq.read_table(tmp_path / "t" / add.path).num_rows == 2


def rec(n: int) -> ChangeRecord:
    return ChangeRecord("p.public.t", f'{{"id":{n}}}', f'{{"after":{{"id":{n}}}}}', "c", f'{{"lsn":{n}}}',
                        (100, n, 0), "s1")


def test_staged_records_are_committed_as_one_file_with_seq_statistics(tmp_path):
    root = str(tmp_path)
    writer = BronzeWriter(root, "p")
    writer.recover()
    writer.stage([rec(1), rec(2)])
    writer.stage([rec(3)])
    result = writer.commit([rec(4)], [], {"lsn": 4}, snapshot_completed=True)
    assert (result.records_written, result.records_skipped, result.per_topic) == (4, 0, {"p.public.t": 4})

    table = DeltaTable(topic_path(root, "p.public.t"))
    actions = pa.table(table.get_add_actions(flatten=True))
    assert actions.num_rows == 1
    assert (actions.column("min.seq")[0].as_py(), actions.column("max.seq")[0].as_py()) == (1, 4)
    assert table.metadata().configuration == {"delta.dataSkippingStatsColumns": ",".join(STATS_COLUMNS)}
    assert table.to_pyarrow_table().sort_by("seq").column("seq").to_pylist() == [1, 2, 3, 4]
    history = table.history(1)[0]
    assert (history["cdc.batch"], history["cdc.last_seq"], history["cdc.order_key"]) == ("1", "4", "[100,4,0]")


def test_staged_but_uncommitted_records_are_in_no_table_and_come_again(tmp_path):
    root = str(tmp_path)
    writer = BronzeWriter(root, "p")
    writer.recover()
    writer.commit([rec(1)], [], {"lsn": 1}, snapshot_completed=True)
    writer.stage([rec(2), rec(3)])
    writer.close()  # the process dies before the commit

    again = BronzeWriter(root, "p")
    assert again.recover() is not None
    assert DeltaTable(topic_path(root, "p.public.t")).to_pyarrow_table().num_rows == 1
    result = again.commit([rec(2), rec(3)], [], {"lsn": 3}, snapshot_completed=True)
    assert result.records_written == 2
    table = DeltaTable(topic_path(root, "p.public.t")).to_pyarrow_table().sort_by("seq")
    assert table.column("seq").to_pylist() == [1, 2, 3]
    assert table.column("batch").to_pylist() == [1, 2, 2]


def _s3_posts(server: LocalS3) -> int:
    """POST requests the server counted, once its counter has stopped moving (it lags a little
    behind the answers, so a read right after a request can miss it)."""
    last = server.request_counts().get("POST", 0)
    for _ in range(30):
        time.sleep(0.1)
        now = server.request_counts().get("POST", 0)
        if now == last:
            return now
        last = now
    return last


def test_a_small_file_on_s3_is_put_in_one_request_and_a_large_one_in_parts(s3_server, s3_root):
    """Up to `SINGLE_PUT_MAX` bytes a file is one PUT (no multipart upload: no POST); past it
    the file goes as a multipart upload. Both read back whole."""
    location = TableLocation.object_store(f"{s3_root}/t", s3_server.storage_options())
    assert location.store is not None
    before = _s3_posts(s3_server)
    small = OpenDataFile(location)
    small.append(rows(1, 10))
    small_add = small.close()
    assert _s3_posts(s3_server) == before
    large = OpenDataFile(location)
    noise = [base64.b64encode(os.urandom(1500)).decode() for _ in range(1000)]  # compresses little
    for first in range(1, 4001, 1000):
        part = rows(first, 1000)
        large.append(part.set_column(1, "value", pa.array(noise, pa.large_string())))
    large_add = large.close()
    assert large_add.size > data_files.SINGLE_PUT_MAX
    assert _s3_posts(s3_server) - before == 2  # create and complete of one multipart upload
    fs = location.filesystem
    for add, n in ((small_add, 10), (large_add, 4000)):
        assert fs.get_file_info(add.path).size == add.size
        with fs.open_input_file(add.path) as f:
            assert pq.read_table(f).column("seq").to_pylist() == list(range(1, n + 1))


def test_without_obstore_files_go_through_delta_rs_in_parts(s3_server, s3_root, monkeypatch):
    """obstore is an extra: without it a file is a multipart upload through delta-rs, as before."""
    monkeypatch.setitem(sys.modules, "obstore", None)
    monkeypatch.setitem(sys.modules, "obstore.store", None)
    location = TableLocation.object_store(f"{s3_root}/t", s3_server.storage_options())
    assert location.store is None
    before = _s3_posts(s3_server)
    data_file = OpenDataFile(location)
    data_file.append(rows(1, 10))
    add = data_file.close()
    assert _s3_posts(s3_server) - before == 2
    with location.filesystem.open_input_file(add.path) as f:
        assert pq.read_table(f).num_rows == 10
