"""Record what an Oracle database answers the connector, and replay it without the database.

`RecordingConnection` wraps a python-oracledb connection: every statement the gateway runs, with
its bind values, column names and rows, and every procedure call, is appended to a JSON-lines
file as it happens. `ReplayConnection` answers from such a file, in the recorded order: the
same statement with the same values gets the recorded rows, anything else is an error naming the
statement. With a real server, a recording made by a capture run (give the connector
``connect=lambda: RecordingConnection(oracledb.connect(...), path)``) becomes a fixture the
tests can replay.

Values are stored as JSON with tags for the types JSON lacks: ``{"$dt": ISO}``,
``{"$dec": text}``, ``{"$hex": bytes}``. The file holds the data the connector read, never the
connection's credentials.
"""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Mapping, Sequence
from datetime import datetime
from decimal import Decimal
from pathlib import Path
from typing import IO, Any

from cdc_sources.oracle.gateway import Connection

__all__ = ["RecordingConnection", "ReplayConnection", "ReplayError"]


class ReplayError(RuntimeError):
    """The connector asked something the recording does not hold (names the statement)."""


def _encode(v: Any) -> Any:
    if isinstance(v, datetime):
        return {"$dt": v.isoformat()}
    if isinstance(v, Decimal):
        return {"$dec": str(v)}
    if isinstance(v, bytes):
        return {"$hex": v.hex()}
    if hasattr(v, "read") and callable(v.read):  # a LOB
        return _encode(v.read())
    return v


def _decode(v: Any) -> Any:
    if isinstance(v, dict) and len(v) == 1:
        ((tag, text),) = v.items()
        if tag == "$dt":
            return datetime.fromisoformat(text)
        if tag == "$dec":
            return Decimal(text)
        if tag == "$hex":
            return bytes.fromhex(text)
    return v


class _RecordingCursor:
    def __init__(self, cursor: Any, out: IO[str]) -> None:
        self._cursor = cursor
        self._out = out
        self._entry: dict[str, Any] | None = None

    @property
    def description(self) -> Any:
        return self._cursor.description

    @property
    def arraysize(self) -> int:
        return int(self._cursor.arraysize)

    @arraysize.setter
    def arraysize(self, value: int) -> None:
        self._cursor.arraysize = value

    def execute(self, statement: str, parameters: Sequence[Any] | None = None) -> Any:
        self._flush()
        result = self._cursor.execute(statement, parameters)
        names = [d[0] for d in self._cursor.description or ()]
        self._entry = {"sql": statement, "params": [_encode(p) for p in parameters or ()], "columns": names,
                       "rows": []}
        return result

    def fetchmany(self, size: int | None = None) -> list[Any]:
        rows = self._cursor.fetchmany(size) if size is not None else self._cursor.fetchmany()
        if self._entry is not None:
            self._entry["rows"].extend([_encode(v) for v in r] for r in rows)
        return list(rows)

    def callproc(self, name: str, parameters: Any = None, keyword_parameters: Any = None) -> Any:
        self._flush()
        result = self._cursor.callproc(name, parameters, keyword_parameters)
        self._write({"call": name, "kw": {k: _encode(v) for k, v in dict(keyword_parameters or {}).items()}})
        return result

    def close(self) -> None:
        self._flush()
        self._cursor.close()

    def _flush(self) -> None:
        if self._entry is not None:
            self._write(self._entry)
            self._entry = None

    def _write(self, entry: Mapping[str, Any]) -> None:
        self._out.write(json.dumps(entry, separators=(",", ":")) + "\n")
        self._out.flush()


class RecordingConnection:
    """A connection that appends every answer it gets to ``path`` (see the module doc)."""

    def __init__(self, connection: Connection, path: str | Path) -> None:
        self._conn = connection
        self._out = Path(path).open("a", encoding="utf-8")  # noqa: SIM115 - open while the connection is

    def cursor(self) -> _RecordingCursor:
        return _RecordingCursor(self._conn.cursor(), self._out)

    def close(self) -> None:
        self._out.close()
        self._conn.close()


class _ReplayCursor:
    def __init__(self, owner: ReplayConnection) -> None:
        self._owner = owner
        self._rows: list[tuple[Any, ...]] = []
        self.description: list[tuple[Any, ...]] | None = None
        self.arraysize = 100

    def execute(self, statement: str, parameters: Sequence[Any] | None = None) -> None:
        entry = self._owner.take(("sql", statement, json.dumps([_encode(p) for p in parameters or ()])))
        self.description = [(c, None, None, None, None, None, True) for c in entry["columns"]] or None
        self._rows = [tuple(_decode(v) for v in r) for r in entry["rows"]]

    def fetchmany(self, size: int | None = None) -> list[tuple[Any, ...]]:
        n = self.arraysize if size is None else size
        out, self._rows = self._rows[:n], self._rows[n:]
        return out

    def callproc(self, name: str, parameters: Any = None, keyword_parameters: Any = None) -> list[Any]:
        kw = {k: _encode(v) for k, v in dict(keyword_parameters or {}).items()}
        self._owner.take(("call", name, json.dumps(kw, sort_keys=True)))
        return []

    def close(self) -> None:
        self._rows = []


class ReplayConnection:
    """Answers from a recording made by `RecordingConnection`: each statement (or call) with the
    same values takes the next recorded answer for it; one the recording lacks is a `ReplayError`."""

    def __init__(self, path: str | Path) -> None:
        self._answers: dict[tuple[str, str, str], deque[dict[str, Any]]] = {}
        for n, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), start=1):
            entry = json.loads(line)
            if "sql" in entry:
                key = ("sql", entry["sql"], json.dumps(entry["params"]))
            elif "call" in entry:
                key = ("call", entry["call"], json.dumps(entry["kw"], sort_keys=True))
            else:
                raise ReplayError(f"{path}:{n}: neither a statement nor a call")
            self._answers.setdefault(key, deque()).append(entry)

    def take(self, key: tuple[str, str, str]) -> dict[str, Any]:
        queue = self._answers.get(key)
        if not queue:
            raise ReplayError(f"not in the recording (or asked more often than recorded): {key[1][:200]!r} "
                              f"with {key[2][:200]}")
        return queue.popleft()

    def cursor(self) -> _ReplayCursor:
        return _ReplayCursor(self)

    def close(self) -> None:
        pass

