"""Bounded Parquet caches for the Sail server, set before it starts.

Sail keeps two process-wide caches of what it learns from a Parquet file: the file's metadata
(footer and page index) and its statistics. By default the metadata cache has no size limit and
both keep an entry for 30 minutes. A pipeline that runs silver in a loop reads new files all the
time (capture adds a bronze file per table every `commit_interval_ms`; every MERGE writes silver
files, every pass a progress and staging file), most of them once, so the caches grow for half
an hour with the rate of change instead of holding what is read again: measured
(`bench/sail_cache_bench.py`, 1,500 new small files at a time), 5-23 KB of server memory per
file read at Sail's defaults (three runs), 0.3 KB with both caches off; at a soak's few hundred
new files a minute, tens of MB after half an hour. With these limits the caches still keep the
files read again (the silver tables that every MERGE reads) and evict what is read once.

Sail reads its settings from ``SAIL_*`` environment variables when a server starts: a looping
run's server child process gets them in its environment (`pipelines.sail_process`), an embedded
server from this process's (`configure_sail_caches`). A value the user set is kept.
"""

from __future__ import annotations

import os

__all__ = ["METADATA_CACHE_BYTES", "SAIL_CACHE_ENV", "STATISTICS_CACHE_ENTRIES", "configure_sail_caches"]

METADATA_CACHE_BYTES = 16 * 2**20
"""Size limit of Sail's Parquet metadata cache (least recently used entries evicted)."""

STATISTICS_CACHE_ENTRIES = 1_000
"""Entries of Sail's Parquet file statistics cache."""

SAIL_CACHE_ENV = {
    "SAIL_PARQUET__FILE_METADATA_CACHE__SIZE_LIMIT": str(METADATA_CACHE_BYTES),
    "SAIL_PARQUET__FILE_STATISTICS_CACHE__MAX_ENTRIES": str(STATISTICS_CACHE_ENTRIES),
}
"""Sail settings (environment variables) that bound its Parquet caches."""


def configure_sail_caches() -> None:
    """Set `SAIL_CACHE_ENV` for variables the user has not set, before an embedded Sail server starts."""
    for key, value in SAIL_CACHE_ENV.items():
        os.environ.setdefault(key, value)
