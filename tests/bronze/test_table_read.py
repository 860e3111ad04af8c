"""Reading bookkeeping tables without Arrow's dataset machinery, and what start-up reads."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pyarrow as pa
from deltalake import DeltaTable, write_deltalake

from bronze.table_read import read_columns

REPO = Path(__file__).resolve().parents[2]


def test_reads_the_rows_of_every_active_file(tmp_path):
    path = str(tmp_path / "t")
    for start in (1, 4, 9):
        write_deltalake(path, pa.table({"seq": pa.array(range(start, start + 3), pa.int64()),
                                        "value": [f"v{i}" for i in range(start, start + 3)]}), mode="append")
    write_deltalake(path, pa.table({"seq": pa.array([20], pa.int64()), "value": ["last"]}), mode="overwrite")
    write_deltalake(path, pa.table({"seq": pa.array([21, 22], pa.int64()), "value": ["a", "b"]}), mode="append")
    got = read_columns(DeltaTable(path), ["seq", "value"]).sort_by("seq")
    assert got.column("seq").to_pylist() == [20, 21, 22]  # the overwritten files are no longer active
    assert got.column("value").to_pylist() == ["last", "a", "b"]


def test_a_file_without_a_column_added_later_reads_as_delta_lake_does(tmp_path):
    path = str(tmp_path / "t")
    write_deltalake(path, pa.table({"seq": pa.array([1], pa.int64())}), mode="append")
    write_deltalake(path, pa.table({"seq": pa.array([2], pa.int64()), "extra": ["x"]}), mode="append",
                    schema_mode="merge")
    got = read_columns(DeltaTable(path), ["seq", "extra"]).sort_by("seq")
    assert got.column("extra").to_pylist() == [None, "x"]


def test_an_empty_table_has_the_requested_columns(tmp_path):
    path = str(tmp_path / "t")
    write_deltalake(path, pa.table({"seq": pa.array([], pa.int64()), "value": pa.array([], pa.string())}))
    got = read_columns(DeltaTable(path), ["value"])
    assert got.num_rows == 0 and got.column_names == ["value"]


def test_start_up_reads_offsets_and_history_without_loading_arrow_datasets(tmp_path):
    """What a capture reads before it streams (the offset, the connector's history) needs no
    ``pyarrow.dataset`` (and pandas), whose import costs more than the rest of a run with nothing
    to capture; the known schema versions are read only when a commit registers one."""
    root = str(tmp_path / "lake")
    script = textwrap.dedent(f"""
        import sys
        from bronze.writer import BronzeWriter
        from cdc_sources.spi import HISTORY_TOPIC, ChangeRecord, SchemaVersion
        schema = SchemaVersion("p.db.t", "s1", "{{}}", "{{}}", "db.t", ("id",))
        history = ChangeRecord(HISTORY_TOPIC, None, '{{"ddl": "CREATE TABLE t (id INT)"}}', None,
                               '{{"pos": 1}}', (1, 0, 0), None)
        w = BronzeWriter({root!r}, "p")
        w.recover()
        w.commit([history], [schema], {{"pos": 1}}, snapshot_completed=True)
        w.close()
        assert "pyarrow.dataset" not in sys.modules  # a new table: nothing was read
        print("fresh-ok")
    """)
    first = subprocess.run([sys.executable, "-c", script], cwd=REPO, capture_output=True, text=True, check=False)
    assert first.returncode == 0, first.stderr
    check = textwrap.dedent(f"""
        import json, sys
        from bronze.writer import BronzeWriter
        w = BronzeWriter({root!r}, "p")
        stored = w.recover()
        history = w.read_history()
        w.close()
        print(json.dumps([stored.batch, [h.value for h in history], "pyarrow.dataset" in sys.modules,
                          "pandas" in sys.modules]))
    """)
    out = subprocess.run([sys.executable, "-c", check], cwd=REPO, capture_output=True, text=True, check=False)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == [1, ['{"ddl": "CREATE TABLE t (id INT)"}'], False, False]
