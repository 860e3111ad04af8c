"""``maintain`` on a lakehouse in an object store (the tests' S3, Azure and GCS servers): compaction of
bronze a real PostgreSQL capture wrote in many small commits keeps the same rows in fewer files,
and capture resumes after it without a second snapshot or a reused ``seq``.

The store's endpoint and credentials are in the pipeline file only, as ``${VAR}`` storage options."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import psycopg
import pytest
from deltalake import DeltaTable

from pipelines.cli import main
from tests.pipelines.exactly_once_support import create_schema, pipeline_yaml
from tests.support.azure_pipeline import set_azure_vars, with_azure_storage
from tests.support.gcs_pipeline import private_key, set_gcs_vars, with_gcs_storage
from tests.support.s3_pipeline import set_s3_vars, with_storage

pytestmark = [pytest.mark.integration, pytest.mark.postgres]

ORDERS = "pg.public.orders"


@dataclass(frozen=True)
class Store:
    root: str
    storage: dict[str, str]
    secret: str
    configure: Callable[[str], str]
    """Pipeline text with its lakehouse moved to ``root``, the credentials as ``${VAR}`` options."""


@pytest.fixture(params=["s3", "azure", "gcs"])
def store(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Store:
    if request.param == "s3":
        s3, root = request.getfixturevalue("s3_server"), request.getfixturevalue("s3_root")
        set_s3_vars(s3, monkeypatch)
        return Store(root, s3.storage_options(), s3.secret_access_key, lambda text: with_storage(text, root))
    if request.param == "gcs":
        gcs, root = request.getfixturevalue("gcs_server"), request.getfixturevalue("gcs_root")
        set_gcs_vars(gcs, monkeypatch)
        return Store(root, gcs.storage_options(), private_key(gcs.service_account_key),
                     lambda text: with_gcs_storage(text, root))
    azure, root = request.getfixturevalue("azure_server"), request.getfixturevalue("azure_root")
    set_azure_vars(azure, monkeypatch)
    return Store(root, azure.storage_options(), azure.account_key, lambda text: with_azure_storage(text, root))


def _table(store: Store, path: str) -> DeltaTable:
    return DeltaTable(path, storage_options=store.storage)


def _rows(store: Store, path: str) -> list[tuple[object, ...]]:
    t = _table(store, path).to_pyarrow_table(columns=["seq", "key", "value"]).sort_by("seq")
    return list(zip(*(t.column(c).to_pylist() for c in ("seq", "key", "value")), strict=True))


def test_maintain_compacts_bronze_and_capture_resumes(pg_db, tmp_path, store: Store, capsys):
    create_schema(pg_db, big=3, accounts=20, orders=20)
    slot = "m_" + pg_db.split("dbname=")[1].split(maxsplit=1)[0][-40:]
    config = tmp_path / "pipeline.yaml"
    config.write_text(store.configure(pipeline_yaml("lake", pg_db, slot=slot, interval_ms=50, max_records=5)))
    assert main(["-q", "capture", "-c", str(config), "--until-idle"]) == 0  # the snapshot
    with psycopg.connect(pg_db, autocommit=True) as conn:
        for i in range(30):
            conn.execute("UPDATE orders SET qty = qty + 1 WHERE id = %s", (1 + i % 20,))
    assert main(["-q", "capture", "-c", str(config), "--until-idle"]) == 0
    path = f"{store.root}/bronze/{ORDERS}"
    before, files_before = _rows(store, path), len(_table(store, path).file_uris())
    assert len(before) == 50 and files_before > 5

    assert main(["maintain", "-c", str(config), "--table", ORDERS]) == 0, capsys.readouterr().err
    assert _rows(store, path) == before
    assert len(_table(store, path).file_uris()) < files_before

    with psycopg.connect(pg_db, autocommit=True) as conn:
        conn.execute("UPDATE orders SET status = 'after' WHERE id = 1")
    assert main(["-q", "capture", "-c", str(config), "--until-idle"]) == 0
    seqs = [s for s, *_ in _rows(store, path)]
    assert len(seqs) == len(set(seqs)) == 51
    assert sum(1 for *_, v in _rows(store, path) if '"op":"r"' in str(v)) == 20  # no second snapshot
    out = capsys.readouterr()
    assert store.secret not in out.out + out.err
