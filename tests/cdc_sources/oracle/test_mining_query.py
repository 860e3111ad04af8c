"""cdc_sources.oracle.mining_query against Debezium 3.6.3's BufferedLogMinerQueryBuilder."""

from __future__ import annotations

import json
import re
from typing import Any

from cdc_sources.oracle.mining_query import MiningQuerySettings, mining_query
from cdc_sources.oracle.options import parse_oracle_options
from tests.cdc_sources.oracle.java_probe import run_probe

CASES: list[dict[str, Any]] = [
    {},
    {"database.pdb.name": "PDB1"},
    {"database.pdb.name": '"pdb1"'},
    {"lob.enabled": "true"},
    {"schema.history.internal.store.only.captured.tables.ddl": "true"},
    {"log.mining.buffer.track.rs_id": "false", "log.mining.buffer.track.client_id": "false"},
    {"log.mining.query.filter.mode": "in", "schema.include.list": "DEBEZIUM,app",
     "table.include.list": "DEBEZIUM.CUSTOMERS"},
    {"log.mining.query.filter.mode": "in", "schema.exclude.list": "SCRATCH",
     "table.exclude.list": "APP.LOG, APP.AUDIT"},
    {"log.mining.query.filter.mode": "in", "table.include.list": "APP\\.T1", "log.mining.strategy": "hybrid"},
    {"log.mining.query.filter.mode": "regex", "schema.exclude.list": "TEST.*", "table.exclude.list": "APP\\.T[0-9]+"},
    {"log.mining.query.filter.mode": "regex", "schema.include.list": "^APP$,DEB.*", "table.include.list": "APP\\..*"},
    {"log.mining.username.exclude.list": "batch,etl"},
    {"log.mining.query.filter.mode": "in", "log.mining.username.exclude.list": "batch"},
    {"log.mining.query.filter.mode": "in", "log.mining.username.include.list": "app,web"},
    {"log.mining.query.filter.mode": "regex", "log.mining.clientid.include.list": "c1"},
    {"log.mining.query.filter.mode": "in", "log.mining.clientid.exclude.list": "c1,c2", "lob.enabled": "true",
     "database.pdb.name": "P"},
    # the signal table is mined whatever the table lists say (in and regex modes)
    {"log.mining.query.filter.mode": "in", "table.include.list": "APP.T1",
     "signal.data.collection": "ORCLPDB1.APP.SIG"},
    {"log.mining.query.filter.mode": "in", "table.include.list": "APP.T1,app.sig",
     "signal.data.collection": "ORCLPDB1.APP.SIG"},
    {"log.mining.query.filter.mode": "in", "table.exclude.list": "APP.T1,APP.SIG",
     "signal.data.collection": "ORCLPDB1.APP.SIG"},
    {"log.mining.query.filter.mode": "regex", "table.include.list": "APP\\.T1",
     "signal.data.collection": "ORCLPDB1.APP.SIG"},
    {"log.mining.query.filter.mode": "regex", "table.include.list": "APP\\.SIG,APP\\.T1",
     "signal.data.collection": "ORCLPDB1.APP.SIG"},
    {"log.mining.query.filter.mode": "regex", "table.exclude.list": "APP\\.T[0-9]+", "database.pdb.name": "PDB1",
     "signal.data.collection": "PDB1.APP.SIG"},
    {"log.mining.query.filter.mode": "in", "schema.include.list": "APP",
     "signal.data.collection": "ORCLPDB1.OTHER.SIG"},
    {"table.include.list": "APP.T1", "signal.data.collection": "ORCLPDB1.APP.SIG"},
]


def as_sql(query: str) -> str:
    """The values of IN lists sorted: Debezium builds some from hash sets, in hash order."""
    return re.sub(r"IN \(([^()]*)\)", lambda m: "IN (" + ",".join(sorted(m.group(1).split(","))) + ")", query)


def test_queries_equal_debeziums() -> None:
    answers = run_probe("MiningQueryProbe.java", [(json.dumps(c),) for c in CASES])
    for case, (theirs,) in zip(CASES, answers, strict=True):
        parsed, problems = parse_oracle_options(case, path="o")
        assert problems == [], case
        ours = mining_query(MiningQuerySettings.from_options(parsed))
        assert as_sql(ours) == as_sql(theirs), f"{case}\n ours:     {ours}\n debezium: {theirs}"
