"""Hand-written LogMiner LOB operation sequences (``lob.enabled``), in the shapes Debezium's own
parser tests and its commit consumer's documentation give: an insert with ``EMPTY_CLOB()`` /
``EMPTY_BLOB()`` then ``SELECT_LOB_LOCATOR`` and ``LOB_WRITE`` rows, updates that set a LOB directly,
updates leaving LOBs alone, deletes, writes at offsets (gaps, overwrites), ``LOB_ERASE``, keyless
tables, quotes in values, and a table without LOB columns in between.

Each case is a table (columns ``name:jdbcType:length``, key) and its rows
(``(operation code, ROW_ID, SQL_REDO)``) of one committed transaction.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["CASES", "LobCase", "lob_write", "locator"]

CLOB, NCLOB, BLOB, NUMBER, VARCHAR = 2005, 2011, 2004, 2, 12
INS, DEL, UPD, SEL, WRITE, ERASE = 1, 2, 3, 9, 10, 29
R1, R2, R3 = "AAAR1hAAHAAAAI0AAA", "AAAR1hAAHAAAAI0AAB", "AAAR1hAAHAAAAI0AAC"

_DECLARE = ("DECLARE \n loc_c CLOB; \n buf_c VARCHAR2(6174); \n loc_b BLOB; \n buf_b RAW(6174); \n loc_nc NCLOB; \n"
            " buf_nc NVARCHAR2(6174); \nBEGIN\n")


@dataclass(frozen=True)
class LobCase:
    name: str
    columns: tuple[tuple[str, int, int], ...]
    key: tuple[str, ...]
    rows: tuple[tuple[int, str, str], ...]


def locator(column: str, where: str, *, into: str = "loc_c") -> str:
    return f'{_DECLARE} select "{column}" into {into} from "DEBEZIUM"."T" where {where} for update;'


def lob_write(data: str, length: int, offset: int, *, buf: str = "buf_c", loc: str = "loc_c") -> str:
    return f"{_DECLARE} {buf} := {data};\n  dbms_lob.write({loc}, {length}, {offset}, {buf});\nEND;"


STD = (("ID", NUMBER, 10), ("NAME", VARCHAR, 20), ("DOC", CLOB, 4000), ("PIC", BLOB, 4000))
KEYLESS = (("NAME", VARCHAR, 20), ("DOC", CLOB, 4000))
WIDE = (("ID", NUMBER, 10), ("DOC", CLOB, 4000), ("NDOC", NCLOB, 4000))


def _ins(key: int, name: str, doc: str = "EMPTY_CLOB()", pic: str = "EMPTY_BLOB()") -> str:
    return f"insert into \"DEBEZIUM\".\"T\"(\"ID\",\"NAME\",\"DOC\",\"PIC\") values ('{key}','{name}',{doc},{pic});"


def _w(key: int, name: str) -> str:
    return f"\"ID\" = '{key}' and \"NAME\" = '{name}'"


CASES: tuple[LobCase, ...] = (
    LobCase("insert with a CLOB and a BLOB written", STD, ("ID",), (
        (INS, R1, _ins(1, "a")),
        (SEL, R1, locator("DOC", _w(1, "a"))),
        (WRITE, R1, lob_write("'hello '", 6, 1)),
        (WRITE, R1, lob_write("'world'", 5, 7)),
        (SEL, R1, locator("PIC", _w(1, "a"), into="loc_b")),
        (WRITE, R1, lob_write("HEXTORAW('0102ff')", 3, 1, buf="buf_b", loc="loc_b")),
    )),
    LobCase("insert with empty LOBs, nothing written", STD, ("ID",), ((INS, R1, _ins(2, "b")),)),
    LobCase("insert with a small CLOB set by an update", STD, ("ID",), (
        (INS, R1, _ins(3, "c")),
        (UPD, R1, "update \"DEBEZIUM\".\"T\" set \"DOC\" = 'short' where \"ID\" = '3' and \"NAME\" = 'c';"),
    )),
    LobCase("update of the CLOB only, through the locator", STD, ("ID",), (
        (SEL, R1, locator("DOC", _w(4, "d"))),
        (WRITE, R1, lob_write("'new text'", 8, 1)),
    )),
    LobCase("update of a non-LOB column: LOBs unavailable", STD, ("ID",), (
        (UPD, R1, "update \"DEBEZIUM\".\"T\" set \"NAME\" = 'e2' where \"ID\" = '5' and \"NAME\" = 'e';"),
    )),
    LobCase("two non-LOB updates of one row stay two events", STD, ("ID",), (
        (UPD, R1, "update \"DEBEZIUM\".\"T\" set \"NAME\" = 'f2' where \"ID\" = '6' and \"NAME\" = 'f';"),
        (UPD, R1, "update \"DEBEZIUM\".\"T\" set \"NAME\" = 'f3' where \"ID\" = '6' and \"NAME\" = 'f2';"),
    )),
    LobCase("update then a CLOB update of the same row merge", STD, ("ID",), (
        (UPD, R1, "update \"DEBEZIUM\".\"T\" set \"NAME\" = 'g2' where \"ID\" = '7' and \"NAME\" = 'g';"),
        (UPD, R1, "update \"DEBEZIUM\".\"T\" set \"DOC\" = 'x' where \"ID\" = '7' and \"NAME\" = 'g2';"),
    )),
    LobCase("delete", STD, ("ID",), (
        (DEL, R1, "delete from \"DEBEZIUM\".\"T\" where \"ID\" = '8' and \"NAME\" = 'h';"),
    )),
    LobCase("insert, write, then delete of the same row", STD, ("ID",), (
        (INS, R1, _ins(9, "i")),
        (SEL, R1, locator("DOC", _w(9, "i"))),
        (WRITE, R1, lob_write("'gone'", 4, 1)),
        (DEL, R1, "delete from \"DEBEZIUM\".\"T\" where \"ID\" = '9' and \"NAME\" = 'i';"),
    )),
    LobCase("two rows interleaved", STD, ("ID",), (
        (INS, R1, _ins(10, "j")),
        (INS, R2, _ins(11, "k")),
        (SEL, R1, locator("DOC", _w(10, "j"))),
        (WRITE, R1, lob_write("'ten'", 3, 1)),
        (SEL, R2, locator("DOC", _w(11, "k"))),
        (WRITE, R2, lob_write("'eleven'", 6, 1)),
    )),
    LobCase("a write with a gap and an overwrite in the middle", STD, ("ID",), (
        (INS, R1, _ins(12, "l")),
        (SEL, R1, locator("DOC", _w(12, "l"))),
        (WRITE, R1, lob_write("'abcdef'", 6, 1)),
        (WRITE, R1, lob_write("'XY'", 2, 10)),
        (WRITE, R1, lob_write("'cd'", 2, 3)),
        (WRITE, R1, lob_write("'zzzz'", 4, 5)),
    )),
    LobCase("writes backwards: middle inserts and their compaction", STD, ("ID",), (
        (INS, R1, _ins(25, "y")),
        (SEL, R1, locator("DOC", _w(25, "y"))),
        *((WRITE, R1, lob_write(f"'{chr(97 + i)}{chr(97 + i)}'", 2, 30 - 2 * i)) for i in range(13)),
        (WRITE, R1, lob_write("'MID'", 3, 9)),
        (WRITE, R1, lob_write("'end'", 3, 200)),
    )),
    LobCase("a BLOB write with a gap", STD, ("ID",), (
        (INS, R1, _ins(13, "m")),
        (SEL, R1, locator("PIC", _w(13, "m"), into="loc_b")),
        (WRITE, R1, lob_write("HEXTORAW('aa')", 1, 1, buf="buf_b", loc="loc_b")),
        (WRITE, R1, lob_write("HEXTORAW('bbcc')", 2, 4, buf="buf_b", loc="loc_b")),
    )),
    LobCase("a write longer than its length is cut", STD, ("ID",), (
        (INS, R1, _ins(14, "n")),
        (SEL, R1, locator("DOC", _w(14, "n"))),
        (WRITE, R1, lob_write("'abcdefgh'", 3, 1)),
    )),
    LobCase("quotes in a value and in LOB text", STD, ("ID",), (
        (INS, R1, _ins(15, "o''k")),
        (SEL, R1, locator("DOC", _w(15, "o''k"))),
        (WRITE, R1, lob_write("'it''s'", 4, 1)),
    )),
    LobCase("LOB_ERASE drops the held change", STD, ("ID",), (
        (INS, R1, _ins(16, "p")),
        (SEL, R1, locator("DOC", _w(16, "p"))),
        (WRITE, R1, lob_write("'abc'", 3, 1)),
        (ERASE, R1, ""),
        (INS, R2, _ins(17, "q")),
    )),
    LobCase("a write without a locator is ignored", STD, ("ID",), (
        (WRITE, R1, lob_write("'lost'", 4, 1)),
        (INS, R1, _ins(18, "r")),
    )),
    LobCase("a lone locator is an update with a null LOB", STD, ("ID",), (
        (INS, R1, _ins(19, "s", "'kept'")),
        (DEL, R2, "delete from \"DEBEZIUM\".\"T\" where \"ID\" = '20' and \"NAME\" = 't';"),
        (SEL, R3, locator("DOC", _w(21, "u"))),
    )),
    LobCase("keyless table: one row state", KEYLESS, (), (
        (INS, R1, "insert into \"DEBEZIUM\".\"T\"(\"NAME\",\"DOC\") values ('v',EMPTY_CLOB());"),
        (SEL, R1, locator("DOC", "\"NAME\" = 'v'")),
        (WRITE, R1, lob_write("'kv'", 2, 1)),
        (INS, R2, "insert into \"DEBEZIUM\".\"T\"(\"NAME\",\"DOC\") values ('w',EMPTY_CLOB());"),
    )),
    LobCase("NCLOB and CLOB of one row", WIDE, ("ID",), (
        (INS, R1, "insert into \"DEBEZIUM\".\"T\"(\"ID\",\"DOC\",\"NDOC\") values ('22',EMPTY_CLOB(),EMPTY_CLOB());"),
        (SEL, R1, locator("NDOC", "\"ID\" = '22'", into="loc_nc")),
        (WRITE, R1, lob_write("'n'", 1, 1, buf="buf_nc", loc="loc_nc")),
        (UPD, R1, "update \"DEBEZIUM\".\"T\" set \"NDOC\" = 'n2' where \"ID\" = '22';"),
        (UPD, R1, "update \"DEBEZIUM\".\"T\" set \"DOC\" = 'd' where \"ID\" = '22';"),
    )),
    LobCase("update of the key and the CLOB", STD, ("ID",), (
        (UPD, R1, "update \"DEBEZIUM\".\"T\" set \"ID\" = '24' where \"ID\" = '23' and \"NAME\" = 'x';"),
        (SEL, R1, locator("DOC", _w(24, "x"))),
        (WRITE, R1, lob_write("'moved'", 5, 1)),
    )),
)
