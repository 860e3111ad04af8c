"""``slot.max.retries`` / ``slot.retry.delay.ms``: capture waits for a replication slot that
another process streams from, against a real PostgreSQL whose other walsender holds the slot."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import psycopg2
import psycopg2.extras
import pytest
from deltalake import DeltaTable

from bronze.schema import topic_path
from cdc_sources.postgres.errors import SlotInUseError
from cdc_sources.postgres.slot_acquire import SlotUnavailableError, acquire_slot, slot_retry_policy
from cdc_sources.spi import ChangeBlock, ChangeRecord, Checkpoint
from pipelines.capture import run_capture, validate_sources
from pipelines.cli import main
from tests.support.pipeline_yaml import pipeline, pipeline_text

pytestmark = [pytest.mark.integration, pytest.mark.postgres]

SLOT = "held"


def sql(dsn: str, *statements: str) -> None:
    with psycopg.connect(dsn, autocommit=True) as conn:
        for s in statements:
            conn.execute(s)


def active_pid(dsn: str) -> int | None:
    with psycopg.connect(dsn) as conn:
        row = conn.execute("SELECT active_pid FROM pg_replication_slots WHERE slot_name = %s", (SLOT,)).fetchone()
    assert row is not None, f"slot {SLOT} does not exist"
    return row[0]


def hold_slot(dsn: str) -> Any:
    """A second replication connection that streams from the slot (another walsender holds it)."""
    holder = psycopg2.connect(dsn, connection_factory=psycopg2.extras.LogicalReplicationConnection)
    holder.cursor().start_replication(slot_name=SLOT, decode=False,
                                      options={"proto_version": "1", "publication_names": "dbz_publication"})
    deadline = time.monotonic() + 10
    while active_pid(dsn) is None:
        assert time.monotonic() < deadline, "the holder never became the slot's active process"
        time.sleep(0.05)
    return holder


@pytest.fixture
def captured(pg_db: str, tmp_path: Path) -> Iterator[str]:
    """A table captured once (the slot exists), then 5 more rows inserted."""
    sql(pg_db, "CREATE TABLE t (id int PRIMARY KEY, v text)",
        "INSERT INTO t SELECT g, 'a' FROM generate_series(1, 3) g")
    run_capture(pipeline(str(tmp_path), pg_db, **{"slot.name": SLOT}), until_idle=True)
    sql(pg_db, "INSERT INTO t SELECT g, 'b' FROM generate_series(4, 8) g")
    yield pg_db


def test_capture_gets_the_slot_on_a_retry_once_the_other_process_releases_it(captured, tmp_path, caplog):
    holder = hold_slot(captured)
    release = threading.Timer(1.0, holder.close)
    release.start()
    try:
        cfg = pipeline(str(tmp_path), captured, **{"slot.name": SLOT, "slot.max.retries": "20",
                                                    "slot.retry.delay.ms": "200", "errors.max.retries": "0"})
        with caplog.at_level(logging.WARNING, logger="cdc_sources.postgres.slot_acquire"):
            started = time.monotonic()
            run_capture(cfg, until_idle=True)
            waited = time.monotonic() - started
    finally:
        release.cancel()
        holder.close()
    retries = [r.getMessage() for r in caplog.records if "will attempt retry" in r.getMessage()]
    assert retries, "capture never found the slot in use"
    assert f"replication slot {SLOT!r}" in retries[0] and "retry 1 of 20 after 0.2 seconds" in retries[0]
    assert "is in use by PID" in retries[0]
    assert waited >= 0.8, f"capture finished in {waited:.2f}s, before the holder released the slot"
    ops = DeltaTable(topic_path(str(tmp_path), "pg.public.t")).to_pyarrow_table(columns=["op"]).column("op")
    assert sorted(ops.to_pylist()) == ["c"] * 5 + ["r"] * 3


def test_capture_exits_1_naming_the_slot_when_the_retries_are_used_up(captured, tmp_path, capsys):
    path = tmp_path / "pipeline.yaml"
    path.write_text(pipeline_text(str(tmp_path), captured, **{"slot.name": SLOT, "slot.max.retries": "2",
                                                              "slot.retry.delay.ms": "100"}))
    holder = hold_slot(captured)
    try:
        started = time.monotonic()
        rc = main(["capture", "-c", str(path), "--until-idle", "-q"])
        took = time.monotonic() - started
        still_held = active_pid(captured) is not None
    finally:
        holder.close()
    err = capsys.readouterr().err
    assert rc == 1, err
    assert still_held
    assert f"could not acquire replication slot {SLOT!r}: all 2 retries failed" in err
    assert "slot.max.retries=2, slot.retry.delay.ms=100" in err and "in use by PID" in err
    assert "Traceback" not in err
    # errors.max.retries (unlimited, so 3 with --until-idle) does not retry a slot that stays busy
    assert err.count("could not acquire") == 1 and took < 10


def test_streaming_waits_for_a_slot_taken_after_the_start_up_checks(captured, tmp_path, caplog):
    """The slot is free when the session checks it, and taken before streaming starts: starting
    to stream (START_REPLICATION) is retried too, on the server's own "is active" error."""
    cfg = pipeline(str(tmp_path), captured, **{"slot.name": SLOT, "slot.max.retries": "20",
                                                "slot.retry.delay.ms": "200"})
    session = validate_sources(cfg)["pg"].open(None)  # the start-up checks pass: the slot is free
    holder = hold_slot(captured)
    release = threading.Timer(1.0, holder.close)
    release.start()
    try:
        with caplog.at_level(logging.WARNING, logger="cdc_sources.postgres.slot_acquire"):
            items = list(session.stream(until_idle=True))
    finally:
        release.cancel()
        holder.close()
        session.close()
    retries = [r.getMessage() for r in caplog.records if "will attempt retry" in r.getMessage()]
    assert retries and "starting to stream from replication slot 'held'" in retries[0], retries
    assert f'replication slot "{SLOT}" is active for PID' in retries[0]
    changes = sum(1 if isinstance(i, ChangeRecord) else len(i) for i in items
                  if isinstance(i, ChangeRecord | list | ChangeBlock))
    assert changes == 5 and any(isinstance(i, Checkpoint) for i in items)


def test_acquire_slot_waits_the_constant_delay_between_attempts() -> None:
    waits: list[float] = []
    outcomes: list[Exception | None] = [SlotInUseError("busy"), SlotInUseError("busy"), None]

    def attempt() -> str:
        failure = outcomes.pop(0)
        if failure is not None:
            raise failure
        return "streaming"

    assert acquire_slot(attempt, slot="s", policy=slot_retry_policy(6, 10_000), wait=waits.append) == "streaming"
    assert waits == [10.0, 10.0]
    with pytest.raises(SlotUnavailableError, match=r"'s': all 0 retries failed"):
        acquire_slot(lambda: (_ for _ in ()).throw(SlotInUseError("busy")), slot="s",
                     policy=slot_retry_policy(0, 10), wait=waits.append)
    assert waits == [10.0, 10.0]
