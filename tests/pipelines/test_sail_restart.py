"""Restarting the Sail server between passes: a failed start is retried, and restarts are counted
in the metrics server's ``cdc_lakehouse_sail_server_*_total`` counters."""

from __future__ import annotations

import threading
import time
import urllib.request

import pytest
from deltalake import DeltaTable
from prometheus_client.parser import text_string_to_metric_families

from cdc_sources.spi import EngineError
from cdc_sources.spi.retry import RetryPolicy
from pipelines import sail_process, silver_runner
from pipelines.engine import EngineSpec
from pipelines.metrics import CaptureMetrics, exported_names
from pipelines.metrics_http import MetricsServer
from pipelines.sail_restart import SailServerStats, restart_server
from pipelines.silver_runner import run_silver
from silver.declarations import SilverOptions, SilverTable
from tests.silver.bronze_builder import BronzeBuilder, int32, string


def _failing_start() -> object:
    raise EngineError("the Sail server process did not start (exit code 1)")


def test_a_server_that_never_starts_again_ends_the_restart_with_an_error_after_the_policy_retries():
    stats, lines = SailServerStats(), []
    began = time.monotonic()
    with pytest.raises(EngineError, match=r"did not start again after 3 attempt\(s\); the last one: the Sail "
                                          r"server process did not start \(exit code 1\)$"):
        restart_server(_failing_start, stats=stats, say=lines.append,  # type: ignore[arg-type]
                       policy=RetryPolicy(max_retries=2, initial_delay_ms=50, max_delay_ms=80))
    assert time.monotonic() - began >= 0.05 + 0.08  # waited the policy's delays: 50 ms, then doubled and capped
    assert stats.counts() == (0, 3)
    assert [line.rsplit(" ", 1)[-1] for line in lines] == ["0.1s", "0.1s"]  # 0.05 s, then 0.08 s (capped), rounded
    assert [line.split("; ")[1].split(" in ")[0] for line in lines] == ["retry 1", "retry 2"]


def test_a_stop_request_ends_the_waits_between_restart_attempts():
    stop = threading.Event()
    stop.set()
    began = time.monotonic()
    with pytest.raises(EngineError, match="stopped while restarting the Sail server process"):
        restart_server(_failing_start, stats=SailServerStats(), say=lambda _l: None,  # type: ignore[arg-type]
                       stop=stop, policy=RetryPolicy(max_retries=5, initial_delay_ms=5_000, max_delay_ms=10_000))
    assert time.monotonic() - began < 2


def _scrape(port: int) -> dict[str, float]:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
        text = r.read().decode()
    families = list(text_string_to_metric_families(text))
    assert {f.name for f in families} <= exported_names()
    return {s.name: s.value for f in families for s in f.samples}


@pytest.mark.spark
def test_restarts_whose_first_starts_fail_are_retried_counted_and_lose_nothing(tmp_path, monkeypatch):
    root = str(tmp_path)
    b = BronzeBuilder(root, table="t")
    b.register([int32("id", optional=False), string("v")], ["id"])
    expected = {i: f"a{i}" for i in range(1, 21)}
    for i, v in expected.items():
        b.insert({"id": i, "v": v})
    b.commit()
    starts = {"calls": 0, "ok": 0}
    real_create = silver_runner.create_session
    fail_calls = {2, 3}  # the first restart's first two starts: the server misses its start timeout

    def create(spec: EngineSpec, *, looping: bool = False):
        starts["calls"] += 1
        with monkeypatch.context() as m:
            if starts["calls"] in fail_calls:
                m.setattr(sail_process, "_START_TIMEOUT_S", 0.0)  # a real server process, killed for being late
            spark = real_create(spec, looping=looping)
        starts["ok"] += 1
        return spark

    monkeypatch.setattr(silver_runner, "create_session", create)
    metrics = CaptureMetrics()
    server = MetricsServer(metrics, 0, "127.0.0.1").start()
    stop, lines, out = threading.Event(), [], {}

    def go():
        out["r"] = run_silver(root=root, engine=EngineSpec(server_memory_mb=1),  # a restart after every pass
                              tables=[SilverTable(table="t", source=b.topic)],
                              options=SilverOptions(interval_seconds=0.1), sources={"shop": "shop"}, once=False,
                              stop=stop, progress=lines.append, server_stats=metrics.sail_server)

    thread = threading.Thread(target=go)
    thread.start()
    try:
        deadline = time.monotonic() + 240
        while starts["ok"] < 3:  # the first server and two restarted ones
            assert thread.is_alive(), f"the looping run ended early: {lines[-5:]}"
            assert time.monotonic() < deadline, f"no second restart in 240 s: {lines[-5:]}"
            time.sleep(0.05)
        for i in range(1, 11):  # changes committed after the restarts: a restarted server applies them
            b.update({"id": i, "v": f"b{i}"})
            expected[i] = f"b{i}"
        b.commit()
        while _silver(root) != expected:
            assert thread.is_alive(), f"the looping run ended early: {lines[-5:]}"
            assert time.monotonic() < deadline + 120, f"silver never got the updates: {lines[-5:]}"
            time.sleep(0.2)
    finally:
        stop.set()
        thread.join(120)
    try:
        scraped = _scrape(server.port)
    finally:
        server.close()
    result = out["r"]
    assert result.ok
    assert result.server_restarts == starts["ok"] - 1 >= 2
    assert scraped["cdc_lakehouse_sail_server_restarts_total"] == starts["ok"] - 1
    assert scraped["cdc_lakehouse_sail_server_start_failures_total"] == len(fail_calls)
    assert sum("did not start" in line and "retry" in line for line in lines) == len(fail_calls)
    assert sum(t.events for t in result.tables) == 20 + 10  # every bronze row applied once across the restarts


def _silver(root: str) -> dict[int, str] | None:
    try:
        rows = DeltaTable(f"{root}/silver/t").to_pyarrow_table(columns=["id", "v"]).to_pylist()
    except Exception:  # not created yet
        return None
    return {r["id"]: r["v"] for r in rows}
