"""The Structured Streaming driver, on classic Spark without Delta jars (Maven is unreachable here).

What runs: a classic local SparkSession (JVM), a file stream of bronze rows, ``foreachBatch``
handing each micro-batch to the apply function with a context built for it, the checkpoint
(a restart processes only new files), the ``availableNow`` trigger, and the progress record.
The apply function is recorded there rather than executed (it writes Delta, which needs the
jars); it is tested on Sail everywhere else. Sail itself refuses Structured Streaming.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from silver.declarations import SilverOptions, SilverTable
from silver.errors import EngineCapabilityError
from silver.streaming import StreamSettings, start_stream

pytestmark = pytest.mark.spark

ROOT = Path(__file__).resolve().parents[2]


def test_foreach_batch_hands_new_bronze_rows_to_the_apply_function(tmp_path):
    if shutil.which("java") is None:
        pytest.skip("no JVM: classic Spark cannot start")
    # pyspark marks the process as Spark Connect once a Connect session exists: start clean
    env = {k: v for k, v in os.environ.items() if k not in ("SPARK_CONNECT_MODE_ENABLED", "SPARK_REMOTE")}
    proc = subprocess.run([sys.executable, "-m", "tests.silver.streaming_child", str(tmp_path)], cwd=ROOT,
                          capture_output=True, text=True, timeout=500, check=False, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    seen = out["seen"]
    assert [s["seqs"] for s in seen] == [[1, 2, 3], [4, 5]]  # the checkpoint skipped the first file
    assert [s["expected_keys"] for s in seen] == [None, ["id"]]  # keys come from the progress record
    assert all(s["run_id"].startswith("stream-t-") for s in seen)
    assert seen[0]["target"].endswith("/silver/t")
    assert out["last_seq"] == 5 and "offsets" in out["checkpoint"] and "commits" in out["checkpoint"]


def test_sail_refuses_structured_streaming_with_a_clear_error(spark, tmp_path):
    decl = SilverTable(table="t", source="shop.public.t")
    with pytest.raises(EngineCapabilityError, match="incremental runner"):
        start_stream(spark, root=str(tmp_path), decl=decl, source="shop", options=SilverOptions(),
                     settings=StreamSettings(checkpoint_location=str(tmp_path / "ckpt")))
