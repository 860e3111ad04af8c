"""Capture into bronze on a local folder vs on a local S3 server (SeaweedFS), a local Azure
Blob server (Azurite) and a local GCS server, same data.

Starts a private PostgreSQL (`pipelines.local_postgres.LocalPostgres`), a private S3 server
(`pipelines.local_s3.LocalS3`: ``weed server`` on 127.0.0.1, its data on the local disk) and a
private Azure server (`pipelines.local_azure.LocalAzure`: ``azurite-blob`` on 127.0.0.1, its data
on the local disk), a private GCS server (`pipelines.local_gcs.LocalGCS`: fake-gcs-server's
storage behind GCS's XML API, in memory, requests signed with a service-account key) and, for
each lakehouse root (``local``: a folder; ``s3``: ``s3://lakehouse/<run>``; ``azure``:
``az://lakehouse/<run>``; ``gcs``: ``gs://lakehouse/<run>``; ``--stores`` picks), measures:

* ``snapshot``: a table of ``--rows-snapshot`` rows captured by one ``run_capture(until_idle=True)``
  (snapshot, then the stream up to the WAL position at the start);
* ``stream``: ``--rows-stream`` rows inserted in transactions of ``--tx-rows`` rows after the
  slot exists, then streamed by one ``run_capture(until_idle=True)``;
* ``stream, N-row batches``: the same with ``commit_max_records: --batch-rows``, so that many
  batches are committed and the requests per batch are those of a commit (the run's fixed
  requests, lease, status file and table loads, spread thin).

A small warm-up run comes first and is not reported (imports, first connections).

Reported per root and scenario: wall seconds of the capture run, rows per second, batches
committed (one offsets row each; every batch is a Delta commit per bronze table touched plus
one of the offsets table), and for an object store the requests the server counted during the
run (SeaweedFS's metrics, Azurite's access log, the GCS server's counters), by type and per
batch. All roots run on the same machine, so the object-store numbers show the protocol's cost
(more, smaller requests through HTTP and the server) rather than a network's. Prints a markdown
table.

    .venv/bin/python -m bench.object_store_bench --rows-snapshot 50000 --rows-stream 50000
    .venv/bin/python -m bench.object_store_bench --stores azure
    .venv/bin/python -m bench.object_store_bench --stores gcs
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Protocol

import orjson
import psycopg

from bronze.schema import offsets_path
from pipelines.capture import run_capture
from pipelines.config import parse_pipeline
from pipelines.local_azure import LocalAzure
from pipelines.local_gcs import LocalGCS
from pipelines.local_postgres import LocalPostgres
from pipelines.local_s3 import LocalS3

TABLE = """CREATE TABLE bench_rows (id bigint PRIMARY KEY, customer_id integer, quantity integer,
    status smallint, note text, amount numeric(12,2), created_at timestamptz, active boolean)"""
ROWS = """INSERT INTO bench_rows SELECT g, g %% 1000, g %% 17, (g %% 5)::smallint, 'note ' || g,
    (g %% 10000) / 100.0, now(), g %% 2 = 0 FROM generate_series(%s::bigint, %s::bigint) g"""


class Store(Protocol):
    """A local object-store server that counts the requests it served."""

    def request_counts(self) -> dict[str, int]: ...


@dataclass(frozen=True)
class Result:
    root: str
    scenario: str
    rows: int
    seconds: float
    batches: int
    requests: dict[str, int]

    @property
    def rows_per_s(self) -> float:
        return self.rows / self.seconds if self.seconds else 0.0

    @property
    def total_requests(self) -> int:
        return sum(self.requests.values())


def _pipeline(root: str, storage: dict[str, str], server: LocalPostgres, db: str, slot: str,
              max_records: int | None = None) -> str:
    options = "".join(f"    {k}: {orjson.dumps(v).decode()}\n" for k, v in storage.items())  # JSON: YAML-safe
    lakehouse = f'lakehouse:\n  root: "{root}"\n' + (f"  storage_options:\n{options}" if storage else "")
    capture = f"    capture: {{commit_max_records: {max_records}}}\n" if max_records else ""
    return (f"pipeline: bench\n{lakehouse}sources:\n  - name: pg\n    connector: postgres\n"
            f"    connection: {{host: 127.0.0.1, port: {server.port}, database: {db}, user: {server.superuser}}}\n"
            f'    options: {{slot.name: "{slot}", provide.transaction.metadata: "false"}}\n{capture}')


def _batches(root: str, storage: dict[str, str]) -> int:
    from deltalake import DeltaTable

    return DeltaTable(offsets_path(root, "pg"), storage_options=storage or None).to_pyarrow_table(
        columns=["batch"]).num_rows


def _diff(after: dict[str, int], before: dict[str, int]) -> dict[str, int]:
    return {k: after.get(k, 0) - before.get(k, 0) for k in sorted(set(after) | set(before))
            if after.get(k, 0) - before.get(k, 0)}


def _timed_capture(text: str, store: Store | None) -> tuple[float, dict[str, int]]:
    config = parse_pipeline(text, env={})
    before = store.request_counts() if store else {}
    start = time.perf_counter()
    run_capture(config, until_idle=True)
    seconds = time.perf_counter() - start
    return seconds, (_diff(store.request_counts(), before) if store else {})


def _fresh_db(server: LocalPostgres, db: str) -> None:
    with psycopg.connect(server.dsn(), autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {db}")
        conn.execute(f"CREATE DATABASE {db}")
    with psycopg.connect(server.dsn(db), autocommit=True) as conn:
        conn.execute(TABLE)


def _drop_slot(server: LocalPostgres, slot: str) -> None:
    """Free a finished scenario's replication slot: with three roots and repeats the server's
    ``max_replication_slots`` would run out. The capture's walsender may outlive the capture a
    moment on a loaded machine (the slot is still active): wait for it, up to 30 seconds."""
    deadline = time.monotonic() + 30
    with psycopg.connect(server.dsn(), autocommit=True) as conn:
        while True:
            try:
                conn.execute("SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots "
                             "WHERE slot_name = %s", (slot,))
                return
            except psycopg.errors.ObjectInUse:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)


def _snapshot(name: str, root: str, storage: dict[str, str], store: Store | None, server: LocalPostgres,
              rows: int) -> Result:
    db = f"snapshot_{name}"
    _fresh_db(server, db)
    with psycopg.connect(server.dsn(db), autocommit=True) as conn:
        conn.execute(ROWS, (1, rows))
    text = _pipeline(f"{root}/{db}", storage, server, db, db)
    print(f"{name}: snapshot of {rows:,} rows ...", flush=True)
    seconds, requests = _timed_capture(text, store)
    _drop_slot(server, db)
    return Result(name, "snapshot", rows, seconds, _batches(f"{root}/{db}", storage), requests)


def _stream(name: str, root: str, storage: dict[str, str], store: Store | None, server: LocalPostgres,
            rows: int, tx_rows: int, max_records: int | None) -> Result:
    scenario = f"stream, {max_records}-row batches" if max_records else "stream"
    db = f"stream{max_records or ''}_{name}"
    _fresh_db(server, db)
    text = _pipeline(f"{root}/{db}", storage, server, db, db, max_records)
    run_capture(parse_pipeline(text, env={}), until_idle=True)  # the slot and an empty snapshot
    first_batches = _batches(f"{root}/{db}", storage)
    with psycopg.connect(server.dsn(db), autocommit=True) as conn:
        for low in range(1, rows + 1, tx_rows):
            conn.execute(ROWS, (low, min(low + tx_rows - 1, rows)))
    print(f"{name}: {scenario}: {rows:,} rows ...", flush=True)
    seconds, requests = _timed_capture(text, store)
    _drop_slot(server, db)
    return Result(name, scenario, rows, seconds, _batches(f"{root}/{db}", storage) - first_batches, requests)


def run_root(name: str, root: str, storage: dict[str, str], store: Store | None, server: LocalPostgres,
             args: argparse.Namespace) -> list[Result]:
    """Every scenario on one root; each the fastest of ``--repeat`` runs (a fresh database and table each)."""
    def best(run: Callable[[int], Result]) -> Result:
        return replace(min((run(i) for i in range(args.repeat)), key=lambda r: r.seconds), root=name)

    return [
        best(lambda i: _snapshot(f"{name}{i}", root, storage, store, server, args.rows_snapshot)),
        best(lambda i: _stream(f"{name}{i}", root, storage, store, server, args.rows_stream, args.tx_rows, None)),
        best(lambda i: _stream(f"{name}{i}", root, storage, store, server, args.rows_stream, args.tx_rows,
                               args.batch_rows)),
    ]


def table(results: list[Result]) -> str:
    local = {r.scenario: r for r in results if r.root == "local"}
    lines = ["| root | scenario | rows | seconds | rows/s | vs local | batches | requests | requests/batch "
             "| by type |", "|---|---|---:|---:|---:|---:|---:|---:|---:|---|"]
    for r in results:
        base = local.get(r.scenario)
        ratio = f"{r.rows_per_s / base.rows_per_s:.2f}" if base and base.rows_per_s else "-"
        per_batch = f"{r.total_requests / r.batches:.1f}" if r.requests and r.batches else "-"
        kinds = ", ".join(f"{k} {v}" for k, v in r.requests.items()) or "-"
        lines.append(f"| {r.root} | {r.scenario} | {r.rows:,} | {r.seconds:.2f} | {r.rows_per_s:,.0f} | {ratio} "
                     f"| {r.batches} | {r.total_requests or '-'} | {per_batch} | {kinds} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows-snapshot", type=int, default=50_000)
    parser.add_argument("--rows-stream", type=int, default=50_000)
    parser.add_argument("--tx-rows", type=int, default=1_000, help="rows per source transaction when streaming")
    parser.add_argument("--batch-rows", type=int, default=1_000,
                        help="commit_max_records of the small-batches stream (requests per commit)")
    parser.add_argument("--repeat", type=int, default=1, help="runs per scenario and root; the fastest is reported")
    parser.add_argument("--stores", default="s3,azure,gcs", help="object stores to compare with the local folder: "
                        "any of s3, azure, gcs (comma-separated)")
    parser.add_argument("--workdir", type=Path, help="keep the servers' data and the lakehouse here")
    args = parser.parse_args(argv)
    stores = [s.strip() for s in args.stores.split(",") if s.strip()]
    unknown = sorted(set(stores) - {"s3", "azure", "gcs"})
    if unknown or not stores:
        parser.error(f"--stores: unknown store {', '.join(unknown) or '(none given)'}; use any of s3, azure, gcs")
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="cdc-s3-bench-"))
    workdir.mkdir(parents=True, exist_ok=True)
    server = LocalPostgres(workdir / "pg").start()
    s3 = LocalS3(workdir / "s3").start() if "s3" in stores else None
    azure = LocalAzure(workdir / "azure").start() if "azure" in stores else None
    gcs = LocalGCS(workdir / "gcs").start() if "gcs" in stores else None
    try:
        warm = argparse.Namespace(rows_snapshot=100, rows_stream=100, tx_rows=100, batch_rows=50, repeat=1)
        run_root("warmup", str(workdir / "warmup"), {}, None, server, warm)  # imports, first connections
        results = run_root("local", str(workdir / "lake"), {}, None, server, args)
        run = f"bench-{int(time.time())}"
        if s3 is not None:
            results += run_root("s3", s3.uri(run), s3.storage_options(), s3, server, args)
        if azure is not None:
            results += run_root("azure", azure.uri(run), azure.storage_options(), azure, server, args)
        if gcs is not None:
            results += run_root("gcs", gcs.uri(run), gcs.storage_options(), gcs, server, args)
    finally:
        for store in (s3, azure, gcs):
            if store is not None:
                store.stop()
        server.stop("immediate")
        if args.workdir is None:
            shutil.rmtree(workdir, ignore_errors=True)
    print()
    print(table(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
