"""The tests' Azure server (Azurite) really provides what commit safety on Azure Blob Storage
relies on: of racing create-if-absent writes (``If-None-Match: *``) exactly one wins, a write
conditional on a stale ETag (``If-Match``) is rejected, and concurrent Delta commits all survive;
and it lists from a given name (``startFrom``), which delta-rs needs to find a table's newest
commits (an Azurite that ignores it, before 3.37, fails a table's third commit)."""

from __future__ import annotations

import threading
from typing import Any, cast

import obstore
import pyarrow as pa
import pytest
from deltalake import DeltaTable, write_deltalake
from obstore.store import AzureStore

from pipelines.local_azure import LocalAzure

RACERS = 8


def _store(server: LocalAzure, **config: str) -> AzureStore:
    options = {"account_name": server.account, "account_key": server.account_key, "endpoint": server.endpoint,
               **config}
    return AzureStore(server.container, config=cast(Any, options), client_options={"allow_http": True})


def _key(server: LocalAzure, root: str, name: str) -> str:
    return root.removeprefix(f"az://{server.container}/") + "/" + name


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


def test_only_one_of_racing_create_if_absent_writes_wins(azure_server, azure_root):
    store = _store(azure_server)
    key = _key(azure_server, azure_root, "_delta_log/00000000000000000001.json")
    results = _race(lambda i: obstore.put(store, key, f"writer {i}".encode(), mode="create"), RACERS)
    winners = [i for i, r in enumerate(results) if r is None]
    assert len(winners) == 1, results
    assert all(type(r).__name__ == "AlreadyExistsError" for r in results if r is not None), results
    assert bytes(obstore.get(store, key).bytes()) == f"writer {winners[0]}".encode()


def test_a_write_conditional_on_a_stale_etag_is_rejected(azure_server, azure_root):
    store = _store(azure_server)
    key = _key(azure_server, azure_root, "lease/1.json")
    first = obstore.put(store, key, b"one", mode="create")
    obstore.put(store, key, b"two", mode={"e_tag": first["e_tag"]})
    with pytest.raises(Exception) as stale:
        obstore.put(store, key, b"three", mode={"e_tag": first["e_tag"]})
    assert type(stale.value).__name__ == "PreconditionError"
    assert bytes(obstore.get(store, key).bytes()) == b"two"


def test_listing_starts_from_the_given_name(azure_server, azure_root):
    store = _store(azure_server)
    names = [_key(azure_server, azure_root, f"_delta_log/{v:020}.json") for v in range(4)]
    for name in names:
        obstore.put(store, name, b"{}")
    prefix = _key(azure_server, azure_root, "_delta_log/")
    listed = [str(m["path"]) for batch in obstore.list(store, prefix=prefix, offset=names[1]) for m in batch]
    assert sorted(listed) == names[2:]


def test_racing_delta_appends_with_default_options_all_survive(azure_server, azure_root):
    """delta-rs commits with a conditional create of the next log entry; a loser retries on the
    next version. Were the server to accept both writes of one version, rows would be lost."""
    options = azure_server.storage_options()
    write_deltalake(azure_root, pa.table({"writer": [-1]}), storage_options=options)
    results = _race(lambda i: write_deltalake(azure_root, pa.table({"writer": [i]}), mode="append",
                                              storage_options=options), RACERS)
    assert results == [None] * RACERS
    table = DeltaTable(azure_root, storage_options=options)
    assert sorted(table.to_pyarrow_table()["writer"].to_pylist()) == [-1, *range(RACERS)]
    assert table.version() == RACERS
