"""Allocator settings for delta-rs (the ``deltalake`` package), applied before it is loaded.

delta-rs allocates through a jemalloc of its own, which keeps the pages a commit frees for ten
seconds before giving them back (its ``dirty_decay_ms`` default). Each bronze commit rebuilds the
table's in-memory state, which grows by a file per commit, so what jemalloc holds grows with the
table: measured with `bench/bronze_commit_memory_bench.py` (2,000 commits to one table, one
process), 10.7 KB per commit by default against 3.7 KB per commit with freed pages given back at
once (``dirty_decay_ms:0,muzzy_decay_ms:0``), and 20 MB less resident memory.

jemalloc reads ``_RJEM_MALLOC_CONF`` from the environment when delta-rs's library is loaded, so
`configure_delta_allocator` must run before the first ``import deltalake`` (the CLI calls it
first thing); a value the user set is kept.
"""

from __future__ import annotations

import logging
import os
import sys

__all__ = ["DELTA_ALLOCATOR_ENV", "configure_delta_allocator"]

log = logging.getLogger(__name__)

DELTA_ALLOCATOR_ENV = {"_RJEM_MALLOC_CONF": "dirty_decay_ms:0,muzzy_decay_ms:0"}
"""jemalloc settings for delta-rs (environment variables)."""


def configure_delta_allocator() -> None:
    """Set `DELTA_ALLOCATOR_ENV` for variables the user has not set; a no-op once delta-rs is loaded."""
    if "deltalake._internal" in sys.modules:
        log.debug("delta-rs is already loaded; its allocator settings stay as they are")
        return
    for key, value in DELTA_ALLOCATOR_ENV.items():
        os.environ.setdefault(key, value)
