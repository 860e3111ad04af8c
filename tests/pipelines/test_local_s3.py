"""The tests' S3 server really provides what commit safety on S3 relies on: a conditional write
that loses a race is rejected, and concurrent Delta commits all survive (none overwrites another)."""

from __future__ import annotations

import threading
from typing import Any, cast

import obstore
import pyarrow as pa
import pytest
from deltalake import DeltaTable, write_deltalake
from obstore.store import S3Store

from pipelines.local_s3 import LocalS3

RACERS = 8


def _store(server: LocalS3, **extra: str) -> S3Store:
    return S3Store(server.bucket, config=cast(Any, {k.lower(): v for k, v in server.storage_options().items()}),
                   **cast(Any, extra))


def _race(target: Any, n: int) -> list[BaseException | None]:
    """Run ``target(i)`` on ``n`` threads released at once; each one's exception or None."""
    barrier = threading.Barrier(n)
    results: list[BaseException | None] = [None] * n

    def run(i: int) -> None:
        barrier.wait()
        try:
            target(i)
        except BaseException as exc:
            results[i] = exc

    threads = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return results


def test_only_one_of_racing_create_if_absent_writes_wins(s3_server, s3_root):
    store = _store(s3_server)
    key = s3_root.removeprefix(f"s3://{s3_server.bucket}/") + "/_delta_log/00000000000000000001.json"
    results = _race(lambda i: obstore.put(store, key, f"writer {i}".encode(), mode="create"), RACERS)
    winners = [i for i, r in enumerate(results) if r is None]
    assert len(winners) == 1, results
    assert all(type(r).__name__ == "AlreadyExistsError" for r in results if r is not None), results
    assert bytes(obstore.get(store, key).bytes()) == f"writer {winners[0]}".encode()


def test_a_write_conditional_on_a_stale_etag_is_rejected(s3_server, s3_root):
    store = _store(s3_server)
    key = s3_root.removeprefix(f"s3://{s3_server.bucket}/") + "/lease/1.json"
    first = obstore.put(store, key, b"one", mode="create")
    obstore.put(store, key, b"two", mode={"e_tag": first["e_tag"]})
    with pytest.raises(Exception) as stale:
        obstore.put(store, key, b"three", mode={"e_tag": first["e_tag"]})
    assert type(stale.value).__name__ == "PreconditionError"
    assert bytes(obstore.get(store, key).bytes()) == b"two"


def test_racing_delta_appends_with_default_options_all_survive(s3_server, s3_root):
    """delta-rs commits with a conditional create of the next log entry; a loser retries on the
    next version. Were the server to accept both writes of one version, rows would be lost."""
    options = s3_server.storage_options()
    write_deltalake(s3_root, pa.table({"writer": [-1]}), storage_options=options)
    results = _race(lambda i: write_deltalake(s3_root, pa.table({"writer": [i]}), mode="append",
                                              storage_options=options), RACERS)
    assert results == [None] * RACERS
    table = DeltaTable(s3_root, storage_options=options)
    assert sorted(table.to_pyarrow_table()["writer"].to_pylist()) == [-1, *range(RACERS)]
    assert table.version() == RACERS
