"""The first look at an increment (`silver.scan`): from the increment's columns read with delta-rs
(what the incremental runner does, no Spark job) and from a Spark aggregate (the streaming
driver's micro-batches), with the same result. The oracle is what the test wrote to bronze."""

from __future__ import annotations

import pyarrow as pa

from silver.bronze_reader import bronze_files, plan_range, read_range, scan_columns
from silver.scan import IncrementScan, ScanGroup, Truncate, groups_of, scan_increment
from tests.silver.bronze_builder import int32, string
from tests.support.engines import SAIL_ONLY


def test_groups_count_rows_seqs_truncates_and_snapshot_rows_per_schema_id():
    columns = pa.table({"schema_id": ["a", "a", None, "b", "a", None],
                        "op": ["r", "u", None, "t", "d", "m"],
                        "seq": pa.array([3, 4, 5, 9, 7, 8], pa.int64())})
    got = sorted(groups_of(columns), key=lambda g: str(g.schema_id))
    assert got == [ScanGroup(None, 2, 5, 8, 0, 0), ScanGroup("a", 3, 3, 7, 0, 1), ScanGroup("b", 1, 9, 9, 1, 0)]
    empty = columns.slice(0, 0)
    assert groups_of(empty) == ()


@SAIL_ONLY
def test_the_delta_rs_scan_of_an_increment_equals_the_spark_scan(builder, spark):
    b = builder("scanned")
    first = b.register([int32("id", optional=False), string("name")], ["id"])
    for i in range(1, 6):
        b.read({"id": i, "name": f"r{i}"})
    b.commit()  # the snapshot: below the increment
    b.insert({"id": 6, "name": "c"}).update({"id": 1, "name": "u"}).delete({"id": 2}).commit()
    b.next_tx(ts_ms=1_700_000_123_000).truncate(ts_ms=1_700_000_123_000).commit()
    second = b.register([int32("id", optional=False), string("name"), string("extra")], ["id"])
    b.read({"id": 7, "name": "r7", "extra": "x"}).insert({"id": 8, "name": "c8", "extra": "y"}).commit()

    files = bronze_files(b.path)
    assert files is not None
    rng = plan_range(files, 5)  # after the snapshot's five rows
    assert rng is not None
    columns = scan_columns(files, rng)
    assert columns is not None
    bronze = read_range(spark, b.path, rng)
    from_delta_rs = scan_increment(bronze, groups_of(columns))
    # seq 6 insert, 7 update, 8 delete, 9 its tombstone (no schema id), 10 truncate, 11 read, 12 insert
    expected = IncrementScan(rows=7, schema_ids=frozenset({first, second}),
                             truncates=(Truncate(10, 1_700_000_123_000),), min_seq=6, max_seq=12, snapshot_rows=1)
    assert from_delta_rs == expected
    assert scan_increment(bronze) == expected
