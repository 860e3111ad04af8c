"""How long `cdc-lakehouse verify` takes to compare a table, per side, without capture or silver.

Starts a private PostgreSQL (`pipelines.local_postgres.LocalPostgres`), fills a table of
``--rows`` rows (integer key, text, numeric(12,2), timestamptz, bytea, bigint), builds the Arrow
table silver would hold for it (the same values in silver's types), then times:

* ``source``: the source's bucket sums in SQL (`PostgresReader.bucket_sums`, one statement);
* ``silver``: silver's canonical texts and bucket sums in Python (`compare.silver_side`,
  `compare.bucket_sums`) on the Arrow table;
* ``narrow``: fetching one differing bucket's source rows and comparing them key by key.

The bucket sums of both sides must be equal (checked), which also proves the canonical texts
agree on these types. Prints a table; best of ``--repeat`` runs per step.

    .venv/bin/python -m bench.verify_bench --rows 200000
"""

from __future__ import annotations

import argparse
import datetime as dt
import random
import shutil
import tempfile
import time
from decimal import Decimal
from pathlib import Path

import psycopg
import pyarrow as pa

from cdc_sources.common.column_rules import ColumnRules
from cdc_sources.postgres import build_postgres_config
from pipelines.local_postgres import LocalPostgres
from pipelines.verify import compare
from pipelines.verify.canonical import bucket_of
from pipelines.verify.plan import plan_columns
from pipelines.verify.postgres_source import PostgresReader, postgres_kind
from silver.declarations import SilverTable

SILVER = pa.schema([("id", pa.int32()), ("name", pa.string()), ("amount", pa.decimal128(12, 2)),
                    ("at", pa.timestamp("us", tz="UTC")), ("raw", pa.binary()), ("big", pa.int64()),
                    ("_cdc_seq", pa.int64())])


def rows(n: int) -> list[tuple[object, ...]]:
    rng = random.Random(1)
    base = dt.datetime(2020, 1, 1, tzinfo=dt.UTC)
    return [(i, f"name {rng.randint(0, 10**6)}", Decimal(rng.randint(-10**9, 10**9)).scaleb(-2),
             base + dt.timedelta(microseconds=rng.randint(0, 10**14)), rng.randbytes(8), rng.getrandbits(62))
            for i in range(1, n + 1)]


def best(repeat: int, step: object) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        step()  # type: ignore[operator]
        times.append(time.perf_counter() - started)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--buckets", type=int, default=64)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="verify-bench-"))
    work.chmod(0o755)
    server = LocalPostgres(work / "data").start()
    try:
        data = rows(args.rows)
        with psycopg.connect(server.dsn(), autocommit=True) as conn:
            conn.execute("CREATE TABLE items (id int PRIMARY KEY, name text, amount numeric(12,2), at timestamptz, "
                         "raw bytea, big bigint)")
            with conn.cursor().copy("COPY items FROM STDIN") as copy:
                for row in data:
                    copy.write_row(row)
            conn.execute("VACUUM ANALYZE items")
        parts = dict(p.split("=", 1) for p in server.dsn().split())
        config, problems = build_postgres_config(
            name="pg", connection={"host": "127.0.0.1", "port": int(parts["port"]), "database": parts["dbname"],
                                   "user": parts["user"]}, options={}, path="sources[0]")
        assert config is not None, problems
        columns = list(zip(*data, strict=True))
        silver = pa.table([pa.array(c, f.type) for c, f in zip(columns, SILVER, strict=False)]
                          + [pa.array(range(len(data)), pa.int64())], schema=SILVER)
        decl = SilverTable(table="items", source="pg.public.items")
        reader = PostgresReader(config)
        reader.open()
        source_columns, key = reader.columns("public", "items")
        plan = plan_columns(decl, container="public", table="items", source=source_columns, primary_key=key,
                            silver=SILVER, rules=ColumnRules(), kind_of=postgres_kind)
        out: dict[str, object] = {}
        t_source = best(args.repeat, lambda: out.__setitem__("source", reader.bucket_sums(plan, args.buckets)))

        def silver_side() -> None:
            side = compare.silver_side(plan, decl, silver)
            out["silver"] = compare.bucket_sums(side.rows, args.buckets)
            out["side"] = side

        t_silver = best(args.repeat, silver_side)
        assert out["source"] == out["silver"], "bucket sums differ: the canonical texts disagree"
        side = out["side"]
        assert isinstance(side, compare.SilverSide)

        def narrow() -> None:
            fetched = compare.source_side(plan, reader.rows(plan, buckets=args.buckets, in_buckets=[0]))
            mine = {k: v for k, v in side.rows.items() if bucket_of(k, args.buckets) == 0}
            assert not compare.diff_rows(plan, fetched, mine)

        t_narrow = best(args.repeat, narrow)
        reader.close()
        n = args.rows
        print(f"\nverify bench: {n:,} rows, {len(plan.compared)} compared columns, {args.buckets} key ranges, "
              f"best of {args.repeat}\n")
        print("| step | seconds | rows/s |")
        print("| --- | ---: | ---: |")
        for name, seconds, count in (("source bucket sums (SQL)", t_source, n),
                                     ("silver texts + bucket sums (Python)", t_silver, n),
                                     ("narrow one key range (fetch + compare)", t_narrow, n // args.buckets)):
            print(f"| {name} | {seconds:.2f} | {count / seconds:,.0f} |")
    finally:
        server.stop("immediate")
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
