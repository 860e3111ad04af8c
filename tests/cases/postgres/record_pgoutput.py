"""Record real pgoutput payloads into ``tests/cases/postgres/pgoutput/<case>.json``.

Starts a private PostgreSQL (`pipelines.local_postgres.LocalPostgres`), and for each case:
creates a fresh database, runs the case's setup SQL (not recorded), creates a publication for
all tables and a ``pgoutput`` slot, runs the workload, emits a stop marker
(``pg_logical_emit_message(false, 'cdc-recorder-stop', '')``) and streams the slot with
psycopg2's ``LogicalReplicationConnection`` until the marker arrives. Every payload before
the marker is saved as hex with its ``data_start`` (the message's WAL position).

The replication session uses the connector's session settings (UTC, ISO dates, hex bytea...),
so text values look exactly as the connector sees them.

Usage::

    /tmp/venv/bin/python tests/cases/postgres/record_pgoutput.py [case ...]

The recordings are committed; the decoder tests replay them without a server. Re-recording
changes oids, xids, LSNs and timestamps, which the tests read from the files.
"""

from __future__ import annotations

import json
import select
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psycopg2
import psycopg2.errors
import psycopg2.extras

from cdc_sources.postgres.connection import SESSION_SETTINGS
from pipelines.local_postgres import LocalPostgres

OUT_DIR = Path(__file__).parent / "pgoutput"
STOP_PREFIX = "cdc-recorder-stop"
PUBLICATION = "cdc_pub"
SLOT = "cdc_recorder"
_OPTIONS = " ".join(f"-c {k}={v.replace(' ', '')}" for k, v in SESSION_SETTINGS.items())
_TOAST_A = "(SELECT string_agg(md5(i::text), '') FROM generate_series(1, 300) AS i)"
_TOAST_B = "(SELECT string_agg(md5((-i)::text), '') FROM generate_series(1, 300) AS i)"


@dataclass(frozen=True)
class Case:
    """One recording.

    Attributes:
        name: file name stem.
        description: what the workload does and what the stream must show.
        setup: SQL run before the slot exists (not in the stream).
        workload: SQL strings, each sent as one simple query (so ``BEGIN; ...; COMMIT`` is
            one transaction), in order, on one session.
        options: extra START_REPLICATION options (``proto_version`` defaults to 1).
        session: extra settings for the walsender session.
        two_phase: create the slot with two-phase decoding enabled.
    """

    name: str
    description: str
    setup: tuple[str, ...]
    workload: tuple[str, ...]
    options: dict[str, str] = field(default_factory=dict)
    session: dict[str, str] = field(default_factory=dict)
    two_phase: bool = False


