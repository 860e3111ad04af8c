"""Which requests one small bronze commit makes on S3, step by step.

Starts a private S3 server (`pipelines.local_s3.LocalS3`, SeaweedFS), opens a
`bronze.writer.BronzeWriter` on it, commits a first batch (which creates the tables) and then
``--batches`` small batches of ``--rows`` rows to ``--tables`` tables, each with its offset, and
prints the requests of a batch on average by the writer's step that made them (from the
server's request counters, read before and after each step): staging the data files, the
schema versions, each bronze table's Delta commit, the offsets commit. The lease and the status
file are no part of a commit (the lease is renewed every ten seconds, the status file rewritten
every few seconds, however many batches pass), so they are left out; the object-store
benchmark (`bench/object_store_bench.py`) counts them with the rest of a capture run.

    .venv/bin/python -m bench.object_store_requests --batches 20 --rows 1000 --tables 1
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import orjson

from bronze.writer import BronzeWriter
from cdc_sources.spi import ChangeRecord, SchemaVersion
from pipelines.local_s3 import LocalS3


class StepCounter:
    """Requests the server counted, by the writer's step that made them.

    Exact when one step runs at a time (one table: the tables of a batch commit concurrently)."""

    def __init__(self, server: LocalS3) -> None:
        self.server = server
        self.by_step: Counter[tuple[str, str]] = Counter()
        self._lock = threading.Lock()

    @contextmanager
    def step(self, name: str) -> Iterator[None]:
        before = self.server.request_counts()
        try:
            yield
        finally:
            after = self.server.request_counts()
            with self._lock:
                for kind, n in after.items():
                    if n - before.get(kind, 0):
                        self.by_step[(name, kind)] += n - before.get(kind, 0)

    def wrap(self, obj: Any, attribute: str, name: str) -> None:
        """Count the requests of every call of ``obj.<attribute>`` under step ``name``."""
        original: Callable[..., Any] = getattr(obj, attribute)

        def counted(*args: Any, **kwargs: Any) -> Any:
            with self.step(name):
                return original(*args, **kwargs)

        setattr(obj, attribute, counted)


def _records(topics: list[str], rows: int, first: int, schema_id: str) -> list[ChangeRecord]:
    records = []
    n = first
    for topic in topics:
        for _ in range(rows):
            n += 1
            records.append(ChangeRecord(topic, orjson.dumps({"id": n}).decode(),
                                        orjson.dumps({"after": {"id": n, "note": f"row {n}"}}).decode(), "c",
                                        orjson.dumps({"lsn": n}).decode(), (n, 0, 0), schema_id))
    return records


def measure(server: LocalS3, root: str, *, batches: int, rows: int, tables: int) -> tuple[StepCounter, float]:
    """Commit a first batch then ``batches`` batches; the requests of the latter by step, and their seconds."""
    topics = [f"p.public.t{i}" for i in range(tables)]
    schemas = [SchemaVersion(t, f"s{i}", '{"type":"struct"}', '{"type":"struct"}', f"public.t{i}", ("id",))
               for i, t in enumerate(topics)]
    writer = BronzeWriter(root, "p", server.storage_options())
    writer.recover()
    n = 0
    writer.commit(_records(topics, rows, n, "s0"), schemas, {"lsn": n + rows * tables}, snapshot_completed=True)
    n += rows * tables
    counter = StepCounter(server)
    counter.wrap(writer, "_stage", "stage: data files written")
    counter.wrap(writer, "_commit_schemas", "schema versions (none new)")
    counter.wrap(writer, "_commit_topic", "bronze table commit")
    counter.wrap(writer, "_commit_offset", "offsets table commit")
    started = time.perf_counter()
    with counter.step("whole batch"):
        for _ in range(batches):
            writer.commit(_records(topics, rows, n, "s0"), schemas, {"lsn": n + rows * tables},
                          snapshot_completed=True)
            n += rows * tables
    seconds = time.perf_counter() - started
    writer.close()
    return counter, seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--batches", type=int, default=20)
    parser.add_argument("--rows", type=int, default=1000)
    parser.add_argument("--tables", type=int, default=1)
    args = parser.parse_args()
    base = Path(tempfile.mkdtemp(prefix="cdc-s3-requests-"))
    server = LocalS3(base).start()
    try:
        counter, seconds = measure(server, server.uri(f"requests-{time.time_ns()}"), batches=args.batches,
                                   rows=args.rows, tables=args.tables)
    finally:
        server.stop()
        shutil.rmtree(base, ignore_errors=True)
    kinds = sorted({kind for _, kind in counter.by_step})
    steps = list(dict.fromkeys(step for step, _ in counter.by_step))
    print(f"{args.batches} batches of {args.rows} rows x {args.tables} table(s), "
          f"{seconds / args.batches * 1000:.0f} ms a batch (request counting included)\n")
    print("| step | " + " | ".join(kinds) + " | total |")
    print("|---|" + "---:|" * (len(kinds) + 1))
    for step in [s for s in steps if s != "whole batch"] + ["whole batch"]:
        row = [counter.by_step[(step, k)] / args.batches for k in kinds]
        print(f"| {step} | " + " | ".join(f"{v:g}" for v in row) + f" | {sum(row):g} |")


if __name__ == "__main__":
    main()
