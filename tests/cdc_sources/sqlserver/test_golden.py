"""Golden events: the create, update and delete examples of Debezium's SQL Server connector
documentation (table ``testDB.dbo.customers``, server ``server1``), produced from the change-table
rows they describe.

The documented payloads are of an older Debezium; the expected values below are corrected to
Debezium 3.6.3 (each difference checked against the 3.6.3 jar by test_source_info.py):

- ``source.version`` is ``3.6.3.Final`` (documented ``1.4.2.Final``);
- ``source.snapshot`` is the string ``"false"`` (documented as the boolean ``false``);
- ``source.event_serial_no`` is a number (documented as the strings ``"1"``, ``"2"``);
- ``source`` also has ``sequence`` (null), ``ts_us`` and ``ts_ns`` (after ``db``), and the
  envelope has ``transaction`` (null without transaction metadata);
- the documented delete description mentions a ``pos`` field, which does not exist.
The processing-time ``ts_*`` fields of the envelope are not compared (they are the capture's clock).
"""

from __future__ import annotations

import json
from typing import Any

from cdc_sources.sqlserver.changes import CaptureInstance, ChangeEvent, ChangeRow, ChangeStream, EventKind, TableId
from cdc_sources.sqlserver.converters import ConverterSettings, SqlServerColumn, column_converter
from cdc_sources.sqlserver.envelope import key_payload, value_payload
from cdc_sources.sqlserver.lsn import Lsn
from cdc_sources.sqlserver.source_info import SqlServerSource

CUSTOMERS = CaptureInstance("dbo_customers", TableId("testDB", "dbo", "customers"),
                            Lsn.parse("00000025:00000d98:00a2"), ("id", "first_name", "last_name", "email"), ("id",))
COLUMNS = [SqlServerColumn("id", "int", 10, 0, optional=False),
           *(SqlServerColumn(n, "varchar", 255, optional=False) for n in ("first_name", "last_name", "email"))]
CONVERTERS = {c.name: column_converter(c, ConverterSettings()) for c in COLUMNS}
COMMIT_TIMES = {"00000027:00000758:0005": 1559729468470, "00000027:00000ac0:0007": 1559729995937,
                "00000027:00000db0:0007": 1559730445243}
"""Commit LSN -> commit time (what ``sys.fn_cdc_map_lsn_to_time`` answers), from the examples."""

JOHN = (1005, "john", "doe", "john.doe@example.org")
NOREPLY = (1005, "john", "doe", "noreply@example.org")
ROWS = [
    ChangeRow("dbo_customers", Lsn.parse("00000027:00000758:0005"), Lsn.parse("00000027:00000758:0003"), 2, JOHN),
    ChangeRow("dbo_customers", Lsn.parse("00000027:00000ac0:0007"), Lsn.parse("00000027:00000ac0:0002"), 3, JOHN),
    ChangeRow("dbo_customers", Lsn.parse("00000027:00000ac0:0007"), Lsn.parse("00000027:00000ac0:0002"), 4, NOREPLY),
    ChangeRow("dbo_customers", Lsn.parse("00000027:00000db0:0007"), Lsn.parse("00000027:00000db0:0005"), 1, NOREPLY),
]


def _source(change: str, commit: str, serial: int) -> str:
    return (f'{{"version":"3.6.3.Final","connector":"sqlserver","name":"server1","ts_ms":{COMMIT_TIMES[commit]},'
            f'"snapshot":"false","db":"testDB","sequence":null,"ts_us":{COMMIT_TIMES[commit] * 1000},'
            f'"ts_ns":{COMMIT_TIMES[commit] * 10**6},"schema":"dbo","table":"customers","change_lsn":"{change}",'
            f'"commit_lsn":"{commit}","event_serial_no":{serial}}}')


JOHN_JSON = '{"id":1005,"first_name":"john","last_name":"doe","email":"john.doe@example.org"}'
NOREPLY_JSON = '{"id":1005,"first_name":"john","last_name":"doe","email":"noreply@example.org"}'
EXPECTED = [
    # (key, value without the envelope's processing-time ts_*), as documented and corrected
    ('{"id":1005}', '{"before":null,"after":' + JOHN_JSON + ',"source":'
     + _source("00000027:00000758:0003", "00000027:00000758:0005", 1) + ',"transaction":null,"op":"c"}'),
    ('{"id":1005}', '{"before":' + JOHN_JSON + ',"after":' + NOREPLY_JSON + ',"source":'
     + _source("00000027:00000ac0:0002", "00000027:00000ac0:0007", 2) + ',"transaction":null,"op":"u"}'),
    ('{"id":1005}', '{"before":' + NOREPLY_JSON + ',"after":null,"source":'
     + _source("00000027:00000db0:0005", "00000027:00000db0:0007", 1) + ',"transaction":null,"op":"d"}'),
    ('{"id":1005}', "null"),  # the tombstone after the delete
]


def _produced() -> list[tuple[Any, Any]]:
    out = []
    for event in ChangeStream([CUSTOMERS]).events(ROWS):
        assert isinstance(event, ChangeEvent)
        commit = str(event.position.commit)
        source = SqlServerSource("server1", COMMIT_TIMES[commit] * 10**6, "testDB", "dbo", "customers",
                                 event.position.commit, event.position.change, event.serial)
        out.append((key_payload(event, CONVERTERS), value_payload(event, source, CONVERTERS)))
    return out


def test_documented_examples_field_by_field_in_order() -> None:
    produced = _produced()
    assert len(produced) == len(EXPECTED) == 4
    for (key, value), (want_key, want_value) in zip(produced, EXPECTED, strict=True):
        assert json.dumps(key, separators=(",", ":")) == want_key
        assert json.dumps(value, separators=(",", ":")) == want_value


def test_kinds_and_serials_of_the_examples() -> None:
    events = [e for e in ChangeStream([CUSTOMERS]).events(ROWS) if isinstance(e, ChangeEvent)]
    assert [(e.kind, e.serial) for e in events] == [(EventKind.CREATE, 1), (EventKind.UPDATE, 2),
                                                    (EventKind.DELETE, 1), (EventKind.TOMBSTONE, 1)]