CASES: tuple[Case, ...] = (
    Case(
        "insert_values",
        "Two inserts into a table covering many types: every value set (multi-byte UTF-8, "
        "quotes, newline, backslash, NaN, Infinity, bytea, arrays, jsonb), then a row of NULLs "
        "and empty strings. Replica identity DEFAULT, primary key id.",
        (
            "CREATE TABLE public.all_types (id int PRIMARY KEY, i2 smallint, i8 bigint, "
            "num numeric(12,3), f4 real, f8 double precision, flag boolean, txt text, "
            "vc varchar(10), ch char(4), bin bytea, d date, ts timestamp(3), tstz timestamptz, "
            "dur interval, uid uuid, doc jsonb, tags text[], empty text, nul text)",
        ),
        (
            "INSERT INTO public.all_types VALUES (1, -32768, 9223372036854775807, 123456789.125, "
            "'NaN', '-Infinity', true, E'Grüße, 世界 🌍\\n\"quoted\" \\\\ back', 'naïve', 'ab', "
            "'\\x00ff10'::bytea, '2024-02-29', '2024-02-29 13:14:15.123', "
            "'2024-02-29 13:14:15.123456+01', '1 day 02:03:04', "
            "'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', '{\"k\": [1, \"é\"]}', "
            "ARRAY['a', 'b c', NULL], '', NULL)",
            "INSERT INTO public.all_types (id, empty) VALUES (2, '')",
        ),
    ),
    Case(
        "typical_rows",
        "A typical 6-column table (bigint key, two texts, numeric, timestamptz, boolean): three "
        "inserts, two updates and a delete in one transaction. The benchmark's workload.",
        ("CREATE TABLE public.customers (id bigint PRIMARY KEY, name text, email text, "
         "balance numeric(12,2), created_at timestamptz, active boolean)",),
        ("BEGIN; INSERT INTO public.customers VALUES "
         "(1001, 'Sally Thomas', 'sally.thomas@acme.com', 1234.50, '2024-03-01 10:00:00+00', true), "
         "(1002, 'George Bailey', 'gbailey@foobar.com', 0.00, '2024-03-02 11:30:00.5+00', false), "
         "(1003, 'Edward Walker', 'ed@walker.com', -17.25, '2024-03-03 23:59:59.999999+00', true); "
         "UPDATE public.customers SET balance = balance + 100, active = true WHERE id = 1002; "
         "UPDATE public.customers SET email = 'sally@acme.com' WHERE id = 1001; "
         "DELETE FROM public.customers WHERE id = 1003; COMMIT",),
    ),
    Case(
        "update_default",
        "REPLICA IDENTITY DEFAULT: an update of a non-key column sends no old tuple.",
        ("CREATE TABLE public.items (id int PRIMARY KEY, name text, qty int)",
         "INSERT INTO public.items VALUES (1, 'apple', 5)"),
        ("UPDATE public.items SET qty = 6, name = 'äpple' WHERE id = 1",),
    ),
    Case(
        "update_pk_change",
        "REPLICA IDENTITY DEFAULT: an update that changes the primary key (a, b) sends the old "
        "key as a 'K' tuple (key columns set, other columns null).",
        ("CREATE TABLE public.pairs (a int, b text, payload text, PRIMARY KEY (a, b))",
         "INSERT INTO public.pairs VALUES (1, 'x', 'p1')"),
        ("UPDATE public.pairs SET a = 2, payload = 'p2' WHERE a = 1",),
    ),
    Case(
        "update_full",
        "REPLICA IDENTITY FULL: an update sends the whole old row as an 'O' tuple, NULLs included.",
        ("CREATE TABLE public.people (id int PRIMARY KEY, name text, nick text, age int)",
         "ALTER TABLE public.people REPLICA IDENTITY FULL",
         "INSERT INTO public.people VALUES (1, 'Zoë', NULL, 41)"),
        ("UPDATE public.people SET age = 42, nick = 'zo' WHERE id = 1",),
    ),
    Case(
        "update_using_index",
        "REPLICA IDENTITY USING INDEX on unique (email): an update not touching email sends no "
        "old tuple; one changing email sends a 'K' tuple with only email set; a delete sends "
        "'K' with only email.",
        ("CREATE TABLE public.users (id int PRIMARY KEY, email text NOT NULL, note text)",
         "CREATE UNIQUE INDEX users_email ON public.users (email)",
         "ALTER TABLE public.users REPLICA IDENTITY USING INDEX users_email",
         "INSERT INTO public.users VALUES (1, 'a@example.com', 'n1')"),
        ("UPDATE public.users SET note = 'n2' WHERE id = 1",
         "UPDATE public.users SET email = 'b@example.com' WHERE id = 1",
         "DELETE FROM public.users WHERE id = 1"),
    ),
    Case(
        "delete_default",
        "REPLICA IDENTITY DEFAULT: a delete sends the primary key as a 'K' tuple, other columns null.",
        ("CREATE TABLE public.items (id int PRIMARY KEY, name text, qty int)",
         "INSERT INTO public.items VALUES (7, 'pear', 3)"),
        ("DELETE FROM public.items WHERE id = 7",),
    ),
    Case(
        "delete_full",
        "REPLICA IDENTITY FULL: a delete sends the whole old row as an 'O' tuple.",
        ("CREATE TABLE public.items (id int PRIMARY KEY, name text, qty int)",
         "ALTER TABLE public.items REPLICA IDENTITY FULL",
         "INSERT INTO public.items VALUES (7, 'pear', NULL)"),
        ("DELETE FROM public.items WHERE id = 7",),
    ),
    Case(
        "unchanged_toast",
        "docs.body holds 9600 chars (md5 of 1..300 concatenated), stored out of line. Updating "
        "only docs.rev sends body as 'u' (unchanged TOAST); updating body sends the new value "
        "(md5 of -1..-300); deleting sends the key. full_docs has REPLICA IDENTITY FULL: an "
        "update of rev sends the old row with body inlined and the new row with body 'u'.",
        ("CREATE TABLE public.docs (id int PRIMARY KEY, body text, rev int)",
         f"INSERT INTO public.docs VALUES (1, {_TOAST_A}, 1)",
         "CREATE TABLE public.full_docs (id int PRIMARY KEY, body text, rev int)",
         "ALTER TABLE public.full_docs REPLICA IDENTITY FULL",
         f"INSERT INTO public.full_docs VALUES (1, {_TOAST_A}, 1)"),
        ("UPDATE public.docs SET rev = 2 WHERE id = 1",
         f"UPDATE public.docs SET body = {_TOAST_B}, rev = 3 WHERE id = 1",
         "DELETE FROM public.docs WHERE id = 1",
         "UPDATE public.full_docs SET rev = 2 WHERE id = 1"),
    ),
    Case(
        "truncate",
        "TRUNCATE parent RESTART IDENTITY CASCADE (also truncates child through its foreign "
        "key: options 3, two relations), then TRUNCATE parent, child (options 0).",
        ("CREATE TABLE public.parent (id serial PRIMARY KEY)",
         "CREATE TABLE public.child (id serial PRIMARY KEY, parent_id int REFERENCES public.parent)",
         "INSERT INTO public.parent DEFAULT VALUES",
         "INSERT INTO public.child (parent_id) VALUES (1)"),
        ("TRUNCATE public.parent RESTART IDENTITY CASCADE",
         "TRUNCATE public.parent, public.child"),
    ),
    Case(
        "logical_messages",
        "pg_logical_emit_message: non-transactional text and bytea (outside any B/C), then one "
        "transaction with a transactional text message, an insert and a transactional bytea "
        "message, then a transaction holding only an empty transactional message.",
        ("CREATE TABLE public.events (id int PRIMARY KEY)",),
        ("SELECT pg_logical_emit_message(false, 'audit', 'non-transactional ✓')",
         "SELECT pg_logical_emit_message(false, 'audit.bin', '\\x00ff10'::bytea)",
         "BEGIN; SELECT pg_logical_emit_message(true, 'audit', 'transactional'); "
         "INSERT INTO public.events VALUES (1); "
         "SELECT pg_logical_emit_message(true, 'audit.bin', '\\xdeadbeef'::bytea); COMMIT",
         "SELECT pg_logical_emit_message(true, 'solo', '')"),
    ),
    Case(
        "type_enum",
        "A table in schema \"Sales Data\" named \"Ordér Items\" with a user-defined enum, an "
        "array of it and a domain: Type ('Y') messages precede the Relation.",
        ('CREATE SCHEMA "Sales Data"',
         "CREATE TYPE public.mood AS ENUM ('sad', 'ok', 'happy')",
         "CREATE DOMAIN public.positive_int AS int CHECK (VALUE > 0)",
         'CREATE TABLE "Sales Data"."Ordér Items" (id int PRIMARY KEY, feeling public.mood, '
         "qty public.positive_int, history public.mood[])"),
        ('INSERT INTO "Sales Data"."Ordér Items" VALUES (1, \'happy\', 3, \'{sad,ok}\')',),
    ),
    Case(
        "multi_statement_txn",
        "One transaction: two inserts into accounts, an update, an insert into ledger, a delete "
        "from accounts; then a second, single-insert transaction.",
        ("CREATE TABLE public.accounts (id int PRIMARY KEY, balance numeric(10,2))",
         "CREATE TABLE public.ledger (id bigserial PRIMARY KEY, account int, amount numeric(10,2))"),
        ("BEGIN; INSERT INTO public.accounts VALUES (1, 100.00); "
         "INSERT INTO public.accounts VALUES (2, 50.50); "
         "UPDATE public.accounts SET balance = 90.00 WHERE id = 1; "
         "INSERT INTO public.ledger (account, amount) VALUES (1, -10.00); "
         "DELETE FROM public.accounts WHERE id = 2; COMMIT",
         "INSERT INTO public.ledger (account, amount) VALUES (2, 0.01)"),
    ),
    Case(
        "origin",
        "A transaction replayed from replication origin 'upstream_a' at origin LSN 0/ABCDEF: "
        "an Origin ('O') message follows Begin.",
        ("CREATE TABLE public.items (id int PRIMARY KEY)",
         "SELECT pg_replication_origin_create('upstream_a')"),
        ("SELECT pg_replication_origin_session_setup('upstream_a'); BEGIN; "
         "SELECT pg_replication_origin_xact_setup('0/ABCDEF', '2024-01-02 03:04:05+00'); "
         "INSERT INTO public.items VALUES (1); COMMIT; "
         "SELECT pg_replication_origin_session_reset()",),
    ),
    Case(
        "stream_v2",
        "Protocol version 2 with streaming on and logical_decoding_work_mem=64kB (the minimum): "
        "a 480-row transaction exceeds it, so it is streamed in blocks (S ... E) and committed "
        "(c); a second 480-row transaction is streamed and rolled back (A).",
        ("CREATE TABLE public.big (id int PRIMARY KEY)",),
        ("INSERT INTO public.big SELECT generate_series(1, 480)",
         "BEGIN; INSERT INTO public.big SELECT generate_series(1001, 1480); ROLLBACK"),
        options={"proto_version": "2", "streaming": "on"},
        session={"logical_decoding_work_mem": "64kB"},
    ),
    Case(
        "two_phase_v3",
        "Protocol version 3 with two_phase on (slot created with two-phase decoding): a "
        "prepared transaction committed (b, I, P, K) and one rolled back (b, I, P, r).",
        ("CREATE TABLE public.items (id int PRIMARY KEY)",),
        ("BEGIN; INSERT INTO public.items VALUES (1); PREPARE TRANSACTION 'gid-commit'",
         "COMMIT PREPARED 'gid-commit'",
         "BEGIN; INSERT INTO public.items VALUES (2); PREPARE TRANSACTION 'gid-rollback'",
         "ROLLBACK PREPARED 'gid-rollback'"),
        options={"proto_version": "3", "two_phase": "on"},
        two_phase=True,
    ),
)


