"""A streamed source block rendered from its template equals the block rendered as a whole."""

from __future__ import annotations

import orjson
import pytest

from cdc_sources.postgres.envelope import SourceInfo


@pytest.mark.parametrize(("name", "schema", "table"), [
    ("pg", "public", "items"),
    ('we"ird\\', "schéma ☃", 'ta"ble\n'),
    ("pg", "s\x01\x02", "t\x03\x04\x05\x06"),  # names holding the template's own hole characters
])
@pytest.mark.parametrize(("ts_us", "tx_id"), [(1_795_812_345_678_901, 771), (0, None), (999, 2**32 - 1)])
def test_template_parts_render_the_block(name, schema, table, ts_us, tx_id):
    info = SourceInfo(name, "db")
    head, mid, tail = info.stream_template(schema=schema, table=table).parts(ts_us=ts_us, tx_id=tx_id)
    for commit, lsn in ((None, 42), (123456789, 987654321)):
        sequence = orjson.dumps([None if commit is None else str(commit), str(lsn)]).decode()
        text = f"{head}{orjson.dumps(sequence).decode()}{mid}{lsn}{tail}"
        whole = info.block(schema=schema, table=table, ts_us=ts_us, snapshot="false", tx_id=tx_id, lsn=lsn,
                           sequence=sequence)
        assert text == orjson.dumps(whole).decode()
