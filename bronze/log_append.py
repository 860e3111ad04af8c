"""A blind append to a Delta table on an object store in one request: its next commit file, put
only if absent.

A Delta commit is the creation of ``_delta_log/<version>.json``; the store's create-if-absent
(S3 ``If-None-Match: *``, GCS ``ifGenerationMatch=0``, Azure ``If-None-Match: *``) makes exactly
one of two writers of a version win. delta-rs commits the same way, but around that one
request it lists the log for the newest version before the commit and reads the new version
back after it (a LIST and two GETs), and the writer's kept `DeltaTable` then reads it again:
eight requests for a bronze commit, where the conditional put alone is one.

`LogAppender.append` writes that one request for a commit that only adds files (with the
commit's metadata and its application transaction) at the version after the last one the
appender knows. It knows that version because every commit of the table since it was last read
went through it: a put of version v that succeeds proves v-1 was the newest version (versions
have no gaps), so nothing committed in between and there is nothing to check for conflicts. A
put that finds the version taken (a concurrent writer: an OPTIMIZE, a second capture) commits
nothing and returns False; the caller then reads the table and commits through delta-rs, which
checks the winning commits for conflicts as usual. A put whose answer was lost and retried by
the client finds its own commit there: that is recognised (the file's bytes are the commit's)
and counts as success.

It only appends where delta-rs would write the same commit: a table at writer version 2 or
lower without table features and without column invariants (anything else, a table whose
protocol another engine raised, goes through delta-rs), on a store left to its default
conditional put (`puts_conditionally`). The appender does not touch the
`DeltaTable` it was made from: the caller brings that up to date when it needs it
(`bronze.kept_table`), and delta-rs's checkpoints (one every ``delta.checkpointInterval``
versions) are written by the caller from the updated table.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import orjson
from deltalake import DeltaTable
from deltalake.transaction import AddAction

__all__ = ["LogAppender", "can_append", "commit_file", "commit_path", "puts_conditionally"]

_CONDITIONAL_SETTINGS = ("conditional_put", "copy_if_not_exists")
"""Settings (any spelling: ``AWS_CONDITIONAL_PUT``...) that change how an S3 store creates a
file only if absent; with either, commits are left to delta-rs."""


def commit_path(version: int) -> str:
    """The commit file of ``version``, relative to the table's root."""
    return f"_delta_log/{version:020d}.json"


def commit_file(adds: Sequence[AddAction], metadata: Mapping[str, str], app_id: str, app_version: int,
                engine: str, timestamp_ms: int) -> bytes:
    """The commit file of a blind append: ``commitInfo`` (the commit's metadata at its top level, as
    delta-rs writes it), one ``add`` per file, the application transaction."""
    info: dict[str, Any] = {"timestamp": timestamp_ms, "operation": "WRITE",
                            "operationParameters": {"mode": "Append"}, "engineInfo": engine,
                            "clientVersion": engine}
    info.update(metadata)
    lines = [{"commitInfo": info}]
    lines += [{"add": {"path": add.path, "partitionValues": dict(add.partition_values), "size": add.size,
                       "modificationTime": add.modification_time, "dataChange": add.data_change,
                       "stats": add.stats}} for add in adds]
    lines.append({"txn": {"appId": app_id, "version": app_version}})
    return b"\n".join(orjson.dumps(line) for line in lines) + b"\n"


def puts_conditionally(storage_options: Mapping[str, str] | None) -> bool:
    """Whether the store creates files only if absent with its default conditional put: not when
    ``conditional_put`` or ``copy_if_not_exists`` is set (a store configured another way)."""
    return not any(key.lower().removeprefix("aws_") in _CONDITIONAL_SETTINGS for key in storage_options or {})


def can_append(table: DeltaTable) -> bool:
    """Whether `LogAppender` may commit to ``table`` (see module doc): writer version 2 or lower,
    no table features, no column invariants."""
    protocol = table.protocol()
    if protocol.min_writer_version > 2 or protocol.writer_features:
        return False
    return "delta.invariants" not in table.schema().to_json()


@dataclass
class LogAppender:
    """Commits blind appends to one table with one conditional put each (see module doc).

    Attributes:
        store: an obstore store rooted at the table.
        version: the table's newest version, as the appender last committed or was told.
        checkpoint_interval: the table's ``delta.checkpointInterval``.
    """

    store: Any
    version: int
    checkpoint_interval: int = 100

    def checkpoint_due(self) -> bool:
        """Whether delta-rs would checkpoint the version just committed (it checkpoints version v
        when v + 1 is a multiple of the interval)."""
        return (self.version + 1) % self.checkpoint_interval == 0

    def append(self, adds: Sequence[AddAction], metadata: Mapping[str, str], app_id: str, app_version: int,
               engine: str, *, timestamp_ms: int | None = None) -> bool:
        """Commit ``adds`` as version ``version + 1``; False, with nothing committed, when that
        version is taken. Any other failure of the store is raised (then whether the commit
        landed is unknown: the caller must read the table before it commits again)."""
        import obstore
        from obstore.exceptions import AlreadyExistsError, PreconditionError

        version = self.version + 1
        now = int(time.time() * 1000) if timestamp_ms is None else timestamp_ms
        body = commit_file(adds, metadata, app_id, app_version, engine, now)
        try:
            obstore.put(self.store, commit_path(version), body, mode="create", use_multipart=False)
        except (AlreadyExistsError, PreconditionError):
            if bytes(obstore.get(self.store, commit_path(version)).bytes()) != body:
                return False
        self.version = version
        return True
