"""``cdc-lakehouse bundle spark-submit`` without running it: the folder's layout, each script's
spark-submit command line (the Delta artifact checked against maven/pom.xml, an independent
pin), and bad input (exit 2, a message naming what is wrong, nothing written)."""

from __future__ import annotations

import os
import re
import shlex
import zipfile
from pathlib import Path

import pytest

from pipelines.cli import main
from tests.support.silver_processes import ROOT
from tests.support.spark_submit import project_wheel

PIPELINE = """pipeline: shop
lakehouse: {root: /data/lake}
sources:
  - name: pg
    connector: postgres
    connection: {host: db.example.com, database: shop, user: cdc, password: "${PG_PASSWORD}"}
    options: {skipped.operations: none}
silver:
  - {table: customers, source: pg.public.customers}
"""


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return project_wheel(tmp_path_factory.mktemp("wheel"))


@pytest.fixture
def config(tmp_path: Path) -> Path:
    path = tmp_path / "pipeline.yaml"
    path.write_text(PIPELINE)
    return path


def pom_delta_package() -> str:
    pom = (ROOT / "maven" / "pom.xml").read_text()
    prop = {k: re.search(f"<{k}>([^<]+)</{k}>", pom).group(1)  # type: ignore[union-attr]
            for k in ("delta.version", "spark.binary", "scala.binary")}
    return f"io.delta:delta-spark_{prop['spark.binary']}_{prop['scala.binary']}:{prop['delta.version']}"


def exec_line(script: Path) -> list[str]:
    (line,) = [ln for ln in script.read_text().splitlines() if ln.startswith("exec ")]
    return shlex.split(line)


def test_layout_and_command_lines(wheel, config, tmp_path, monkeypatch):
    monkeypatch.delenv("PG_PASSWORD", raising=False)  # no secret is needed to build a bundle
    out = tmp_path / "bundle"
    assert main(["-q", "bundle", "spark-submit", "-c", str(config), "-o", str(out), "--wheel", str(wheel)]) == 0
    files = {p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file()}
    assert files == {"README.md", "pipeline.yaml", wheel.name, "entrypoints/silver_batch.py",
                     "entrypoints/silver_stream.py", "bin/capture.sh", "bin/maintain.sh", "bin/silver-batch.sh",
                     "bin/silver-stream.sh"}
    assert (out / "pipeline.yaml").read_text() == PIPELINE
    assert all(os.access(out / "bin" / name, os.X_OK) for name in ("capture.sh", "maintain.sh", "silver-batch.sh",
                                                                        "silver-stream.sh"))
    with zipfile.ZipFile(out / wheel.name) as zf:
        assert "jobs/silver_job.py" in zf.namelist()

    for job, entry, mode in (("silver-batch", "entrypoints/silver_batch.py", "--once"),
                             ("silver-stream", "entrypoints/silver_stream.py", "--stream")):
        argv = exec_line(out / "bin" / f"{job}.sh")
        assert argv[0] == "exec" and argv[1].endswith("spark-submit")
        app = argv.index(entry)
        options, job_args = argv[2:app], argv[app + 1:]
        pairs = dict(zip(options[::2], options[1::2], strict=False))
        assert pairs["--packages"] == pom_delta_package()
        confs = {options[i + 1] for i, o in enumerate(options) if o == "--conf"}
        assert confs == {"spark.sql.extensions=io.delta.sql.DeltaSparkSessionExtension",
                         "spark.sql.catalog.spark_catalog=org.apache.spark.sql.delta.catalog.DeltaCatalog"}
        assert pairs["--py-files"] == wheel.name and pairs["--files"] == "pipeline.yaml"
        assert options[-1] == "$@"  # the caller's spark-submit options come last, before the entrypoint
        assert job_args[:4] == ["-c", "pipeline.yaml", "--engine", "spark"]
        assert f"main([{mode!r}, *sys.argv[1:]])" in (out / entry).read_text()
    assert exec_line(out / "bin" / "silver-stream.sh")[-2:] == ["--trigger", "processing-time"]
    capture = exec_line(out / "bin" / "capture.sh")
    assert capture[1:] == ["${PYTHON:-python3}", "-m", "pipelines.cli", "capture", "-c", "pipeline.yaml", "$@"]
    maintain = exec_line(out / "bin" / "maintain.sh")
    assert maintain[1:] == ["${PYTHON:-python3}", "-m", "pipelines.cli", "maintain", "-c", "pipeline.yaml", "$@"]
    readme = (out / "README.md").read_text()
    assert "not a Spark job" in readme and "bin/maintain.sh --dry-run" in readme


def test_builds_its_wheel_from_the_sources(config, tmp_path):
    out = tmp_path / "bundle"
    assert main(["-q", "bundle", "spark-submit", "-c", str(config), "-o", str(out), "--trigger", "available-now"]) == 0
    (built,) = out.glob("cdc_lakehouse-*.whl")
    with zipfile.ZipFile(built) as zf:
        assert {"pipelines/bundles/spark_submit.py", "jobs/silver_job.py"} <= set(zf.namelist())
    assert exec_line(out / "bin" / "silver-stream.sh")[-2:] == ["--trigger", "available-now"]


@pytest.mark.parametrize("case", ["not empty", "invalid pipeline", "not a wheel", "no constraints file"])
def test_bad_input_exits_2_and_writes_nothing(wheel, config, tmp_path, capsys, case):
    out = tmp_path / "bundle"
    args = ["bundle", "spark-submit", "-c", str(config), "-o", str(out), "--wheel", str(wheel)]
    if case == "not empty":
        out.mkdir()
        (out / "keep.txt").write_text("mine")
        expected = f"{out} already exists and is not an empty folder"
    elif case == "invalid pipeline":
        config.write_text(PIPELINE.replace("lakehouse: {root: /data/lake}", "lakehouse: {rot: /data/lake}"))
        expected = f"{config}:2"
    elif case == "not a wheel":
        args[-1] = str(config)
        expected = "is not a cdc-lakehouse wheel"
    else:
        args += ["--python-env", "archive", "--constraints", str(tmp_path / "pins.txt")]
        expected = f"--constraints: {tmp_path / 'pins.txt'} is not a file"
    before = sorted(os.listdir(tmp_path))
    assert main(args) == 2
    err = capsys.readouterr().err
    assert expected in err and "Traceback" not in err, err
    assert sorted(os.listdir(tmp_path)) == before
    if case == "not empty":
        assert os.listdir(out) == ["keep.txt"]