def record(server: LocalPostgres, case: Case) -> dict[str, Any]:
    """Run one case on ``server`` and return its recording."""
    dbname = f"rec_{case.name}"
    admin = psycopg2.connect(server.dsn())
    admin.autocommit = True
    with admin.cursor() as cur:
        cur.execute(f'DROP DATABASE IF EXISTS "{dbname}" WITH (FORCE)')
        cur.execute(f'CREATE DATABASE "{dbname}"')
    conn = psycopg2.connect(server.dsn(dbname), options=_OPTIONS)
    conn.autocommit = True
    try:
        with conn.cursor() as cur:
            for sql in case.setup:
                cur.execute(sql)
            cur.execute(f"CREATE PUBLICATION {PUBLICATION} FOR ALL TABLES")
            cur.execute("SELECT pg_create_logical_replication_slot(%s, 'pgoutput', false, %s)",
                        (SLOT, case.two_phase))
            for sql in case.workload:
                cur.execute(sql)
            cur.execute("SELECT pg_logical_emit_message(false, %s, '')", (STOP_PREFIX,))
        messages = _stream(server, dbname, case)
        _drop_slot(conn)
    finally:
        conn.close()
    with admin.cursor() as cur:
        cur.execute(f'DROP DATABASE "{dbname}" WITH (FORCE)')
        cur.execute("SHOW server_version")
        version = str((cur.fetchone() or ("?",))[0])
    admin.close()
    return {
        "case": case.name,
        "description": case.description,
        "server_version": version,
        "start_replication_options": _start_options(case),
        "session_settings": {**SESSION_SETTINGS, **case.session},
        "setup_sql": list(case.setup),
        "workload_sql": list(case.workload),
        "recorded_at_us": time.time_ns() // 1000,
        "messages": messages,
    }


