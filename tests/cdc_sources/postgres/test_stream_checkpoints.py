"""Checkpoints of one-row transactions read back to back are folded; signal transactions are not.

A reader that hands over a checkpoint per source transaction costs a checkpoint per row in
every stage downstream when transactions hold one row. The stream reader folds the
checkpoints of the transactions it reads back to back into the last one's, which says how
many transactions it ends; the coordinator still counts every source transaction. A
transaction holding a record of the signal table still ends with its own checkpoint.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

import orjson
import psycopg
import pytest

from cdc_sources.postgres.session import PostgresCaptureSession
from cdc_sources.spi import ChangeBlock, ChangeRecord, Checkpoint, StreamItem
from pipelines.capture import run_capture
from tests.support.bronze_rows import read_topic
from tests.support.pipeline_yaml import pipeline

pytestmark = [pytest.mark.integration, pytest.mark.postgres]

ROWS = 300
OPTIONS = {"table.include.list": "public.items,public.dbz_signal", "snapshot.mode": "no_data",
           "signal.data.collection": "public.dbz_signal"}


@pytest.fixture
def database(pg_db: str) -> str:
    with psycopg.connect(pg_db, autocommit=True) as conn:
        conn.execute("CREATE TABLE items (id int PRIMARY KEY, v text)")
        conn.execute("CREATE TABLE dbz_signal (id varchar(64) PRIMARY KEY, type varchar(32), data text)")
    return pg_db


@pytest.fixture
def streamed(monkeypatch: pytest.MonkeyPatch) -> list[StreamItem]:
    """Every item the session's stream hands to the coordinator, in order."""
    items: list[StreamItem] = []
    real = PostgresCaptureSession.stream

    def stream(self: PostgresCaptureSession, *, until_idle: bool) -> Iterator[StreamItem]:
        for item in real(self, until_idle=until_idle):
            items.append(item)
            yield item

    monkeypatch.setattr(PostgresCaptureSession, "stream", stream)
    return items


def records(items: list[StreamItem]) -> list[ChangeRecord]:
    out: list[ChangeRecord] = []
    for item in items:
        if isinstance(item, list):
            out += item
        elif isinstance(item, ChangeRecord):
            out.append(item)
        assert not isinstance(item, ChangeBlock), "one-row transactions are rendered message by message"
    return out


def committed_transactions(caplog: pytest.LogCaptureFixture) -> int:
    return sum(r.__dict__["transactions"] for r in caplog.records if "bronze batch" in r.getMessage())


def test_one_row_transactions_share_checkpoints_and_are_all_counted(database, tmp_path, streamed, caplog):
    root = str(tmp_path / "lake")
    cfg = pipeline(root, database, **OPTIONS)
    run_capture(cfg, until_idle=True)  # creates the slot before any change
    with psycopg.connect(database, autocommit=True) as conn:  # autocommit: one transaction per row
        for i in range(1, ROWS + 1):
            conn.execute("INSERT INTO items VALUES (%s, %s)", (i, f"row {i}"))
    streamed.clear()
    with caplog.at_level(logging.INFO, logger="pipelines.coordinator"):
        run_capture(cfg, until_idle=True)

    rows = read_topic(root, "pg.public.items", ("value", "seq"))
    assert [orjson.loads(r["value"])["after"]["id"] for r in rows] == list(range(1, ROWS + 1))
    checkpoints = [i for i in streamed if isinstance(i, Checkpoint)]
    # one per transaction before; transactions read back to back share one (how many are read back
    # to back depends on how fast the server sends them: 173 checkpoints for 300 in a loaded CI run)
    assert len(checkpoints) < ROWS and max(c.transactions for c in checkpoints) > 1, len(checkpoints)
    assert sum(c.transactions for c in checkpoints) >= ROWS
    assert committed_transactions(caplog) == ROWS  # every source transaction counted, as before


def test_a_signal_transaction_ends_with_its_own_checkpoint(database, tmp_path, streamed):
    root = str(tmp_path / "lake")
    cfg = pipeline(root, database, **OPTIONS)
    run_capture(cfg, until_idle=True)
    with psycopg.connect(database, autocommit=True) as conn:
        for i in range(1, 41):
            conn.execute("INSERT INTO items VALUES (%s, 'x')", (i,))
            if i == 20:
                conn.execute("""INSERT INTO dbz_signal VALUES ('s1', 'log', '{"message": "half way"}')""")
    streamed.clear()
    run_capture(cfg, until_idle=True)

    flat: list[Any] = []
    for item in streamed:
        flat += item if isinstance(item, list) else [item]
    at = next(n for n, i in enumerate(flat) if isinstance(i, ChangeRecord) and i.topic == "pg.public.dbz_signal")
    assert isinstance(flat[at + 1], Checkpoint)
    assert [orjson.loads(r.value or "")["after"]["id"] for r in records(streamed)
            if r.topic == "pg.public.items"] == list(range(1, 41))


def test_small_batches_keep_a_checkpoint_within_half_a_batch(database, tmp_path, streamed):
    root = str(tmp_path / "lake")
    cfg = pipeline(root, database, capture={"commit_max_records": 4}, **OPTIONS)
    run_capture(cfg, until_idle=True)
    with psycopg.connect(database, autocommit=True) as conn:
        for i in range(1, 41):
            conn.execute("INSERT INTO items VALUES (%s, 'x')", (i,))
    streamed.clear()
    run_capture(cfg, until_idle=True)

    since, most = 0, 0  # records between checkpoints: at most half a batch (2), so that batches end at one
    for item in streamed:
        if isinstance(item, Checkpoint):
            since = 0
        else:
            since += len(records([item]))
            most = max(most, since)
    assert 1 <= most <= 2, most
    assert len(read_topic(root, "pg.public.items", ("value", "seq"))) == 40
