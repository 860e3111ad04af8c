"""The Arrow memory pool a capture runs with.

Capture allocates and frees large Arrow buffers all the time (a rendered snapshot block is tens
of MB). pyarrow's default pool on Linux, mimalloc, keeps freed pages for reuse, so the resident
size creeps up; jemalloc hands them back sooner. Measured on the bench's 1M-row snapshot (three
runs each): peak RSS 431-470 MB with mimalloc, 386-401 MB with jemalloc, at the same speed; a
1M-row transaction streamed: 328 MB against 279 MB.
"""

from __future__ import annotations

import logging
import os

import pyarrow as pa

log = logging.getLogger(__name__)


def use_capture_memory_pool() -> None:
    """Make jemalloc the process's default Arrow pool, unless the user chose one with
    ``ARROW_DEFAULT_MEMORY_POOL`` or this pyarrow build has no jemalloc."""
    if os.environ.get("ARROW_DEFAULT_MEMORY_POOL"):
        return
    try:
        pool = pa.jemalloc_memory_pool()
    except NotImplementedError:
        log.debug("pyarrow was built without jemalloc; keeping the %s pool", pa.default_memory_pool().backend_name)
        return
    pa.set_memory_pool(pool)
