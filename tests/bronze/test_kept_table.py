"""A Delta table kept open between commits and opened afresh every so many commits."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
from deltalake import DeltaTable, write_deltalake

from bronze.kept_table import KeptTable


def _row(i: int) -> pa.Table:
    return pa.table({"i": pa.array([i], pa.int64())})


def _commit(kept: KeptTable, i: int) -> DeltaTable:
    table = kept.get()
    assert table is not None
    write_deltalake(table, _row(i), mode="append")
    kept.committed()
    return table


def test_a_missing_table_is_none_until_it_exists(tmp_path: Path) -> None:
    kept = KeptTable(str(tmp_path / "t"), reopen_every=2)
    assert kept.get() is None
    write_deltalake(str(tmp_path / "t"), _row(0))
    table = kept.get()
    assert table is not None and table.version() == 0


def test_the_table_is_opened_afresh_after_every_n_commits_at_the_newest_version(tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    write_deltalake(path, _row(0))
    kept = KeptTable(path, reopen_every=3)
    first = [_commit(kept, i) for i in (1, 2, 3)]
    assert first[0] is first[1] is first[2]  # kept open for three commits
    write_deltalake(path, _row(4), mode="append")  # another writer commits version 4 by path
    fresh = kept.get()  # due: opened afresh, so it starts from everything committed
    assert fresh is not None and fresh is not first[0]
    assert fresh.version() == 4
    assert _commit(kept, 5) is fresh
    assert sorted(DeltaTable(path).to_pyarrow_table().column("i").to_pylist()) == [0, 1, 2, 3, 4, 5]


def test_never_reopened_without_a_limit_and_forget_drops_the_table(tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    write_deltalake(path, _row(0))
    kept = KeptTable(path, reopen_every=None)
    tables = {id(_commit(kept, i)) for i in range(1, 6)}
    assert len(tables) == 1
    table = kept.get()
    kept.forget()
    assert kept.get() is not table
