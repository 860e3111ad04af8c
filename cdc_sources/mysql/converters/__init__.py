"""MySQL/MariaDB column values rendered exactly as Debezium 3.6.3's MySQL connector renders them.

Input is what python-mysql-replication 1.0.17 delivers in row events (``origin="binlog"``,
``binlog_row_metadata=FULL``) or what pymysql returns for a ``SELECT`` read with
`SNAPSHOT_CONVERSIONS` on a ``time_zone='+00:00'`` session (``origin="snapshot"``). Output is
the value as Kafka Connect's JsonConverter writes it with ``schemas.enable=false`` (bytes as
base64, ``Decimal`` as base64 of the unscaled value...), and the field schema as it writes it
with ``schemas.enable=true``.

`converter_for` picks a specialised converter once per column; the converters do no type
dispatch. One module per type family; `registry` maps types to them.
"""

from cdc_sources.mysql.converters.binlog_rows import restore_empty_sets
from cdc_sources.mysql.converters.converter import converter_for
from cdc_sources.mysql.converters.model import ColumnConverter, Origin, ValueConversionError
from cdc_sources.mysql.converters.settings import MySqlConverterSettings
from cdc_sources.mysql.converters.snapshot_conversions import SNAPSHOT_CONVERSIONS

__all__ = [
    "SNAPSHOT_CONVERSIONS",
    "ColumnConverter",
    "MySqlConverterSettings",
    "Origin",
    "ValueConversionError",
    "converter_for",
    "restore_empty_sets",
]
