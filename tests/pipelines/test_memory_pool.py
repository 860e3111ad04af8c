"""The capture's Arrow memory pool choice."""

from __future__ import annotations

import subprocess
import sys

import pytest

SCRIPT = """
import pyarrow as pa
from pipelines.memory_pool import use_capture_memory_pool
use_capture_memory_pool()
print(pa.default_memory_pool().backend_name)
"""


def pool_after(env: dict[str, str]) -> str:
    """The default pool's backend in a fresh interpreter (the pool is process-wide)."""
    return subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True,
                          check=True).stdout.strip()


def test_capture_uses_jemalloc():
    assert pool_after({"PATH": "/usr/bin:/bin"}) == "jemalloc"


@pytest.mark.parametrize("chosen", ["system", "mimalloc"])
def test_a_pool_the_user_chose_is_kept(chosen):
    assert pool_after({"PATH": "/usr/bin:/bin", "ARROW_DEFAULT_MEMORY_POOL": chosen}) == chosen
