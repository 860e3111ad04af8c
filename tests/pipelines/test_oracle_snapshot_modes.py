"""Oracle ``snapshot.mode`` through the fake connection, on the schema-change corpus
(`tests.support.oracle_ddl_corpus`): ``always``, ``when_needed``, ``no_data`` and ``recovery``
after a first run that stopped at SCN 1045 (after the rename, before the column drop)."""

from __future__ import annotations

import shutil
from pathlib import Path

import orjson
import pytest

from bronze.schema import history_path
from cdc_sources.oracle import build_oracle_config
from cdc_sources.spi import SourceError
from tests.support.bronze_rows import read_table
from tests.support.oracle_capture import SOURCE, capture_once, connector
from tests.support.oracle_ddl_corpus import EXPECTED_PRODUCTS, FINAL, database, events

pytestmark = [pytest.mark.integration]

FIRST_RUN = EXPECTED_PRODUCTS[:5]  # up to the update of ID 1, committed at SCN 1033
RESNAPSHOT = [("r", {"ID": i, "TITLE": v}) for i, v in FINAL["PRODUCTS"]]


def _first_run(root: str) -> None:
    capture_once(root, database(995, 1045))
    assert events(root, "PRODUCTS") == FIRST_RUN


def _history(root: str) -> list[tuple[str, list[str]]]:
    records = [orjson.loads(r["value"]) for r in read_table(history_path(root, SOURCE))]
    return [(r["tableChanges"][0]["id"].split(".")[-1].strip('"'),
             [c["name"] for c in r["tableChanges"][0]["table"]["columns"]]) for r in records]


def test_always_snapshots_again_with_the_current_dictionary(tmp_path: Path) -> None:
    root = str(tmp_path / "lake")
    _first_run(root)
    capture_once(root, database(1100, 1100), options={"snapshot.mode": "always"})
    assert events(root, "PRODUCTS") == FIRST_RUN + RESNAPSHOT
    assert events(root, "TAGS") == [("r", {"ID": 1, "LABEL": "red"})]
    assert _history(root)[-2:] == [("PRODUCTS", ["ID", "TITLE"]), ("TAGS", ["ID", "LABEL"])]


def test_when_needed_resumes_while_the_logs_hold_the_offset(tmp_path: Path) -> None:
    root = str(tmp_path / "lake")
    _first_run(root)
    capture_once(root, database(1100, 1100), options={"snapshot.mode": "when_needed"})
    assert events(root, "PRODUCTS") == EXPECTED_PRODUCTS


def test_when_needed_snapshots_when_the_offset_is_gone_and_initial_stops(tmp_path: Path) -> None:
    root = str(tmp_path / "lake")
    _first_run(root)
    gone = database(1100, 1100)
    gone.oldest_scn = 1060
    with pytest.raises(SourceError, match=r"SCN \d+ is no longer in the redo or archive logs.*when_needed"):
        capture_once(root, gone)
    capture_once(root, gone, options={"snapshot.mode": "when_needed"})
    assert events(root, "PRODUCTS") == FIRST_RUN + RESNAPSHOT


def test_no_data_records_the_structures_and_streams_from_the_current_scn(tmp_path: Path) -> None:
    root = str(tmp_path / "lake")
    capture_once(root, database(1030, 1100), options={"snapshot.mode": "no_data"})
    # the first CURRENT_SCN answer is 1035: the transaction committed at 1033 is not streamed
    assert events(root, "PRODUCTS") == EXPECTED_PRODUCTS[5:]
    assert _history(root) == [("PRODUCTS", ["ID", "NAME", "PRICE"]), ("PRODUCTS", ["ID", "TITLE", "PRICE"]),
                              ("PRODUCTS", ["ID", "TITLE"]), ("TAGS", ["ID", "LABEL"])]


def test_recovery_records_the_lost_history_again(tmp_path: Path) -> None:
    """The history is lost after the first run; ``recovery`` records the tables' structures from the
    dictionary (at SCN 1045: PRICE present) and streams on. A third run, when the dictionary has
    PRICE dropped already, decodes the insert at SCN 1051 (with PRICE) from that record."""
    root = str(tmp_path / "lake")
    _first_run(root)
    shutil.rmtree(history_path(root, SOURCE))
    capture_once(root, database(1045, 1048), options={"snapshot.mode": "recovery"})
    assert _history(root) == [("PRODUCTS", ["ID", "TITLE", "PRICE"])]
    assert events(root, "PRODUCTS") == FIRST_RUN
    capture_once(root, database(1100, 1100))
    assert events(root, "PRODUCTS") == EXPECTED_PRODUCTS


@pytest.mark.parametrize(("given", "read"), [("schema_only", "no_data"), ("schema_only_recovery", "recovery")])
def test_the_2x_names_are_read_as_their_3x_modes_with_a_warning(given: str, read: str,
                                                                 caplog: pytest.LogCaptureFixture) -> None:
    config, problems = build_oracle_config(name="ora", connection={"host": "h", "user": "u", "database": "D"},
                                           options={"snapshot.mode": given}, path="sources[0]")
    assert problems == [] and config is not None and config.snapshot_mode == read
    assert config.warnings == (f"snapshot.mode={given} was removed in Debezium 3.0; it is read as {read}",)
    with caplog.at_level("WARNING"):
        connector(database(995, 1100), {"snapshot.mode": given}).open(None).close()
    assert f"snapshot.mode={given} was removed" in caplog.text
