"""The latency scenario's streaming driver: `silver.streaming.start_stream` on classic Spark.

``python -m bench._stream_child ARGS_JSON``: starts the Structured Streaming query of one silver
table (processing-time trigger) on a classic session with Delta, and runs until the file
``stop_file`` appears; then stops the query and the session and prints ``RESULT {...}`` with
every micro-batch's progress (batch id, rows, durations) as Spark reported it.
"""

from __future__ import annotations

import json
import os
import sys
import time
from typing import Any

from bench._silver_child import engine_spec, install_step_timers
from pipelines.engine import create_session, stop_session
from silver.declarations import SilverOptions, SilverTable
from silver.increment import apply_increment
from silver.streaming import StreamSettings, start_stream


def main() -> None:
    args: dict[str, Any] = json.loads(sys.argv[1])
    started = time.monotonic()
    spark = create_session(engine_spec("spark", args["shuffle_partitions"], args.get("classic_conf")))
    session_start_s = time.monotonic() - started
    decl = SilverTable(table=args["table"], source=args["topic"])
    settings = StreamSettings(checkpoint_location=args["checkpoint"], trigger="processing_time",
                              interval_seconds=float(args["trigger"]))
    batches: dict[int, dict[str, Any]] = {}
    error = None
    # every step of the apply timed (summed over the run; the apply itself counted per batch)
    totals = install_step_timers()
    import silver.increment
    import silver.streaming

    timed_load = silver.streaming.load_topic_schemas

    def schemas(*a: Any, **k: Any) -> Any:
        t = time.monotonic()
        try:
            return timed_load(*a, **k)
        finally:
            totals["schema history read"] = totals.get("schema history read", 0.0) + time.monotonic() - t

    silver.streaming.load_topic_schemas = schemas  # type: ignore[assignment]
    applies: list[dict[str, Any]] = []

    def apply_fn(*a: Any, **k: Any) -> Any:
        before = dict(totals)
        t = time.monotonic()
        try:
            return silver.increment.apply_increment(*a, **k)
        finally:
            steps = {key: round(v - before.get(key, 0.0), 3) for key, v in totals.items()
                     if v - before.get(key, 0.0) > 0}
            applies.append({"at": time.time(), "apply_s": time.monotonic() - t, "steps_s": steps})

    assert apply_fn is not apply_increment
    try:
        query = start_stream(spark, root=args["root"], decl=decl, source=args["source"], options=SilverOptions(),
                             settings=settings, apply_fn=apply_fn)
        print(f"stream started after {session_start_s:.1f}s", flush=True)
        while not os.path.exists(args["stop_file"]):
            for p in query.recentProgress:
                batches[int(p.batchId)] = {"batch": p.batchId, "rows": p.numInputRows, "timestamp": p.timestamp,
                                           "duration_ms": dict(p.durationMs)}
            if query.exception() is not None:
                error = str(query.exception())
                break
            time.sleep(0.5)
        for p in query.recentProgress:
            batches[int(p.batchId)] = {"batch": p.batchId, "rows": p.numInputRows, "timestamp": p.timestamp,
                                       "duration_ms": dict(p.durationMs)}
        query.stop()
    finally:
        stop_session(spark)
    print("RESULT " + json.dumps({"session_start_s": session_start_s, "error": error, "step_totals_s": totals,
                                  "apply_s": applies,
                                  "batches": [batches[k] for k in sorted(batches)]}), flush=True)


if __name__ == "__main__":
    main()
