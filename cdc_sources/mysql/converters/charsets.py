"""MySQL character sets as Debezium decodes them, and whether the binlog library already does.

Debezium decodes a character column's bytes with the Java charset that MySQL Connector/J maps
the column's MySQL character set to (``utf8mb4`` -> UTF-8, ``latin1`` -> Cp1252...), replacing
malformed input with U+FFFD. python-mysql-replication decodes with its own table and hands
over ``str``; it returns the raw ``bytes`` only when Python has no codec of that name (for
example ``swe7``, ``dec8`` or ``ucs2``). Those bytes are decoded here as Java would.
"""

from __future__ import annotations

import codecs
from typing import Final

JAVA_EQUIVALENT_CODECS: Final[dict[str, str]] = {
    "armscii8": "latin-1", "ascii": "ascii", "big5": "big5", "binary": "latin-1", "cp1250": "cp1250",
    "cp1251": "cp1251", "cp1256": "cp1256", "cp1257": "cp1257", "cp850": "cp850", "cp852": "cp852",
    "cp866": "cp866", "cp932": "cp932", "dec8": "latin-1", "eucjpms": "euc_jp", "euckr": "euc_kr",
    "gb18030": "gb18030", "gb2312": "gb2312", "gbk": "gbk", "geostd8": "latin-1", "greek": "iso8859_7",
    "hebrew": "iso8859_8", "hp8": "latin-1", "keybcs2": "latin-1", "koi8r": "koi8_r", "koi8u": "koi8_r",
    "latin1": "cp1252", "latin2": "iso8859_2", "latin5": "iso8859_9", "latin7": "iso8859_13",
    "macce": "mac_latin2", "macroman": "mac_roman", "sjis": "shift_jis", "swe7": "latin-1",
    "tis620": "tis_620", "ucs2": "utf-16-be", "ujis": "euc_jp", "utf16": "utf-16-be", "utf16le": "utf-16-le",
    "utf32": "utf-32-be", "utf8": "utf-8", "utf8mb3": "utf-8", "utf8mb4": "utf-8",
}
"""MySQL character set -> the Python codec equivalent to the Java charset Debezium uses (charsets
Java does not know decode as ISO-8859-1, byte for byte)."""


def python_codec(charset: str | None) -> str:
    """The codec Debezium's decoding of ``charset`` corresponds to (UTF-8 when unknown or None)."""
    if charset is None:
        return "utf-8"
    return JAVA_EQUIVALENT_CODECS.get(charset.lower(), "utf-8")


def binlog_library_decodes(charset: str | None) -> bool:
    """Whether python-mysql-replication hands over ``str`` (not ``bytes``) for this character set."""
    if charset is None:
        return True  # it falls back to UTF-8
    from pymysqlreplication.constants.CHARSET import charset_by_name

    known = charset_by_name(charset)
    try:
        codecs.lookup(known.encoding if known is not None else charset)
    except LookupError:
        return False
    return True
