from __future__ import annotations

from pymysql import converters
from pymysql.constants import FIELD_TYPE

from cdc_sources.mysql.converters import SNAPSHOT_CONVERSIONS


def test_temporal_and_decimal_values_stay_text() -> None:
    for code in (FIELD_TYPE.DECIMAL, FIELD_TYPE.NEWDECIMAL, FIELD_TYPE.DATE, FIELD_TYPE.TIME,
                 FIELD_TYPE.DATETIME, FIELD_TYPE.TIMESTAMP):
        assert SNAPSHOT_CONVERSIONS[code] is converters.through
    assert SNAPSHOT_CONVERSIONS[FIELD_TYPE.LONG] is int
    assert SNAPSHOT_CONVERSIONS[FIELD_TYPE.DOUBLE] is float
    assert SNAPSHOT_CONVERSIONS[str] is converters.escape_str  # encoders kept for queries
