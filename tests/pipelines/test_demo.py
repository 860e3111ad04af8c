"""The demo, as a new user runs it: from a checkout in a folder only its owner may enter."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from pipelines.local_postgres import server_can_enter

pytestmark = [pytest.mark.integration, pytest.mark.postgres, pytest.mark.spark]


def test_server_can_enter_follows_the_folder_permissions():
    assert os.geteuid() == 0, "this machine's tests run as root (the server runs as 'postgres')"
    with tempfile.TemporaryDirectory() as private:  # 0700, like /root or mktemp -d
        assert not server_can_enter(Path(private))
        assert server_can_enter(Path(tempfile.gettempdir()))


def test_demo_captures_and_builds_silver_from_a_private_folder():
    with tempfile.TemporaryDirectory() as private:
        folder = Path(private) / "demo"
        out = subprocess.run([sys.executable, "-m", "pipelines.cli", "demo", "--dir", str(folder)],
                             capture_output=True, text=True, timeout=300, check=False)
        assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
        assert "cannot enter" not in out.stderr
        assert (folder / "lakehouse" / "bronze" / "demo_pg.public.orders" / "_delta_log").is_dir()
        assert (folder / "lakehouse" / "silver").is_dir()
        assert not (folder / "pg").exists()  # the server's data went to a folder it can enter, then away
