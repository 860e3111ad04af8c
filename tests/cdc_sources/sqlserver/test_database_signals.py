"""Which databases a signal goes to when a SQL Server source captures several."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from cdc_sources.common.incremental_snapshot import FileSignals
from cdc_sources.common.signal_options import signal_settings
from cdc_sources.common.signals import parse_signal
from cdc_sources.sqlserver.config import build_sqlserver_config
from cdc_sources.sqlserver.database_signals import signal_databases
from cdc_sources.sqlserver.signal_sender import signal_targets

DATABASES = ["sales", "Inventory"]


def _signal(kind: str, data: dict[str, object] | None) -> object:
    return parse_signal("s1", kind, None if data is None else orjson.dumps(data).decode(), where="test")


@pytest.mark.parametrize(("kind", "data", "expected"), [
    ("execute-snapshot", {"data-collections": ["inventory.dbo.items"]}, ["Inventory"]),
    ("execute-snapshot", {"data-collections": ["INVENTORY.dbo.items", "sales.dbo.orders"]}, DATABASES),
    ("execute-snapshot", {"data-collections": ['"sales"."dbo"."a.b"']}, ["sales"]),
    ("execute-snapshot", {"data-collections": ["sales.dbo.orders", "sales.dbo.lines"]}, ["sales"]),
    ("execute-snapshot", {"data-collections": ["sales.dbo.orders", "sales.dbo.o.*"]}, DATABASES),  # a regex: all
    ("execute-snapshot", {"data-collections": ["elsewhere.dbo.t"]}, DATABASES),  # no such database: everyone says so
    ("stop-snapshot", {"data-collections": ["sales.dbo.orders"], "type": "incremental"}, ["sales"]),
    ("stop-snapshot", {"type": "incremental"}, DATABASES),
    ("pause-snapshot", None, DATABASES),
    ("log", {"message": "hi"}, DATABASES),
])
def test_a_signal_goes_to_the_databases_it_names(kind: str, data: dict[str, object] | None,
                                                 expected: list[str]) -> None:
    assert signal_databases(_signal(kind, data), DATABASES) == expected  # type: ignore[arg-type]


def test_cdc_lakehouse_signal_inserts_into_the_named_databases_signal_tables() -> None:
    config, problems = build_sqlserver_config(
        name="shop", connection={"user": "cdc"},
        options={"database.names": "sales,inventory,hr", "topic.prefix": "shop",
                 "signal.data.collection": "sales.dbo.sig,inventory.dbo.sig"}, path="s")
    assert config is not None, problems
    row = ("id-1", "execute-snapshot", orjson.dumps({"data-collections": ["inventory.dbo.items"]}).decode())
    assert [t.database for t in signal_targets(config, row)] == ["inventory"]
    assert [t.database for t in signal_targets(config, ("id-2", "pause-snapshot", None))] == ["sales", "inventory"]
    assert [t.database for t in signal_targets(config, ("id-3", "execute-snapshot", "{bad"))] == ["sales", "inventory"]


def test_the_file_channel_is_read_once_for_every_database(tmp_path: Path) -> None:
    path = tmp_path / "signals.txt"
    lines = [{"id": "f1", "type": "execute-snapshot", "data": {"data-collections": ["sales.dbo.orders"]}},
             {"id": "w", "type": "snapshot-window-open", "data": None}, "not json"]
    path.write_text("".join((line if isinstance(line, str) else orjson.dumps(line).decode()) + "\n"
                            for line in lines))
    reader = FileSignals(signal_settings({"signal.enabled.channels": "source,file", "signal.file": str(path),
                                          "signal.poll.interval.ms": 60000}))
    taken = reader.take(force=True)
    assert [s.id for s in taken] == ["f1"]  # the watermark and the bad line are logged and dropped
    assert not path.exists() and reader.take(force=True) == []
    path.write_text(orjson.dumps(lines[0]).decode() + "\n")
    assert reader.take() == []  # not due before signal.poll.interval.ms
    assert [s.id for s in reader.take(force=True)] == ["f1"]
    path.write_text(orjson.dumps(lines[0]).decode() + "\n")
    off = FileSignals(signal_settings({"signal.file": str(path)}))
    assert off.take(force=True) == [] and path.exists()  # the channel is off by default
