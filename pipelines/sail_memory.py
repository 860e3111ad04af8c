"""Allocator settings for the embedded Sail server, applied before pysail is loaded.

Sail allocates through a mimalloc built into pysail. Over 60 silver passes on a growing bronze
table (one process, `run`'s loop without the waits) Sail's live data peaked at about 100 MB
(mimalloc's own statistics: 34 GB allocated and freed in all), but mimalloc kept the freed pages
committed and the process grew by about 270 MB. Returning freed pages at once (``purge_delay``
0) and not asking for transparent huge pages (a partly used 2 MB page cannot be given back)
held the growth to about 100 MB over the same passes, at the same pass time.

mimalloc reads these settings from the environment when pysail's library is loaded, so they
must be set before the first ``import pysail``; a value the user set is kept.
"""

from __future__ import annotations

import logging
import os
import sys

__all__ = ["SAIL_ALLOCATOR_ENV", "configure_sail_allocator"]

log = logging.getLogger(__name__)

SAIL_ALLOCATOR_ENV = {"MIMALLOC_PURGE_DELAY": "0", "MIMALLOC_ALLOW_THP": "0"}
"""mimalloc settings for the embedded Sail server (environment variables)."""


def configure_sail_allocator() -> None:
    """Set `SAIL_ALLOCATOR_ENV` for variables the user has not set; a no-op once pysail is loaded."""
    if any(name == "pysail._native" or name.startswith("pysail._native.") for name in sys.modules):
        log.debug("pysail is already loaded; its allocator settings stay as they are")
        return
    for key, value in SAIL_ALLOCATOR_ENV.items():
        os.environ.setdefault(key, value)
