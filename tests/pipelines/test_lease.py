"""One writer per source: the lease in the lakehouse (`pipelines.lease`).

End to end with two real ``cdc-lakehouse capture`` processes of one PostgreSQL source, and the
lease rules on real files: expiry, a holder gone from this host, a lost lease, a race.
"""

from __future__ import annotations

import datetime as dt
import multiprocessing
import os
import re
import socket
import time
from dataclasses import replace
from pathlib import Path
from typing import Any, cast

import pytest
from obstore.store import LocalStore

from pipelines import lease as leases
from pipelines.lease import LeaseHeldError, LeaseRecord, lease_dir
from tests.pipelines.exactly_once_support import CaptureProcess, create_schema, pipeline_yaml


def _names(pg_db: str) -> str:
    return "c_" + dict(p.split("=", 1) for p in pg_db.split())["dbname"][-40:]


@pytest.mark.integration
@pytest.mark.postgres
def test_a_second_capture_is_refused_and_a_killed_holder_is_taken_over(pg_db, tmp_path):
    root = str(tmp_path / "lake")
    create_schema(pg_db, big=10, accounts=10, orders=10)
    config = tmp_path / "pipeline.yaml"
    config.write_text(pipeline_yaml(root, pg_db, slot=_names(pg_db), interval_ms=100, max_records=100))
    first = CaptureProcess(config, tmp_path / "first")
    second = CaptureProcess(config, tmp_path / "second")
    third = CaptureProcess(config, tmp_path / "third")
    for c in (first, second, third):
        c.logs.mkdir()
    try:
        first.start_planned()
        second.start()
        assert second.proc is not None
        assert second.proc.wait(60) == 1, second.tail()
        err = second.stderr.read_text()
        holder = re.search(r"already being written by capture on host (\S+) pid (\d+) since (\S+)", err)
        assert holder is not None, err
        assert holder[1] == socket.gethostname() and int(holder[2]) == first.proc.pid
        since = dt.datetime.fromisoformat(holder[3])
        assert abs((dt.datetime.now(dt.UTC) - since).total_seconds()) < 120
        assert "Traceback" not in err
        assert first.running, "the refused capture disturbed the running one"
        first.kill_running()
        third.run_until_idle(timeout=120)
        err = third.stderr.read_text()
        assert f"taking over the writer lease of capture on host {socket.gethostname()} pid {first.proc.pid}" in err
        assert "that process is gone" in err
    finally:
        for c in (first, second, third):
            if c.running:
                c.kill()


STORES = ["local", "obstore"]


def make_store(kind: str, root: str, source: str = "s") -> leases.LeaseStore:
    """A store of the source's lease files: the local one, or obstore's (conditional puts)."""
    folder = lease_dir(root, source)
    if kind == "local":
        return leases.LocalLeaseStore(Path(folder))
    os.makedirs(folder, exist_ok=True)
    return leases.ObjectLeaseStore(LocalStore(folder), "")


def _stale(store: leases.LeaseStore, source: str = "s", **changes: object) -> LeaseRecord:
    """Generation 1 of a lease held by another host, renewed an hour ago."""
    now = dt.datetime.now(dt.UTC)
    record = LeaseRecord(source=source, generation=1, host="other-host", pid=4242, started=0.0, token="t",
                         acquired_at=(now - dt.timedelta(hours=2)).isoformat(),
                         renewed_at=(now - dt.timedelta(hours=1)).isoformat(), ttl_s=30.0)
    record = replace(record, **changes)  # type: ignore[arg-type]
    assert store.create(record)
    return record


@pytest.mark.parametrize("kind", STORES)
def test_an_expired_lease_of_another_host_is_taken_over_with_a_warning(tmp_path, caplog, kind):
    store = make_store(kind, str(tmp_path))
    _stale(store)
    lease = leases.acquire_in(store, "s")
    try:
        assert lease.record.generation == 2
        assert "taking over the writer lease of capture on host other-host pid 4242" in caplog.text
        assert "it expired" in caplog.text
        assert store.generations() == [2]
    finally:
        lease.release()


@pytest.mark.parametrize("kind", STORES)
def test_a_live_lease_of_another_host_is_refused_until_it_expires(tmp_path, kind):
    store = make_store(kind, str(tmp_path))
    now = dt.datetime.now(dt.UTC).isoformat()
    _stale(store, renewed_at=now, acquired_at=now)
    with pytest.raises(LeaseHeldError, match=r"already being written by capture on host other-host pid 4242 since"):
        leases.acquire_in(store, "s")


