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
from dataclasses import asdict, replace

import orjson
import pytest

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


def _stale(root: str, source: str, **changes: object) -> LeaseRecord:
    """Write generation 1 of a lease held by another host, renewed an hour ago."""
    now = dt.datetime.now(dt.UTC)
    record = LeaseRecord(source=source, generation=1, host="other-host", pid=4242, started=0.0, token="t",
                         acquired_at=(now - dt.timedelta(hours=2)).isoformat(),
                         renewed_at=(now - dt.timedelta(hours=1)).isoformat(), ttl_s=30.0)
    record = replace(record, **changes)  # type: ignore[arg-type]
    os.makedirs(lease_dir(root, source), exist_ok=True)
    with open(os.path.join(lease_dir(root, source), "00000000000000000001.json"), "wb") as f:
        f.write(orjson.dumps(asdict(record)))
    return record


def test_an_expired_lease_of_another_host_is_taken_over_with_a_warning(tmp_path, caplog):
    root = str(tmp_path)
    _stale(root, "s")
    lease = leases.acquire(root, "s")
    try:
        assert isinstance(lease, leases.Lease) and lease.record.generation == 2
        assert "taking over the writer lease of capture on host other-host pid 4242" in caplog.text
        assert "it expired" in caplog.text
        assert sorted(os.listdir(lease_dir(root, "s"))) == ["00000000000000000002.json"]
    finally:
        lease.release()


def test_a_live_lease_of_another_host_is_refused_until_it_expires(tmp_path):
    root = str(tmp_path)
    now = dt.datetime.now(dt.UTC).isoformat()
    _stale(root, "s", renewed_at=now, acquired_at=now)
    with pytest.raises(LeaseHeldError, match=r"already being written by capture on host other-host pid 4242 since"):
        leases.acquire(root, "s")


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


def test_a_holder_whose_generation_was_reused_after_a_release_knows_it_lost(tmp_path):
    """Suspended holder A is taken over by B, B releases, C starts again at generation 1."""
    root = str(tmp_path)
    a = leases.acquire(root, "s", ttl_s=60)
    assert isinstance(a, leases.Lease)
    store = leases.LocalLeaseStore(a.store.folder)
    store.delete(a.record.generation)  # as B's takeover and release leave it
    c = replace(a.record, host="other-host", pid=1, token="c")
    assert store.create(c)
    a.renew()
    assert a.lost
    a.release()
    assert store.read(1) == c


def test_the_holder_renews_and_notices_when_its_lease_was_taken_over(tmp_path):
    root = str(tmp_path)
    lost = []
    lease = leases.acquire(root, "s", ttl_s=0.3, on_lost=lambda: lost.append(True))
    assert isinstance(lease, leases.Lease)
    renewed = lease.record.renewed_at
    lease.renew()
    assert lease.record.renewed_at > renewed
    # another process presumed this one dead and took generation 2
    taken = replace(lease.record, generation=2, host="other-host", pid=1, token="x")
    assert leases.LocalLeaseStore(lease.store.folder).create(taken)
    lease.renew()
    assert lease.lost and lost == [True]
    with pytest.raises(leases.LeaseLostError, match="another process took over the writer lease"):
        lease.check()
    lease.release()  # does not touch the new holder's lease
    assert leases.LocalLeaseStore(lease.store.folder).read(2) == taken


def _race(root: str, barrier: multiprocessing.synchronize.Barrier, results: multiprocessing.Queue) -> None:
    barrier.wait()
    try:
        lease = leases.acquire(root, "s")
    except LeaseHeldError:
        results.put("refused")
        return
    results.put("won")
    time.sleep(3)  # hold the lease until everyone has tried
    lease.release()


def test_of_processes_racing_for_a_stale_lease_exactly_one_wins(tmp_path):
    root = str(tmp_path)
    _stale(root, "s")
    ctx = multiprocessing.get_context("fork")
    n = 6
    barrier, results = ctx.Barrier(n), ctx.Queue()
    procs = [ctx.Process(target=_race, args=(root, barrier, results)) for _ in range(n)]
    for p in procs:
        p.start()
    outcomes = [results.get(timeout=60) for _ in range(n)]
    for p in procs:
        p.join(30)
    assert sorted(outcomes) == ["refused"] * (n - 1) + ["won"]
