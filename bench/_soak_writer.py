"""The soak bench's source writer, in a process of its own (see `bench.soak_bench`).

``python -m bench._soak_writer DSN ARGS_JSON``: commits ``rate`` changes per second for
``seconds``, in transactions of ``tx_changes`` changes, each transaction on the next table of
``tables`` (round robin). A transaction's changes are 20% inserts of new ids, 70% updates and 10%
deletes of live ids (one statement per kind). Transactions are paced against the clock; when the
server falls behind the schedule the writer does not burst to catch up, it skips the missed
slots (so the achieved rate is what the machine sustained). Prints one ``PROGRESS`` JSON line
every 10 s and a ``RESULT`` JSON line at the end.
"""

from __future__ import annotations

import json
import random
import sys
import time

import psycopg

INSERT = ("INSERT INTO public.{t} (id, rev, payload, updated_at) "
          "SELECT i, r, 'payload ' || r, now() FROM unnest(%s::bigint[], %s::bigint[]) AS u(i, r)")
UPDATE = ("UPDATE public.{t} AS x SET rev = u.r, payload = 'payload ' || u.r, updated_at = now() "
          "FROM unnest(%s::bigint[], %s::bigint[]) AS u(i, r) WHERE x.id = u.i")
DELETE = "DELETE FROM public.{t} WHERE id = ANY(%s::bigint[])"


def main() -> None:
    dsn, args = sys.argv[1], json.loads(sys.argv[2])
    rate, seconds, per_tx = float(args["rate"]), float(args["seconds"]), int(args["tx_changes"])
    tables: list[str] = list(args["tables"])
    keys = int(args["keys"])
    live = {t: list(range(1, keys + 1)) for t in tables}
    next_id = {t: keys + 1 for t in tables}
    rng = random.Random(7)
    interval = per_tx / rate
    changes = skipped = rev = 0
    counts = {"insert": 0, "update": 0, "delete": 0}
    with psycopg.connect(dsn, autocommit=False) as conn:
        start = time.monotonic()
        slot, last_report = 0, start
        while True:
            due = start + slot * interval
            now = time.monotonic()
            if due - start >= seconds:
                break
            if due > now:
                time.sleep(due - now)
            elif now - due > interval:  # behind: drop the missed slots instead of bursting
                missed = int((now - due) / interval)
                skipped += missed
                slot += missed
            table = tables[slot % len(tables)]
            ids, inserts, updates, deletes = live[table], [], [], []
            chosen: set[int] = set()
            for _ in range(per_tx):
                roll = rng.random()
                if roll < 0.2 or len(ids) < 100:
                    inserts.append(next_id[table])
                    next_id[table] += 1
                    continue
                pos = rng.randrange(len(ids))
                if ids[pos] in chosen:
                    inserts.append(next_id[table])
                    next_id[table] += 1
                    continue
                chosen.add(ids[pos])
                if roll < 0.9:
                    updates.append(ids[pos])
                else:
                    deletes.append(ids[pos])
                    ids[pos] = ids[-1]
                    ids.pop()
            with conn.cursor() as cur:
                if inserts:
                    revs = list(range(rev, rev + len(inserts)))
                    rev += len(inserts)
                    cur.execute(INSERT.format(t=table), (inserts, revs))
                if updates:
                    revs = list(range(rev, rev + len(updates)))
                    rev += len(updates)
                    cur.execute(UPDATE.format(t=table), (updates, revs))
                if deletes:
                    cur.execute(DELETE.format(t=table), (deletes,))
            conn.commit()
            ids.extend(inserts)
            counts["insert"] += len(inserts)
            counts["update"] += len(updates)
            counts["delete"] += len(deletes)
            changes += per_tx
            slot += 1
            if time.monotonic() - last_report >= 10:
                last_report = time.monotonic()
                elapsed = last_report - start
                print("PROGRESS " + json.dumps({"seconds": elapsed, "changes": changes,
                                                "rate": changes / elapsed}), flush=True)
    elapsed = time.monotonic() - start
    print("RESULT " + json.dumps({"changes": changes, "seconds": elapsed, "rate": changes / elapsed,
                                  "skipped_transactions": skipped, **counts}), flush=True)


if __name__ == "__main__":
    main()
