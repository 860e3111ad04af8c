"""The shared channel choice of ``cdc-lakehouse signal``: source table first, then the file, else refused."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from cdc_sources.common.signal_delivery import deliver_signal
from cdc_sources.common.signals import CollectionName
from cdc_sources.spi.operations import OperationRefusedError

DATA = '{"data-collections": ["public.orders"], "type": "incremental"}'


def test_the_signal_table_wins_when_the_source_channel_is_enabled(tmp_path: Path) -> None:
    rows: list[tuple[str, tuple[str, str, str | None]]] = []
    file = tmp_path / "signals.jsonl"
    where = deliver_signal({"signal.data.collection": "public.dbz_signal", "signal.enabled.channels": "source,file",
                            "signal.file": str(file)}, "s1", "execute-snapshot", DATA,
                           lambda table, row: rows.append((table.text, row)))
    assert where == "signal table public.dbz_signal"
    assert rows == [("public.dbz_signal", ("s1", "execute-snapshot", DATA))]
    assert not file.exists()


def test_the_file_channel_gets_one_json_line_per_signal(tmp_path: Path) -> None:
    file = tmp_path / "signals.jsonl"

    def no_insert(table: CollectionName, row: tuple[str, str, str | None]) -> None:
        raise AssertionError("the signal table is not enabled")

    options = {"signal.enabled.channels": "file", "signal.file": str(file)}
    deliver_signal(options, "s1", "execute-snapshot", DATA, no_insert)
    assert deliver_signal(options, "s2", "log", None, no_insert) == f"signal file {file}"
    lines = [orjson.loads(line) for line in file.read_bytes().splitlines()]
    assert lines == [{"id": "s1", "type": "execute-snapshot", "data": orjson.loads(DATA)},
                     {"id": "s2", "type": "log", "data": None}]


def test_no_channel_is_refused_with_what_to_set() -> None:
    with pytest.raises(OperationRefusedError, match=r"signal\.data\.collection.*signal\.enabled\.channels"):
        deliver_signal({}, "s1", "log", None, lambda table, row: None)


def test_read_only_never_writes_the_signal_table(tmp_path: Path) -> None:
    file = tmp_path / "signals.jsonl"

    def no_insert(table: CollectionName, row: tuple[str, str, str | None]) -> None:
        raise AssertionError("read.only: nothing may be written to the source")

    options = {"read.only": True, "signal.data.collection": "public.dbz_signal",
               "signal.enabled.channels": "source,file", "signal.file": str(file)}
    assert deliver_signal(options, "s1", "execute-snapshot", DATA, no_insert) == f"signal file {file}"
    assert [orjson.loads(line)["id"] for line in file.read_bytes().splitlines()] == ["s1"]
    with pytest.raises(OperationRefusedError, match=r"read\.only.*add file to signal\.enabled\.channels"):
        deliver_signal({**options, "read.only": "true", "signal.enabled.channels": "source"}, "s2", "log", None,
                       no_insert)
