"""The binlog point a MariaDB reader resumes at for a GTID position (pure walk over SHOW BINLOG EVENTS)."""

from __future__ import annotations

import pytest

from cdc_sources.mysql.gtid import MariaGtidPosition
from cdc_sources.mysql.gtid_rewind import BinlogEvent, BinlogFileEvents, resume_point
from cdc_sources.spi.operations import RewindRefusedError


def _tx(pos: int, gtid: str, *, ddl: bool = False) -> list[BinlogEvent]:
    """A transaction as MariaDB writes it: GTID event, rows (or the DDL), commit."""
    if ddl:
        return [BinlogEvent(pos, "Gtid", pos + 40, f"GTID {gtid}"),
                BinlogEvent(pos + 40, "Query", pos + 100, "use `db`; CREATE TABLE x (id int)")]
    return [BinlogEvent(pos, "Gtid", pos + 40, f"BEGIN GTID {gtid}"),
            BinlogEvent(pos + 40, "Table_map", pos + 80, "table_id: 1 (db.t)"),
            BinlogEvent(pos + 80, "Write_rows_v1", pos + 120, "table_id: 1 flags: STMT_END_F"),
            BinlogEvent(pos + 120, "Xid", pos + 150, "COMMIT /* xid=7 */")]


def _file(name: str, listed: str, *txs: list[BinlogEvent], end: int) -> BinlogFileEvents:
    head = [BinlogEvent(4, "Format_desc", 256, "Server ver: 10.11"),
            BinlogEvent(256, "Gtid_list", 300, f"[{listed}]"),
            BinlogEvent(300, "Binlog_checkpoint", 340, name)]
    return BinlogFileEvents(name, end, [*head, *(e for tx in txs for e in tx)])


FILES = [
    _file("b.000001", "", _tx(340, "0-1-1"), _tx(490, "0-1-2", ddl=True), _tx(590, "1-1-1"), end=740),
    _file("b.000002", "0-1-2,1-1-1", _tx(340, "0-1-3"), _tx(490, "0-1-4"), end=640),
]


@pytest.mark.parametrize(("wanted", "point"), [
    ("0-1-1", ("b.000001", 490)),         # right after the first transaction
    ("0-1-2", ("b.000001", 590)),         # after a DDL (GTID event without BEGIN)
    ("0-1-2,1-1-1", ("b.000001", 740)),   # both domains: the end of the first file
    ("1-1-1", ("b.000001", 740)),
    ("0-1-3", ("b.000002", 490)),
    ("0-1-4", ("b.000002", 640)),         # the newest transaction: the end of the binlog
    ("1-1-1, 0-1-3", ("b.000002", 490)),  # domain order does not matter
])
def test_the_point_is_the_first_boundary_after_the_wanted_transactions(wanted, point):
    assert resume_point(FILES, MariaGtidPosition.parse(wanted)) == point


def test_a_gtid_before_the_oldest_file_was_purged():
    with pytest.raises(RewindRefusedError, match=r"GTID 0-1-1 is older than the oldest binlog file b.000002 "
                                                 r"\(which starts after 0-1-2\): it was purged"):
        resume_point(FILES[1:], MariaGtidPosition.parse("0-1-1"))


@pytest.mark.parametrize("wanted", ["0-1-9", "0-2-3", "5-1-1"])
def test_a_position_the_binlog_never_reaches_is_refused(wanted):
    with pytest.raises(RewindRefusedError, match=r"the binlog has no point after GTID position .* \(its last GTIDs: "
                                                 "0-1-4,1-1-1"):
        resume_point(FILES, MariaGtidPosition.parse(wanted))


def test_an_empty_position_is_refused():
    with pytest.raises(RewindRefusedError, match="the GTID position is empty"):
        resume_point(FILES, MariaGtidPosition.parse(""))
