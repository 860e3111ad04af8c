"""The offsets of a several-database source: Debezium 3.6.3's partitions (``SqlServerPartition``
through SqlServerOffsetProbe.java) and reading back what is stored."""

from __future__ import annotations

import pytest

from cdc_sources.sqlserver.lsn import Lsn
from cdc_sources.sqlserver.offset import OffsetError, SnapshotType, SqlServerOffset
from cdc_sources.sqlserver.partitions import PartitionedOffset
from tests.cdc_sources.sqlserver.dbz_offsets import ask

C, X = "00000027:00000758:0005", "00000027:00000758:0003"
A = SqlServerOffset(Lsn.parse(C), Lsn.parse(X), 2)
B = SqlServerOffset(Lsn.parse(C), snapshot=SnapshotType.INITIAL)


def test_partitions_are_debeziums() -> None:
    """One partition per database of database.names, in its order, ``{"server", "database"}``; with
    several databases Debezium reads no other form (with one it also reads ``{"server"}``)."""
    [several, one] = ask([{"cmd": "partitions", "prefix": "ms", "names": "inventory,Sales"},
                          {"cmd": "partitions", "prefix": "ms", "names": "inventory"}])
    ours = PartitionedOffset("ms", {"inventory": A, "Sales": B}).to_dict()["partitions"]
    assert [e["partition"] for e in ours] == [p["partition"] for p in several["partitions"]]
    assert all(p["formats"] == [p["partition"]] for p in several["partitions"])
    assert one["partitions"][0]["formats"] == [{"server": "ms", "database": "inventory"}, {"server": "ms"}]


def test_stored_offsets_load_per_database() -> None:
    stored = PartitionedOffset("ms", {"inventory": A, "Sales": B}).to_dict()
    assert stored["partitions"][0]["offset"] == A.to_map()
    loaded = PartitionedOffset.load(stored, "ms", ["Sales", "inventory", "new"])
    assert loaded.offsets == {"Sales": B, "inventory": A}
    assert PartitionedOffset.load(stored, "other", ["inventory"]).offsets == {}
    assert PartitionedOffset.load(stored, "ms", ["inventory"]).offsets == {"inventory": A}
    assert PartitionedOffset.load(None, "ms", ["inventory"]).offsets == {}
    replaced = loaded.with_offset("new", A, ["inventory", "new", "Sales"])
    assert list(replaced.offsets) == ["inventory", "new", "Sales"]


def test_a_one_database_offset_or_a_bad_partition_is_refused_by_name() -> None:
    with pytest.raises(OffsetError, match=r"capturing one database, but database\.names now lists 2"):
        PartitionedOffset.load(A.to_map(), "ms", ["a", "b"])
    with pytest.raises(OffsetError, match=r"partitions\[1\] must hold a partition"):
        PartitionedOffset.load({"partitions": [{"partition": {"server": "ms", "database": "a"},
                                                "offset": A.to_map()}, {"offset": {}}]}, "ms", ["a", "b"])
    with pytest.raises(OffsetError, match=r"partitions\[0\] \(database a\): stored SQL Server offset: not a SQL"):
        PartitionedOffset.load({"partitions": [{"partition": {"server": "ms", "database": "a"},
                                                "offset": {"commit_lsn": "x"}}]}, "ms", ["a", "b"])


def test_a_running_signalled_snapshot_is_kept_in_its_databases_offset() -> None:
    """Debezium keeps the incremental snapshot context in each partition's offset: here too, and
    a database's progress survives another database's checkpoints and a reload."""
    progress = {"incremental_snapshot_collections": '[{"incremental_snapshot_collections_id": "a.dbo.t"}]',
                "incremental_snapshot_primary_key": "aced", "incremental_snapshot_maximum_key": "aced"}
    offset = PartitionedOffset("ms", {}).with_offset("a", A, ["a", "b"], progress).with_offset("b", B, ["a", "b"], {})
    assert offset.offset_map("a") == {**A.to_map(), **progress} and offset.offset_map("b") == B.to_map()
    assert offset.with_offset("b", A, ["a", "b"], None).extras == {"a": progress}  # None keeps
    stored = offset.to_dict()
    assert stored["partitions"][0]["offset"] == {**A.to_map(), **progress}
    assert stored["partitions"][1]["offset"] == B.to_map()
    loaded = PartitionedOffset.load(stored, "ms", ["a", "b"])
    assert loaded == offset
    done = loaded.with_offset("a", A, ["a", "b"], {})  # the snapshot finished: its keys go
    assert done.offset_map("a") == A.to_map() and done.extras == {}
