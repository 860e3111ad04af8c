"""Oracle's signal.data.collection: <database>.<schema>.<table>, the database checked, problems with their key path."""

from __future__ import annotations

from cdc_sources.oracle.signal_table import oracle_signal_settings, signal_table_problems


def test_the_signal_table_is_named_with_its_database() -> None:
    raw = {"signal.data.collection": "ORCLPDB1.INVENTORY.DBZ_SIGNAL"}
    assert signal_table_problems(raw, "sources[0].options", "orclpdb1") == []
    assert oracle_signal_settings(raw, "ORCLPDB1").table.parts == ("INVENTORY", "DBZ_SIGNAL")  # type: ignore[union-attr]
    two = signal_table_problems({"signal.data.collection": "INVENTORY.DBZ_SIGNAL"}, "sources[0].options", "ORCLPDB1")
    assert [p.path for p in two] == ["sources[0].options.signal.data.collection"]
    assert "<database>.<schema>.<table>" in two[0].message
    other = signal_table_problems({"signal.data.collection": "CDB.INVENTORY.DBZ_SIGNAL"}, "o", "ORCLPDB1")
    assert "names database 'CDB'" in other[0].message
