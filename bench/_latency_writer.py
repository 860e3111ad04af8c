"""The latency scenario's source writer, in a process of its own (see `bench.silver_latency`).

``python -m bench._latency_writer DSN ARGS_JSON OUT``: commits ``rate`` changes per second to
``public.items`` for ``seconds``, in transactions of ``tx_changes`` changes (each one statement:
an ``INSERT ... ON CONFLICT DO UPDATE`` of distinct ids, 20% new ids, 80% updates of existing
ones). Every change gets the next ``rev`` (a global counter written into the row), so a silver
row's ``rev`` names the last change applied to it. Transactions are paced against the clock
(no catching up by bursts beyond the schedule). Writes one JSON line per transaction to OUT:
``{"t": wall time right after COMMIT returned, "rev": first rev, "ids": [...]}``.
"""

from __future__ import annotations

import json
import random
import sys
import time

import psycopg

UPSERT = ("INSERT INTO public.items (id, rev, payload, updated_at) "
          "SELECT * FROM unnest(%s::bigint[], %s::bigint[], %s::text[], %s::timestamptz[]) "
          "ON CONFLICT (id) DO UPDATE SET rev = excluded.rev, payload = excluded.payload, "
          "updated_at = excluded.updated_at")


def main() -> None:
    dsn, args, out_path = sys.argv[1], json.loads(sys.argv[2]), sys.argv[3]
    rate, seconds, per_tx = float(args["rate"]), float(args["seconds"]), int(args["tx_changes"])
    next_id, rev = int(args["keys"]) + 1, int(args.get("first_rev", 1))
    rng = random.Random(5)
    interval = per_tx / rate
    with psycopg.connect(dsn, autocommit=True) as conn, open(out_path, "w") as out:
        start = time.monotonic()
        i = 0
        while True:
            due = start + i * interval
            now = time.monotonic()
            if due - start >= seconds:
                break
            if due > now:
                time.sleep(due - now)
            ids: list[int] = []
            seen: set[int] = set()
            while len(ids) < per_tx:
                if rng.random() < 0.2:
                    k = next_id
                    next_id += 1
                else:
                    k = rng.randrange(1, next_id)
                if k not in seen:
                    seen.add(k)
                    ids.append(k)
            revs = list(range(rev, rev + per_tx))
            conn.execute(UPSERT, (ids, revs, [f"payload {r}" for r in revs], [None] * per_tx))
            out.write(json.dumps({"t": time.time(), "rev": rev, "ids": ids}) + "\n")
            rev += per_tx
            i += 1
    print("RESULT " + json.dumps({"transactions": i, "changes": rev - int(args.get("first_rev", 1)),
                                  "seconds": time.monotonic() - start}), flush=True)


if __name__ == "__main__":
    main()
