"""The real ``spark-submit`` of the installed pyspark package, the project wheel, and fresh
virtualenvs to install it into (shared by the spark-submit job tests and the bundle tests).

* `SPARK_HOME`, `SPARK_SUBMIT`: pyspark's own Spark distribution and its launcher;
* `submit_env`: the environment a spark-submit child needs (``SPARK_HOME``, the Python of its
  driver and workers);
* `project_wheel`: the wheel built with plain pip from a copy of the sources (as
  ``cdc-lakehouse bundle`` builds it);
* `new_venv`, `pip_install`: a fresh venv (no pip of its own) and this pip installing into it
  with ``-c constraints.txt`` (pip's cache makes it quick).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pyspark

from pipelines.bundles.wheel import build_wheel

ROOT = Path(__file__).resolve().parents[2]
CONSTRAINTS = ROOT / "constraints.txt"
SPARK_HOME = Path(pyspark.__file__).parent
SPARK_SUBMIT = SPARK_HOME / "bin" / "spark-submit"


def submit_env(python: str | Path = sys.executable) -> dict[str, str]:
    """spark-submit's environment: pyspark's Spark, and ``python`` for the driver and the workers."""
    assert SPARK_SUBMIT.exists(), SPARK_SUBMIT
    return {"SPARK_HOME": str(SPARK_HOME), "PYSPARK_PYTHON": str(python), "PYSPARK_DRIVER_PYTHON": str(python)}


def run(*cmd: str | Path, cwd: Path | None = None, env: dict[str, str] | None = None,
        timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """Run ``cmd`` outside this test's Python setup (no PYTHONPATH, no active venv) and require exit 0."""
    base = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}
    proc = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, cwd=cwd,
                          env={**base, **(env or {})}, timeout=timeout)
    assert proc.returncode == 0, f"{proc.args}\nexit {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    return proc


def project_wheel(out: Path) -> Path:
    """The project wheel, built with plain pip from a copy of the sources into ``out``."""
    return build_wheel(out)


def new_venv(path: Path) -> Path:
    """A fresh virtualenv without pip (`pip_install` installs into it)."""
    run(sys.executable, "-m", "venv", "--without-pip", path)
    return path


def pip_install(venv: Path, *requirements: str | Path) -> None:
    """Install into ``venv`` with this Python's pip, constrained as scripts/setup.sh does."""
    run(sys.executable, "-m", "pip", "--python", venv / "bin" / "python", "install", "-c", CONSTRAINTS,
        "--disable-pip-version-check", *requirements)
