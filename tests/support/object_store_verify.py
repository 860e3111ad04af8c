"""`verify` on an object-store lakehouse, shared by the S3 and Azure end-to-end tests: silver equals
the source (exit 0), then a silver row deleted on purpose through delta-rs is found (exit 1, the key
named) and the store's secret is printed nowhere.

Capture runs meanwhile, as verify expects: its read point is the WAL insert position, which moves
on a quiet server too (checkpoints), and only a running capture's offsets follow it."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

import pytest
from deltalake import DeltaTable

from pipelines.cli import main
from tests.support.capture_process import CaptureProcess


def verify_finds_silver_equal_then_a_deleted_row(config: Path, silver_uri: str, storage: Mapping[str, str],
                                                 secret: str, capsys: pytest.CaptureFixture[str]) -> None:
    """Capture and silver have run to the end and the source is quiet."""
    capture = CaptureProcess(config, config.parent).start_planned()
    try:
        _verify(str(config), silver_uri, storage, secret, capsys)
    finally:
        assert capture.terminate() == 0, capture.tail()
    assert secret not in capture.stdout.read_text() + capture.stderr.read_text()


def _verify(config: str, silver_uri: str, storage: Mapping[str, str], secret: str,
            capsys: pytest.CaptureFixture[str]) -> None:
    capsys.readouterr()
    assert main(["verify", "-c", config, "--json", "--timeout", "120"]) == 0
    agreed = capsys.readouterr()
    result = json.loads(agreed.out)
    assert result["tables"] and all(t["equal"] and t["source_rows"] == t["silver_rows"] > 0
                                    for t in result["tables"]), result
    table = DeltaTable(silver_uri, storage_options=dict(storage))
    (victim,) = table.to_pyarrow_table(columns=["id"]).slice(0, 1).column("id").to_pylist()
    table.delete(f"id = {victim}")
    name = silver_uri.rstrip("/").rsplit("/", 1)[1]
    assert main(["verify", "-c", config, "--timeout", "120", "--table", name]) == 1
    found = capsys.readouterr()
    assert f"verify {name}: DIFFERENT" in found.out, found.out
    assert any(line.split() == [f"id={victim}", "missing", "in", "silver"] for line in found.out.splitlines()), \
        found.out
    for out in (agreed, found):
        assert secret not in out.out and secret not in out.err
