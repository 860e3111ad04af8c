"""Decode throughput of the pgoutput decoder on recorded payloads.

Replays payloads recorded from a real server (``tests/cases/postgres/pgoutput/``) through
`cdc_sources.postgres.pgoutput.decode` and prints messages/s and µs/message per payload kind,
plus a whole recorded transaction mix. Thread CPU time is reported next to wall time, because
on a shared machine wall time also measures the neighbours.

Usage::

    /tmp/venv/bin/python bench/pgoutput_decode.py [--seconds 1.0]
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable
from pathlib import Path

from cdc_sources.postgres import pgoutput

CASES = Path(__file__).resolve().parent.parent / "tests" / "cases" / "postgres" / "pgoutput"


def payloads(case: str) -> list[bytes]:
    data = json.loads((CASES / f"{case}.json").read_text())
    return [bytes.fromhex(m["payload"]) for m in data["messages"]]


def first(case: str, kind: bytes) -> bytes:
    return next(p for p in payloads(case) if p[:1] == kind)


def longest(case: str, kind: bytes) -> bytes:
    return max((p for p in payloads(case) if p[:1] == kind), key=len)


def measure(label: str, batch: list[bytes], seconds: float, decode: Callable[[bytes], object]) -> None:
    rounds = 0
    wall0, cpu0 = time.perf_counter(), time.thread_time()
    while time.perf_counter() - wall0 < seconds:
        for p in batch:
            decode(p)
        rounds += 1
    wall, cpu = time.perf_counter() - wall0, time.thread_time() - cpu0
    n = rounds * len(batch)
    print(f"{label:44s} {n / wall:>11,.0f} msg/s  {wall / n * 1e6:6.2f} µs wall  "
          f"{cpu / n * 1e6:6.2f} µs cpu  ({n:,} msgs)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=1.0, help="time per measurement")
    args = parser.parse_args()
    decode = pgoutput.decode
    single = {
        "Insert, 6 columns (typical_rows)": first("typical_rows", b"I"),
        "Update, 6 columns, no old tuple (typical_rows)": first("typical_rows", b"U"),
        "Delete, key only (typical_rows)": first("typical_rows", b"D"),
        "Insert, 20 columns (insert_values)": first("insert_values", b"I"),
        "Update, FULL old + new, 4 columns (update_full)": first("update_full", b"U"),
        "Update, 19 kB, old and new row (unchanged_toast)": longest("unchanged_toast", b"U"),
        "Update, unchanged TOAST column (unchanged_toast)": first("unchanged_toast", b"U"),
        "Begin": first("typical_rows", b"B"),
        "Commit": first("typical_rows", b"C"),
    }
    for label, payload in single.items():
        measure(label, [payload] * 100, args.seconds, decode)
    mix = payloads("typical_rows") + payloads("multi_statement_txn")
    measure(f"mix of {len(mix)} recorded messages (B R I U D C)", mix, args.seconds, decode)
    stream = pgoutput.PgOutputDecoder()
    measure("v2 streamed Inserts (PgOutputDecoder)", payloads("stream_v2"), args.seconds, stream.decode)


if __name__ == "__main__":
    main()
