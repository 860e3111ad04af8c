"""The Sail server in a child process: a looping run restarts it between passes, over its memory
budget, and silver stays equal to what bronze holds across the restarts."""

from __future__ import annotations

import os
import signal
import threading
import time

import psutil
import pytest
from deltalake import DeltaTable
from pydantic import ValidationError

from pipelines import engine as engine_module
from pipelines import silver_runner
from pipelines.engine import EngineSpec, create_session, server_rss_bytes, stop_session
from pipelines.silver_runner import run_silver
from silver.declarations import SilverOptions, SilverTable
from tests.silver.bronze_builder import BronzeBuilder, int32, string


def test_server_options_apply_to_sail_only():
    assert EngineSpec().sail_in_child(looping=True) and not EngineSpec().sail_in_child(looping=False)
    assert EngineSpec(server="process").sail_in_child(looping=False)
    assert not EngineSpec(server="embedded").sail_in_child(looping=True)
    assert not EngineSpec(kind="spark").sail_in_child(looping=True)
    with pytest.raises(ValidationError, match="server_memory_mb only apply to kind 'sail', not 'spark'"):
        EngineSpec(kind="spark", server_memory_mb=512)
    with pytest.raises(ValidationError, match="greater than 0"):
        EngineSpec(server_memory_mb=0)


def _children() -> set[int]:
    return {p.pid for p in psutil.Process().children(recursive=True)}


@pytest.mark.spark
def test_a_child_server_session_reports_its_memory_and_stops_with_the_session():
    before = _children()
    spark = create_session(EngineSpec(), looping=True)
    try:
        started = _children() - before
        assert len(started) == 1
        rss = server_rss_bytes(spark)
        assert rss is not None and rss > 10 * 2**20  # a real server process, not this one
        assert spark.range(5).count() == 5
    finally:
        stop_session(spark)
    assert not (_children() & started)  # the server process is gone


@pytest.mark.spark
def test_the_server_process_outlives_signals_to_the_group_and_stops_when_the_session_does():
    spark = create_session(EngineSpec(server="process"))
    child = engine_module._OWNED[id(spark)].child
    assert child is not None
    done: list[int] = []
    try:
        for sig in (signal.SIGINT, signal.SIGTERM):  # Ctrl-C, a service manager stopping the group
            os.kill(child.process.pid, sig)
        time.sleep(0.5)
        query = threading.Thread(target=lambda: done.append(spark.range(3).count()), daemon=True)
        query.start()
        query.join(60)  # a server that stopped serving leaves its client retrying for minutes
    finally:
        if done:
            stop_session(spark)
        else:  # the session cannot be stopped cleanly: end its server, leave the client
            engine_module._OWNED.pop(id(spark), None)
            child.process.kill()
            child.process.wait()
    assert done == [3], "the server stopped serving after the signals"
    assert child.process.returncode == 0


@pytest.mark.spark
def test_a_looping_run_restarts_the_server_over_budget_and_silver_stays_equal_to_bronze(tmp_path, monkeypatch):
    monkeypatch.setattr(silver_runner, "LOOP_PASSES_KEPT", 1000)
    root = str(tmp_path)
    b = BronzeBuilder(root, table="t")
    b.register([int32("id", optional=False), string("v")], ["id"])
    expected: dict[int, str] = {}
    for i in range(1, 41):
        b.insert({"id": i, "v": f"a{i}"})
        expected[i] = f"a{i}"
    b.commit()
    servers: set[int] = set()
    real_create = silver_runner.create_session

    def create(spec: EngineSpec, *, looping: bool = False):  # note each server process the run starts
        before = _children()
        spark = real_create(spec, looping=looping)
        servers.update(_children() - before)
        return spark

    monkeypatch.setattr(silver_runner, "create_session", create)
    stop, lines, out = threading.Event(), [], {}
    engine = EngineSpec(server_memory_mb=1)  # any real server is over 1 MB: a restart after every pass

    def go():
        out["r"] = run_silver(root=root, engine=engine, tables=[SilverTable(table="t", source=b.topic)],
                              options=SilverOptions(interval_seconds=0.1), sources={"shop": "shop"}, once=False,
                              stop=stop, progress=lines.append)

    thread = threading.Thread(target=go)
    thread.start()
    try:
        _wait(lambda: sum("restarted" in line for line in lines) >= 1, thread, lines)
        for i in range(1, 21):  # changes committed while the run restarts its server
            b.update({"id": i, "v": f"b{i}"})
            expected[i] = f"b{i}"
        for i in range(31, 41):
            b.delete({"id": i})
            del expected[i]
        b.commit()
        _wait(lambda: sum("restarted" in line for line in lines) >= 3, thread, lines)
        for i in range(41, 51):
            b.insert({"id": i, "v": f"c{i}"})
            expected[i] = f"c{i}"
        b.commit()
        _wait(lambda: sum("restarted" in line for line in lines) >= 5, thread, lines)
    finally:
        stop.set()
        thread.join(120)
    result = out["r"]
    assert result.ok and result.server_restarts >= 5 and len(servers) == result.server_restarts + 1
    assert not (_children() & servers)  # every server process the run started has exited
    bronze_rows = DeltaTable(b.path).to_pyarrow_dataset().count_rows()  # deletes add a tombstone each
    assert sum(t.events for t in result.tables) == bronze_rows == 40 + 20 + 2 * 10 + 10  # each read once
    rows = DeltaTable(f"{root}/silver/t").to_pyarrow_table(columns=["id", "v"]).to_pylist()
    assert {r["id"]: r["v"] for r in rows} == expected and len(rows) == len(expected)


def _wait(done, thread: threading.Thread, lines: list[str], timeout: float = 180) -> None:
    deadline = time.monotonic() + timeout
    while not done():
        assert thread.is_alive(), f"the looping run ended early: {lines[-5:]}"
        assert time.monotonic() < deadline, f"not reached in {timeout}s: {lines[-5:]}"
        time.sleep(0.05)
