"""The Sail server's Parquet caches are bounded: Sail itself reports the limits it runs with."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
START_QUERY_STOP = ("import sys\n"
                    "from pipelines.engine import EngineSpec, create_session, stop_session\n"
                    "spark = create_session(EngineSpec(server=sys.argv[1]), looping=True)\n"
                    "spark.range(3).count()\n"
                    "stop_session(spark)\n")


def _cache_limits(server: str, **env: str) -> tuple[str, str]:
    """What Sail logged (``RUST_LOG=sail_cache=debug``) as its metadata cache's size limit and its
    statistics cache's entries, in a process that started a session with ``engine.server: server``."""
    child = {k: v for k, v in os.environ.items() if not k.startswith("SAIL_")}
    child.update(env, RUST_LOG="sail_cache=debug", PYTHONPATH=str(REPO))
    out = subprocess.run([sys.executable, "-c", START_QUERY_STOP, server], env=child, capture_output=True,
                         text=True, timeout=180, cwd=REPO)
    assert out.returncode == 0, out.stderr[-2000:]
    text = out.stderr + out.stdout
    size = re.findall(r"(?:Setting size limit for MokaFileMetadataCache to (\d+)|No size limit set for "
                      r"MokaFileMetadataCache)", text)
    entries = re.findall(r"Setting maximum number of entries for MokaFileStatisticsCache to (\d+)", text)
    assert size and entries, text[-3000:]
    return size[0] or "unlimited", entries[0]


@pytest.mark.spark
@pytest.mark.parametrize("server", ["embedded", "process"])
def test_sails_parquet_caches_are_bounded(server):
    assert _cache_limits(server) == (str(16 * 2**20), "1000")


@pytest.mark.spark
def test_a_users_cache_setting_is_kept():
    limits = _cache_limits("process", SAIL_PARQUET__FILE_METADATA_CACHE__SIZE_LIMIT=str(2**20))
    assert limits == (str(2**20), "1000")
