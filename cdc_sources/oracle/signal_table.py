"""Oracle's ``signal.data.collection``: ``<database>.<schema>.<table>`` (the PDB name for a pluggable database).

The shared signal settings (`cdc_sources.common.signal_options`) name the table by ``schema.table``;
`oracle_signal_settings` checks the database part against the connector's database (``database.pdb.name``
when set, else ``database.dbname``) and keeps the other two, as Debezium's Oracle connector does.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from cdc_sources.common.signal_options import SignalSettings, signal_problems, signal_settings
from cdc_sources.common.signals import CollectionName, parse_collection
from cdc_sources.spi import ConfigProblem

__all__ = ["oracle_signal_settings", "signal_table_problems"]


def _name(text: str, database: str) -> tuple[CollectionName | None, str | None]:
    """The table as ``(schema, table)``, or why ``text`` does not name one of ``database``."""
    try:
        name = parse_collection(text.strip())
    except ValueError as exc:
        return None, str(exc)
    parts = name.parts if name.quoted else tuple(text.strip().split("."))
    if len(parts) != 3 or not all(parts):
        return None, f"must be <database>.<schema>.<table> (the PDB name for a pluggable database), got {text!r}"
    if parts[0].upper() != database.upper():
        return None, (f"names database {parts[0]!r}, but the connector reads {database!r} "
                      "(database.pdb.name when set, else the connection's database)")
    return CollectionName(".".join(parts[1:]), parts[1:], True), None


def signal_table_problems(raw: Mapping[str, Any], path: str, database: str) -> list[ConfigProblem]:
    """Every problem of the signal options in ``raw`` (``path``: where the options are)."""
    problems = [p for p in signal_problems(raw, path) if not p.path.endswith(".signal.data.collection")]
    text = raw.get("signal.data.collection")
    if text is not None:
        _, why = _name(str(text), database)
        if why is not None:
            problems.append(ConfigProblem(f"{path}.signal.data.collection", why))
    return problems


def oracle_signal_settings(values: Mapping[str, Any], database: str) -> SignalSettings:
    """The signal settings of validated options, the table as ``(schema, table)``."""
    text = values.get("signal.data.collection")
    settings = signal_settings({k: v for k, v in values.items() if k != "signal.data.collection"})
    if not text:
        return settings
    name, why = _name(str(text), database)
    if name is None:
        raise ValueError(f"signal.data.collection: {why}")
    return replace(settings, table=name)
