"""Runs SqlServerOffsetProbe.java (Debezium 3.6.3's Lsn, TxLogPosition, SqlServerOffsetContext and
source struct) on JSON requests and returns its JSON answers."""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tests.cdc_sources.sqlserver.java_probe import debezium_libs

PROBE = Path(__file__).with_name("SqlServerOffsetProbe.java")


def ask(requests: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    libs = debezium_libs()
    lines = "".join(json.dumps(r) + "\n" for r in requests)
    done = subprocess.run([str(shutil.which("java")), "-Duser.timezone=UTC", "-cp", f"{libs}/*", str(PROBE)],
                          input=lines, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-4000:]
    answers = [json.loads(line[7:]) for line in done.stdout.split("\n") if line.startswith("ANSWER ")]
    assert len(answers) == len(requests), done.stderr[-4000:]
    return answers
