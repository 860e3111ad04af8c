"""What the silver tables still need from bronze, read without Spark.

A silver table's progress record (``<state>/progress/<table>``, a Delta table) gives the last
``seq`` it applied and the bronze version its last increment read; a Structured Streaming
checkpoint (``<checkpoints>/<table>/offsets/<n>``) gives the bronze version a stream reads
next. Both are read with delta-rs and pyarrow's file systems: no Spark, no database.
"""

from __future__ import annotations

import json
from collections.abc import Iterable

import pyarrow.fs as pafs
from deltalake import DeltaTable
from deltalake.exceptions import DeltaError, TableNotFoundError

from pipelines.config import PipelineConfig
from pipelines.maintenance.plan import Reader

__all__ = ["checkpoint_version", "silver_readers"]


def silver_readers(config: PipelineConfig) -> dict[str, list[Reader]]:
    """Bronze topic -> the silver tables reading it, with their progress and stream state."""
    root = config.lakehouse.root.rstrip("/")
    storage = config.lakehouse.storage_options or None
    state = config.silver_state_location()
    checkpoints = (config.maintenance.checkpoint_root or f"{root}/silver/_checkpoints").rstrip("/")
    out: dict[str, list[Reader]] = {}
    for decl in config.silver:
        last_seq, version = _progress(f"{state}/progress/{decl.table}", storage)
        streamed, stream_version = checkpoint_version(f"{checkpoints}/{decl.table}")
        if streamed:  # a stream's progress records no version: its checkpoint does
            version = stream_version if version is None or stream_version is None else min(version, stream_version)
            if stream_version is None:
                version = None
        out.setdefault(decl.source, []).append(Reader(decl.table, last_seq, version, streamed))
    return out


def _progress(path: str, storage: dict[str, str] | None) -> tuple[int | None, int | None]:
    try:
        table = DeltaTable(path, storage_options=storage)
        rows = table.to_pyarrow_table(columns=["last_seq", "bronze_version"]).to_pylist()
    except TableNotFoundError:
        return None, None
    except (DeltaError, OSError):  # unreadable: nothing is known, the plan keeps everything
        return None, None
    if not rows:
        return None, None
    top = max(rows, key=lambda r: int(r["last_seq"]))
    version = top["bronze_version"]
    return int(top["last_seq"]), None if version is None else int(version)


def checkpoint_version(location: str) -> tuple[bool, int | None]:
    """Whether a stream checkpoint exists at ``location``, and the oldest bronze version it may
    read again: the start of its last batch (which is replayed if it was not committed).

    A checkpoint that exists but cannot be read gives (True, None): nothing is known.
    """
    try:
        fs, base = pafs.FileSystem.from_uri(location) if "://" in location else (pafs.LocalFileSystem(), location)
        info = fs.get_file_info(base)
        if info.type is pafs.FileType.NotFound:
            return False, None
        entries = fs.get_file_info(pafs.FileSelector(f"{base}/offsets", allow_not_found=True))
        batches = sorted(int(e.base_name) for e in entries if e.base_name.isdigit())
        versions = [_reservoir_version(fs, f"{base}/offsets/{n}") for n in batches[-2:]]
    except (OSError, ValueError):
        return True, None
    known = [v for v in versions if v is not None]
    return True, (min(known) if known and len(known) == len(versions) else None)


def _reservoir_version(fs: pafs.FileSystem, path: str) -> int | None:
    with fs.open_input_stream(path) as stream:
        lines: Iterable[str] = stream.read().decode().splitlines()[2:]  # "v1", batch metadata, then sources
    for line in lines:
        offset = json.loads(line)
        if isinstance(offset, dict) and "reservoirVersion" in offset:
            return int(offset["reservoirVersion"])
    return None
