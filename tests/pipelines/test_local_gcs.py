"""The tests' GCS server really provides what commit safety on Google Cloud Storage relies on:
of racing create-if-absent writes (``x-goog-if-generation-match: 0``) exactly one wins, a write
conditional on a stale generation is rejected, listings start after a given name, concurrent
Delta commits all survive; and a request signed by a key it does not know is refused."""

from __future__ import annotations

import threading
from typing import Any, cast

import obstore
import pyarrow as pa
import pytest
from deltalake import DeltaTable, write_deltalake
from obstore.store import GCSStore

from pipelines.local_gcs import LocalGCS

RACERS = 8


def _store(server: LocalGCS, key: str | None = None) -> GCSStore:
    config = {"google_service_account_key": key or server.service_account_key, "google_base_url": server.endpoint}
    return GCSStore(server.bucket, config=cast(Any, config), client_options={"allow_http": True})


def _key(server: LocalGCS, root: str, name: str) -> str:
    return root.removeprefix(f"gs://{server.bucket}/") + "/" + name


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


def test_only_one_of_racing_create_if_absent_writes_wins(gcs_server, gcs_root):
    store = _store(gcs_server)
    key = _key(gcs_server, gcs_root, "_delta_log/00000000000000000001.json")
    results = _race(lambda i: obstore.put(store, key, f"writer {i}".encode(), mode="create"), RACERS)
    winners = [i for i, r in enumerate(results) if r is None]
    assert len(winners) == 1, results
    assert all(type(r).__name__ == "AlreadyExistsError" for r in results if r is not None), results
    assert bytes(obstore.get(store, key).bytes()) == f"writer {winners[0]}".encode()


def test_a_write_conditional_on_a_stale_generation_is_rejected(gcs_server, gcs_root):
    store = _store(gcs_server)
    key = _key(gcs_server, gcs_root, "lease/1.json")
    first = obstore.put(store, key, b"one", mode="create")
    assert first["version"] is not None  # the generation, which GCS's compare-and-swap names
    obstore.put(store, key, b"two", mode={"e_tag": first["e_tag"], "version": first["version"]})
    with pytest.raises(Exception) as stale:
        obstore.put(store, key, b"three", mode={"e_tag": first["e_tag"], "version": first["version"]})
    assert type(stale.value).__name__ == "PreconditionError"
    assert bytes(obstore.get(store, key).bytes()) == b"two"


def test_listing_starts_after_the_given_name(gcs_server, gcs_root):
    store = _store(gcs_server)
    names = [_key(gcs_server, gcs_root, f"_delta_log/{v:020}.json") for v in range(4)]
    for name in names:
        obstore.put(store, name, b"{}")
    prefix = _key(gcs_server, gcs_root, "_delta_log/")
    listed = [str(m["path"]) for batch in obstore.list(store, prefix=prefix, offset=names[1]) for m in batch]
    assert sorted(listed) == names[2:]


def test_racing_delta_appends_with_default_options_all_survive(gcs_server, gcs_root):
    """delta-rs commits with a conditional create of the next log entry; a loser retries on the
    next version. Were the server to accept both writes of one version, rows would be lost."""
    options = gcs_server.storage_options()
    write_deltalake(gcs_root, pa.table({"writer": [-1]}), storage_options=options)
    results = _race(lambda i: write_deltalake(gcs_root, pa.table({"writer": [i]}), mode="append",
                                              storage_options=options), RACERS)
    assert results == [None] * RACERS
    table = DeltaTable(gcs_root, storage_options=options)
    assert sorted(table.to_pyarrow_table()["writer"].to_pylist()) == [-1, *range(RACERS)]
    assert table.version() == RACERS


def test_a_large_object_written_in_parts_reads_back_whole(gcs_server, gcs_root):
    """Big data files go up as XML multipart uploads (object_store's put_multipart)."""
    store = _store(gcs_server)
    key = _key(gcs_server, gcs_root, "data/big.parquet")
    data = bytes(range(256)) * (12 * 1024 * 1024 // 256)  # 12 MiB: more than one 5 MiB part
    obstore.put(store, key, data, chunk_size=5 * 1024 * 1024, use_multipart=True)
    assert bytes(obstore.get(store, key).bytes()) == data
    assert gcs_server.request_counts().get("POST", 0) >= 2  # initiate and complete


def test_a_request_signed_by_an_unknown_key_is_refused(gcs_server, gcs_root):
    store = _store(gcs_server, gcs_server.unknown_key_file.read_text())
    with pytest.raises(Exception) as refused:
        obstore.put(store, _key(gcs_server, gcs_root, "x"), b"x")
    assert type(refused.value).__name__ == "UnauthenticatedError", refused.value
    assert [m for batch in obstore.list(_store(gcs_server), prefix=gcs_root.removeprefix("gs://lakehouse/"))
            for m in batch] == []
