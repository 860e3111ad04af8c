"""The packed Python environment of a spark-submit bundle (``--python-env archive``): a fresh
virtualenv with the project wheel and its runtime requirements, pinned by the project's
constraints file, packed with venv-pack into ``env.tar.gz``.

spark-submit ships it with ``--archives env.tar.gz#environment``: YARN and Kubernetes unpack it
as ``./environment`` in each container, and the Python workers run
``./environment/bin/python`` (``spark.pyspark.python``; in cluster deploy mode the driver too).
In client deploy mode (and with a local master) the driver runs on the submitting machine:
the job script unpacks the archive into the bundle's own ``environment`` folder once and runs
the driver from there (``spark.pyspark.driver.python``).

venv-pack keeps the interpreter a symbolic link to the Python the environment was built with:
the machines that run it need that Python (same version, same path). pyspark is not in the
environment: spark-submit puts its own on the Python path. Nothing of the pipeline file (or
any secret) goes into the archive: it holds installed packages only.
"""

from __future__ import annotations

import enum
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from cdc_sources.spi import CdcError, ConfigError, ConfigProblem, MissingDependencyError
from pipelines.bundles.wheel import project_root
from pipelines.config import PipelineConfig
from pipelines.extras import CONNECTOR_DRIVERS

__all__ = ["ENV_ARCHIVE", "ENV_DIR", "ENV_PYTHON", "PythonEnv", "check_constraints", "connector_extras",
           "default_constraints", "pack_environment"]

ENV_ARCHIVE = "env.tar.gz"
"""The packed environment's file name in the bundle."""
ENV_DIR = "environment"
"""The folder it is unpacked as (``--archives env.tar.gz#environment``)."""
ENV_PYTHON = f"./{ENV_DIR}/bin/python"
"""The environment's Python, relative to a container's (or the bundle's) working directory."""


class PythonEnv(enum.StrEnum):
    """How a spark-submit bundle brings its Python code to the cluster."""

    PY_FILES = "py-files"
    """The wheel as ``--py-files``; its requirements are installed on every node beforehand."""
    ARCHIVE = "archive"
    """A packed virtualenv with the wheel and its requirements as ``--archives``."""


def default_constraints() -> Path | None:
    """The source tree's ``constraints.txt`` (None when cdc-lakehouse is installed)."""
    root = project_root()
    return root / "constraints.txt" if root is not None and (root / "constraints.txt").is_file() else None


def connector_extras(config: PipelineConfig) -> list[str]:
    """The extras the environment needs for ``config``: its sources' connectors and, when a silver
    table declares expectations, ``quality`` (sorted)."""
    extras = {CONNECTOR_DRIVERS[s.connector][0] for s in config.sources if s.connector in CONNECTOR_DRIVERS}
    if any(t.expectations for t in config.silver):
        extras.add("quality")
    return sorted(extras)


def check_constraints(constraints: Path | None) -> Path:
    """The constraints file, which must exist.

    Raises:
        ConfigError: none given (installed, not run from the sources) or not a file.
    """
    if constraints is None:
        raise ConfigError([ConfigProblem("--constraints", "cdc-lakehouse is installed, not run from its sources: "
                                                          "pass the constraints file that pins the environment's "
                                                          "requirements with --constraints FILE")])
    if not constraints.is_file():
        raise ConfigError([ConfigProblem("--constraints", f"{constraints} is not a file")])
    return constraints


def pack_environment(wheel: Path, extras: Sequence[str], constraints: Path | None, out: Path) -> Path:
    """Build a virtualenv with ``wheel[extras]`` (pinned by ``constraints``), pack it into
    ``out/env.tar.gz`` and return that path.

    Raises:
        ConfigError: see `check_constraints`.
        MissingDependencyError: venv-pack is not installed.
        CdcError: pip or venv-pack failed (their output is in the message).
    """
    constraints = check_constraints(constraints)
    try:
        import venv_pack  # type: ignore[import-untyped]
    except ImportError as exc:
        raise MissingDependencyError("venv-pack", "bundle") from exc
    requirement = f"{wheel}[{','.join(extras)}]" if extras else str(wheel)
    with tempfile.TemporaryDirectory(prefix="cdc-env-") as tmp:
        venv = Path(tmp) / "env"
        _run([sys.executable, "-m", "venv", "--without-pip", str(venv)], "creating the environment")
        _run([sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"), "install", "-q",
              "--disable-pip-version-check", "--no-input", "-c", str(constraints), requirement],
             "installing the environment's packages")
        archive = out / ENV_ARCHIVE
        try:
            venv_pack.pack(prefix=str(venv), output=str(archive), verbose=False)
        except Exception as exc:  # venv-pack raises VenvPackException and OSError
            raise CdcError(f"packing the environment with venv-pack failed: {exc}") from exc
    archive.chmod(0o644)  # like the bundle's other files (the temporary file it was written as is private)
    return archive


def _run(cmd: list[str], what: str) -> None:
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise CdcError(f"{what} failed:\n{proc.stdout}{proc.stderr}")
