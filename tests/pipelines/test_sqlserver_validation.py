"""``connector: sqlserver`` is validated in full by ``validate``; ``capture`` without Microsoft's
ODBC driver says which driver is missing and how to name another."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def _write(tmp_path: Path, options: str) -> str:
    path = tmp_path / "pipeline.yaml"
    path.write_text(f"pipeline: x\nlakehouse: {{root: \"{tmp_path / 'lake'}\"}}\nsources:\n  - name: shop\n"
                    f"    connector: io.debezium.connector.sqlserver.SqlServerConnector\n"
                    f"    connection: {{host: db.example, user: cdc, password: s3cret-pw}}\n"
                    f"    options: {options}\n")
    return str(path)


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pipelines.cli", *args], capture_output=True, text=True,
                          env=dict(os.environ), timeout=120)


def test_validate_accepts_a_valid_source_and_names_each_bad_option(tmp_path: Path) -> None:
    ok = _cli("validate", "-c", _write(tmp_path, "{database.names: inventory, snapshot.isolation.mode: snapshot}"))
    assert ok.returncode == 0, ok.stderr
    bad = _cli("validate", "-c", _write(tmp_path, "{snapshot.isolation.mode: serializable, database.dbname: d}"))
    assert bad.returncode == 2
    assert "sources[0].options.snapshot.isolation.mode" in bad.stderr and "serializable" in bad.stderr
    assert "sources[0].options.database.dbname" in bad.stderr and "database.names" in bad.stderr
    assert "pipeline.yaml" in bad.stderr and "Traceback" not in bad.stderr
    assert "s3cret-pw" not in bad.stderr + bad.stdout


def test_capture_without_the_odbc_driver_names_it(tmp_path: Path) -> None:
    done = _cli("capture", "-c", _write(tmp_path, "{database.names: inventory, \"driver.Driver\": No Such Driver}"),
                "--until-idle")
    assert done.returncode == 1, done.stderr
    assert "the ODBC driver 'No Such Driver' is not installed" in done.stderr and "driver.Driver" in done.stderr
    assert "Traceback" not in done.stderr and "s3cret-pw" not in done.stderr + done.stdout