def _drop_slot(conn: Any) -> None:
    """Drop the slot once its walsender has exited (closing the connection is asynchronous)."""
    deadline = time.monotonic() + 10
    with conn.cursor() as cur:
        while True:
            try:
                cur.execute("SELECT pg_drop_replication_slot(%s)", (SLOT,))
                return
            except psycopg2.errors.ObjectInUse:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)


def _start_options(case: Case) -> dict[str, str]:
    return {"proto_version": "1", "publication_names": PUBLICATION, "messages": "true", **case.options}


def _stream(server: LocalPostgres, dbname: str, case: Case) -> list[dict[str, Any]]:
    options = " ".join([_OPTIONS, *(f"-c {k}={v}" for k, v in case.session.items())])
    conn = psycopg2.connect(server.dsn(dbname), options=options,
                            connection_factory=psycopg2.extras.LogicalReplicationConnection)
    stop = STOP_PREFIX.encode() + b"\x00"
    out: list[dict[str, Any]] = []
    try:
        cur = conn.cursor()
        cur.start_replication(slot_name=SLOT, decode=False, start_lsn=0, options=_start_options(case))
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            msg = cur.read_message()
            if msg is None:
                select.select([cur], [], [], 0.5)
                continue
            payload = bytes(msg.payload)
            if payload[:1] == b"M" and stop in payload:
                return out
            out.append({"data_start": int(msg.data_start), "payload": payload.hex()})
        raise TimeoutError(f"case {case.name}: no stop marker within 60 s ({len(out)} messages)")
    finally:
        conn.close()


