"""Fast decoding of binlog row images: a drop-in for python-mysql-replication's ``RowsEvent.rows``.

`decode_rows` (or a `RowDecoder` of one's own) returns exactly the list the library's ``rows``
property returns (same values, types, ``none_sources`` reasons and key order), decoding with
Python source generated per table map and null pattern instead of the library's per-value type
dispatch; it falls back to the library for whatever it does not reproduce.
"""

from cdc_sources.mysql.rows.decoder import DecodeStats, RowDecoder, decode_rows

__all__ = ["DecodeStats", "RowDecoder", "decode_rows"]
