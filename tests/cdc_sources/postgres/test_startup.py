"""Start-up checks, publications and snapshot modes against a real PostgreSQL."""

from __future__ import annotations

import psycopg
import pytest
from deltalake import DeltaTable

from bronze.schema import topic_path
from cdc_sources.postgres.errors import (
    OffsetUnavailableError,
    PostgresAuthError,
    PostgresSetupError,
)
from pipelines.capture import run_capture
from tests.support.pipeline_yaml import pipeline

pytestmark = [pytest.mark.integration, pytest.mark.postgres]


def sql(dsn: str, *statements: str) -> None:
    with psycopg.connect(dsn, autocommit=True) as conn:
        for s in statements:
            conn.execute(s)


def count(root: str, topic: str, op: str | None = "r") -> int:
    rows = DeltaTable(topic_path(root, topic)).to_pyarrow_table(columns=["op"]).column("op").to_pylist()
    return sum(1 for r in rows if r == op)


def test_table_without_primary_key_under_default_identity_is_refused(pg_db, tmp_path):
    sql(pg_db, "CREATE TABLE nopk (a int, b text)")
    with pytest.raises(PostgresSetupError, match=r"public\.nopk.*REPLICA IDENTITY FULL"):
        run_capture(pipeline(str(tmp_path), pg_db), until_idle=True)
    # excluding it, or FULL identity, makes it acceptable
    run_capture(pipeline(str(tmp_path), pg_db, **{"table.exclude.list": "public.nopk"}), until_idle=True)
    sql(pg_db, "ALTER TABLE nopk REPLICA IDENTITY FULL", "INSERT INTO nopk VALUES (1, 'x')")
    run_capture(pipeline(str(tmp_path / "b"), pg_db, **{"slot.name": "other"}), until_idle=True)
    rows = DeltaTable(topic_path(str(tmp_path / "b"), "pg.public.nopk")).to_pyarrow_table().to_pylist()
    assert [r["key"] for r in rows] == [None]


def test_user_without_replication_privilege_is_told_what_to_grant(pg_db, tmp_path):
    sql(pg_db, "DROP ROLE IF EXISTS plain_user", "CREATE ROLE plain_user LOGIN")
    with pytest.raises(PostgresAuthError, match="ALTER ROLE plain_user WITH REPLICATION"):
        run_capture(pipeline(str(tmp_path), pg_db, user="plain_user"), until_idle=True)


def test_publication_disabled_mode_requires_an_existing_publication(pg_db, tmp_path):
    sql(pg_db, "CREATE TABLE t (id int PRIMARY KEY)")
    with pytest.raises(PostgresSetupError, match="publication 'dbz_publication' does not exist"):
        run_capture(pipeline(str(tmp_path), pg_db, **{"publication.autocreate.mode": "disabled"}), until_idle=True)


def test_filtered_publication_follows_the_table_filters(pg_db, tmp_path):
    sql(pg_db, "CREATE TABLE a (id int PRIMARY KEY)", "CREATE TABLE b (id int PRIMARY KEY)")
    cfg = pipeline(str(tmp_path), pg_db, **{"publication.autocreate.mode": "filtered",
                                             "table.include.list": "public.a", "publication.name": "pub_f"})
    run_capture(cfg, until_idle=True)
    with psycopg.connect(pg_db) as conn:
        tables = conn.execute("SELECT tablename FROM pg_publication_tables WHERE pubname = 'pub_f'").fetchall()
    assert tables == [("a",)]
    cfg2 = pipeline(str(tmp_path), pg_db, **{"publication.autocreate.mode": "filtered",
                                              "table.include.list": "public.a,public.b", "publication.name": "pub_f"})
    run_capture(cfg2, until_idle=True)
    with psycopg.connect(pg_db) as conn:
        tables = conn.execute("SELECT tablename FROM pg_publication_tables WHERE pubname = 'pub_f' "
                              "ORDER BY 1").fetchall()
    assert tables == [("a",), ("b",)]


@pytest.mark.parametrize(("mode", "first", "second"), [
    ("initial", 3, 0), ("always", 3, 4), ("initial_only", 3, 0), ("no_data", 0, 0), ("never", 0, 0),
    ("when_needed", 3, 0),
])
def test_snapshot_modes(pg_db, tmp_path, mode, first, second):
    sql(pg_db, "CREATE TABLE t (id int PRIMARY KEY)", "INSERT INTO t VALUES (1), (2), (3)")
    root = str(tmp_path)
    cfg = pipeline(root, pg_db, **{"snapshot.mode": mode})
    r1 = run_capture(cfg, until_idle=True)["pg"]
    assert r1.snapshot_rows == first
    sql(pg_db, "INSERT INTO t VALUES (4)")
    r2 = run_capture(cfg, until_idle=True)["pg"]
    assert r2.snapshot_rows == second
    streamed = 0 if mode == "initial_only" else (0 if mode == "always" else 1)
    assert r2.streamed_records == streamed


def test_lost_slot_fails_under_initial_and_resnapshots_under_when_needed(pg_db, tmp_path):
    sql(pg_db, "CREATE TABLE t (id int PRIMARY KEY)", "INSERT INTO t VALUES (1)")
    root = str(tmp_path)
    run_capture(pipeline(root, pg_db, **{"slot.name": "lost"}), until_idle=True)
    sql(pg_db, "SELECT pg_drop_replication_slot('lost')", "INSERT INTO t VALUES (2)")
    with pytest.raises(OffsetUnavailableError, match="when_needed"):
        run_capture(pipeline(root, pg_db, **{"slot.name": "lost"}), until_idle=True)
    result = run_capture(pipeline(root, pg_db, **{"slot.name": "lost", "snapshot.mode": "when_needed"}),
                         until_idle=True)["pg"]
    assert result.snapshot_rows == 2
    assert count(root, "pg.public.t") == 3
