"""The project wheel a bundle ships: built from the source tree this package runs from, or a
wheel the user gives (``--wheel``), e.g. when cdc-lakehouse was itself installed from a wheel.

The wheel is built with plain ``pip wheel --no-deps`` from a copy of the sources, so the
source tree gets no ``build/`` or ``*.egg-info`` folders. `extra_requirements` reads which
requirements an extra adds from the wheel's own metadata (for platforms that install the
wheel without extras, such as a Databricks environment).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
import zipfile
from email.parser import Parser
from pathlib import Path

from cdc_sources.spi import CdcError, ConfigError, ConfigProblem

__all__ = ["SOURCES", "build_wheel", "extra_requirements", "project_root", "take_wheel"]

SOURCES = ("pyproject.toml", "README.md", "cdc_sources", "bronze", "silver", "pipelines", "jobs")
"""What the wheel is built from (the packages and the files pyproject.toml names)."""

DISTRIBUTION = "cdc_lakehouse"
"""The wheel's file-name prefix and its import package name in a Databricks wheel task."""


def project_root() -> Path | None:
    """The source tree this package runs from (it holds ``pyproject.toml``), or None when
    cdc-lakehouse is installed (no sources to build from)."""
    root = Path(__file__).resolve().parents[2]
    return root if (root / "pyproject.toml").is_file() and (root / "pipelines").is_dir() else None


def build_wheel(out: Path) -> Path:
    """Build the project wheel into the folder ``out``; returns its path.

    Raises:
        ConfigError: not running from a source tree (then ``--wheel`` is needed).
        CdcError: pip failed (its output is in the message).
    """
    root = project_root()
    if root is None:
        raise ConfigError([ConfigProblem("--wheel", "cdc-lakehouse is installed, not run from its sources: "
                                                    "pass the wheel to ship with --wheel FILE")])
    with tempfile.TemporaryDirectory(prefix="cdc-wheel-") as tmp:
        src = Path(tmp) / "src"
        for name in SOURCES:
            if (root / name).is_dir():
                shutil.copytree(root / name, src / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
            else:
                src.mkdir(parents=True, exist_ok=True)
                shutil.copy2(root / name, src / name)
        built = Path(tmp) / "dist"
        proc = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "--disable-pip-version-check",
                               "-w", str(built), str(src)], capture_output=True, text=True)
        if proc.returncode != 0:
            raise CdcError(f"building the cdc-lakehouse wheel failed:\n{proc.stdout}{proc.stderr}")
        (wheel,) = built.glob(f"{DISTRIBUTION}-*.whl")
        out.mkdir(parents=True, exist_ok=True)
        return Path(shutil.copy2(wheel, out / wheel.name))


def take_wheel(given: Path | None, out: Path) -> Path:
    """The wheel to ship, in the folder ``out``: ``given`` (checked) or a freshly built one.

    Raises:
        ConfigError: ``given`` is not a cdc-lakehouse wheel.
    """
    if given is None:
        return build_wheel(out)
    if not given.is_file() or not given.name.startswith(f"{DISTRIBUTION}-") or given.suffix != ".whl":
        raise ConfigError([ConfigProblem("--wheel", f"{given} is not a cdc-lakehouse wheel file "
                                                    f"({DISTRIBUTION}-<version>-*.whl)")])
    out.mkdir(parents=True, exist_ok=True)
    return Path(shutil.copy2(given, out / given.name))


def extra_requirements(wheel: Path, extras: set[str]) -> list[str]:
    """The requirements (PEP 508, without their marker) the wheel's ``extras`` add, sorted, from
    its METADATA; an extra that only names other extras of the project contributes theirs."""
    with zipfile.ZipFile(wheel) as zf:
        (name,) = [n for n in zf.namelist() if n.endswith(".dist-info/METADATA")]
        metadata = Parser().parsestr(zf.read(name).decode())
    by_extra: dict[str, list[str]] = {}
    for line in metadata.get_all("Requires-Dist") or []:
        requirement, _, marker = line.partition(";")
        if "extra ==" not in marker:
            continue
        extra = marker.split("extra ==", 1)[1].strip().strip("\"'")
        by_extra.setdefault(extra, []).append(requirement.strip())
    found: set[str] = set()
    pending, seen = list(extras), set()
    while pending:
        extra = pending.pop()
        if extra in seen:
            continue
        seen.add(extra)
        for req in by_extra.get(extra, []):
            if req.startswith("cdc-lakehouse[") or req.startswith("cdc_lakehouse["):
                pending.extend(e.strip() for e in req.split("[", 1)[1].rstrip("]").split(","))
            else:
                found.add(req)
    return sorted(found)