def _dumps(data: dict[str, Any]) -> str:
    """JSON with one line per message, so diffs and reviews stay readable."""
    head = json.dumps({k: v for k, v in data.items() if k != "messages"}, indent=1, ensure_ascii=False)
    lines = ",\n".join("  " + json.dumps(m) for m in data["messages"])
    return f'{head[:-2]},\n "messages": [\n{lines}\n ]\n}}\n'


def main(names: list[str]) -> None:
    chosen = [c for c in CASES if not names or c.name in names]
    unknown = set(names) - {c.name for c in CASES}
    if unknown:
        raise SystemExit(f"unknown case(s): {sorted(unknown)}; known: {[c.name for c in CASES]}")
    base = Path(tempfile.mkdtemp(prefix="cdc-pgoutput-rec-"))
    base.chmod(0o755)
    server = LocalPostgres(base / "data", settings={"max_prepared_transactions": "10"}).start()
    try:
        OUT_DIR.mkdir(exist_ok=True)
        for case in chosen:
            data = record(server, case)
            path = OUT_DIR / f"{case.name}.json"
            path.write_text(_dumps(data))
            print(f"{path}: {len(data['messages'])} messages")
    finally:
        server.stop("immediate")


if __name__ == "__main__":
    main(sys.argv[1:])