def test_a_released_lease_is_taken_without_warning_and_release_leaves_nothing(tmp_path, caplog):
    root = tmp_path / "lake"
    root.mkdir()
    first = leases.acquire(str(root), "s")
    assert os.listdir(lease_dir(str(root), "s"))
    first.release()
    assert list(root.iterdir()) == []  # the lease folders are gone: a failed capture writes nothing
    second = leases.acquire(str(root), "s")
    second.release()
    assert "taking over" not in caplog.text


@pytest.mark.parametrize("kind", STORES)
def test_the_holder_renews_and_notices_when_its_lease_was_taken_over(tmp_path, kind):
    store = make_store(kind, str(tmp_path))
    lost = []
    lease = leases.acquire_in(store, "s", ttl_s=0.3, on_lost=lambda: lost.append(True))
    renewed = lease.record.renewed_at
    time.sleep(0.01)
    lease.renew()
    assert lease.record.renewed_at > renewed and store.read(1) == lease.record
    # another process presumed this one dead and took generation 2
    taken = replace(lease.record, generation=2, host="other-host", pid=1, token="x")
    assert store.create(taken)
    lease.renew()
    assert lease.lost and lost == [True]
    with pytest.raises(leases.LeaseLostError, match="another process took over the writer lease"):
        lease.check()
    lease.release()  # does not touch the new holder's lease
    assert store.read(2) == taken


@pytest.mark.parametrize("kind", STORES)
def test_a_holder_whose_generation_was_reused_after_a_release_knows_it_lost(tmp_path, kind):
    """Suspended holder A is taken over by B, B releases, C starts again at generation 1."""
    store = make_store(kind, str(tmp_path))
    a = leases.acquire_in(store, "s", ttl_s=60)
    store.delete(a.record.generation)  # as B's takeover and release leave it
    c = replace(a.record, host="other-host", pid=1, token="c")
    assert store.create(c)
    a.renew()
    assert a.lost
    a.release()
    assert store.read(1) == c


def _race(kind: str, root: str, barrier: Any, results: Any) -> None:
    store = make_store(kind, root)
    barrier.wait()
    try:
        lease = leases.acquire_in(store, "s")
    except LeaseHeldError:
        results.put("refused")
        return
    results.put("won")
    time.sleep(3)  # hold the lease until everyone has tried
    lease.release()


@pytest.mark.parametrize("kind", STORES)
def test_of_processes_racing_for_a_stale_lease_exactly_one_wins(tmp_path, kind):
    root = str(tmp_path)
    _stale(make_store(kind, root))
    ctx = multiprocessing.get_context("spawn")  # obstore's runtime does not survive a fork
    n = 6
    barrier, results = ctx.Barrier(n), ctx.Queue()
    procs = [ctx.Process(target=_race, args=(kind, root, barrier, results)) for _ in range(n)]
    for p in procs:
        p.start()
    outcomes = [results.get(timeout=60) for _ in range(n)]
    for p in procs:
        p.join(30)
    assert sorted(outcomes) == ["refused"] * (n - 1) + ["won"]


def test_an_object_store_root_opens_obstore_without_delta_rs_only_options(caplog):
    options = {"AWS_ACCESS_KEY_ID": "AKIAEXAMPLE", "AWS_SECRET_ACCESS_KEY": "s3cr3t-value", "aws_region": "eu-west-1",
               "AWS_S3_LOCKING_PROVIDER": "dynamodb", "AWS_S3_ALLOW_UNSAFE_RENAME": "true"}
    store = leases.open_store("s3://bucket/lake", "src", options)
    assert isinstance(store, leases.ObjectLeaseStore)
    assert "s3cr3t-value" not in caplog.text


def test_an_object_store_refusal_is_one_line_ending_with_what_the_store_said(gcs_server):
    import obstore
    from obstore.store import GCSStore

    store = GCSStore(gcs_server.bucket, config=cast(Any, {
        "google_service_account_key": gcs_server.unknown_key_file.read_text(), "google_base_url": gcs_server.endpoint}),
        client_options={"allow_http": True})
    with pytest.raises(Exception) as info:  # obstore's UnauthenticatedError: a real 401 of the tests' GCS server
        obstore.get(store, "lease/1.json")
    assert "<?xml" in str(info.value) and "\n" in str(info.value)  # the raw error: the body and a debug dump
    line = leases.first_line(info.value)
    assert line.endswith("401 Unauthorized: the request's credentials were not accepted"), line
    assert "\n" not in line and "<" not in line
