"""Write a bundle folder all at once: files go to a hidden sibling folder that is renamed into
place at the end, so a failure leaves nothing half-written at the destination."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

from cdc_sources.spi import ConfigError, ConfigProblem

PIPELINE_FILE = "pipeline.yaml"
"""The pipeline file's name in every bundle (a copy of the user's file, as is)."""


def check_destination(out: Path) -> None:
    """The destination must not exist, or be an empty folder.

    Raises:
        ConfigError: it is a file or a folder with files in it.
    """
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise ConfigError([ConfigProblem("--output", f"{out} already exists and is not an empty folder; "
                                                     "choose a new folder or remove it")])


def write_folder(out: Path, fill: Callable[[Path], None]) -> None:
    """Call ``fill`` on a fresh staging folder, then move it to ``out`` (see `check_destination`)."""
    check_destination(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    try:
        fill(staging)
        if out.exists():
            out.rmdir()
        staging.rename(out)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
