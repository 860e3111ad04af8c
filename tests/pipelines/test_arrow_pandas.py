"""A capture process converts Python values to Arrow and writes Delta tables without importing pandas."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


EXIT = """
import os as _os, sys as _sys
_sys.stdout.flush()
_os._exit(0)
"""
"""Ends a script without interpreter finalization: a process that has read a Delta table through
delta-rs's pyarrow dataset aborts at exit now and then ("terminate called without an active
exception", deltalake 1.6.6 with pyarrow 26, with or without the probe), which is not what
these tests are about."""


def run(script: str) -> list[object]:
    out = subprocess.run([sys.executable, "-c", textwrap.dedent(script) + EXIT], cwd=REPO, capture_output=True,
                         text=True, check=False)
    assert out.returncode == 0, out.stderr
    return list(json.loads(out.stdout.strip().splitlines()[-1]))


def test_conversions_and_delta_writes_and_reads_import_no_pandas_after_the_probe(tmp_path):
    got = run(f"""
        import datetime as dt, json, sys
        import pyarrow as pa
        from pipelines.arrow_pandas import skip_pandas_probe
        skip_pandas_probe()
        from deltalake import DeltaTable, write_deltalake
        table = pa.Table.from_pydict({{"batch": [1], "at": [dt.datetime.now(dt.UTC)], "topics": [["a", "b"]]}})
        write_deltalake({str(tmp_path / "t")!r}, table)
        back = DeltaTable({str(tmp_path / "t")!r}).to_pyarrow_table()
        print(json.dumps([back.column("topics").to_pylist(), "pandas" in sys.modules]))
    """)
    assert got == [[["a", "b"]], False]


def test_without_the_probe_the_same_conversion_imports_pandas():
    """The oracle of the test above: pyarrow does import pandas for a plain conversion."""
    assert run("""
        import json, sys
        import pyarrow as pa
        pa.Table.from_pydict({"batch": [1]})
        print(json.dumps(["pandas" in sys.modules]))
    """) == [True]


def test_explicit_pandas_conversions_still_work_after_the_probe():
    got = run("""
        import json, sys
        import pyarrow as pa
        from pipelines.arrow_pandas import skip_pandas_probe
        skip_pandas_probe()
        frame = pa.table({"a": [1, 2]}).to_pandas()
        again = pa.Table.from_pandas(frame)
        print(json.dumps([type(frame).__name__, again.column("a").to_pylist(), sys.meta_path[0].__class__.__name__]))
    """)
    assert got[:2] == ["DataFrame", [1, 2]] and got[2] != "_NoPandas"
