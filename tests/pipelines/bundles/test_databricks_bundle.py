"""``cdc-lakehouse bundle databricks``: every generated job loads into the ``databricks-bundles``
typed classes (``Job.from_dict`` rejects unknown fields; ``as_dict`` gives the same document
back) and, with the target's variables substituted, into ``databricks-sdk``'s Jobs API model
(``JobSettings``) unchanged; every ``${var.*}`` used is declared and every declared one used;
the targets, resource keys, wheel entry points, libraries, secrets and checkpoints are checked;
serverless jobs (``--compute serverless``) have environments instead of clusters, except a job
that needs secrets; the silver job reads the shipped pipeline file, ``bronze_catalog`` included;
a sample pipeline's output (both computes) is compared with the checked-in snapshots.

Regenerate the snapshot after an intended change (then review the diff)::

    UPDATE_SNAPSHOTS=1 .venv/bin/pytest tests/pipelines/bundles/test_databricks_bundle.py -k snapshot
"""

from __future__ import annotations

import configparser
import os
import re
import shutil
import zipfile
from pathlib import Path
from typing import Any

import pytest
import yaml
from databricks.bundles.jobs import Job
from databricks.sdk.service.jobs import JobSettings

from jobs.silver_job import parse_args
from pipelines.bronze_names import bronze_table_names
from pipelines.cli import _parser, main
from pipelines.validation import load_validated
from tests.support.spark_submit import project_wheel

SNAPSHOTS = Path(__file__).parent / "snapshots" / "databricks"
SAMPLE = SNAPSHOTS / "pipeline.yaml"
SECRET = "s3cr3t-never-in-a-bundle"
_REF = re.compile(r"\$\{var\.([A-Za-z0-9_]+)\}")


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return project_wheel(tmp_path_factory.mktemp("wheel"))


@pytest.fixture(autouse=True)
def _password(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PG_PASSWORD", SECRET)


def build(wheel: Path, out: Path, *options: str, config: Path = SAMPLE) -> tuple[dict[str, Any], dict[str, Any]]:
    """Run the command; returns databricks.yml and the jobs (by resource key)."""
    assert main(["-q", "bundle", "databricks", "-c", str(config), "-o", str(out), "--wheel", str(wheel),
                 *options]) == 0
    bundle = yaml.safe_load((out / "databricks.yml").read_text())
    jobs: dict[str, Any] = {}
    for path in out.glob(bundle["include"][0]):
        jobs |= yaml.safe_load(path.read_text())["resources"]["jobs"]
    return bundle, jobs


def substitute(value: Any, variables: dict[str, Any]) -> Any:
    """``value`` with every ``${var.x}`` replaced as Databricks does for a target."""
    if isinstance(value, dict):
        return {k: substitute(v, variables) for k, v in value.items()}
    if isinstance(value, list):
        return [substitute(v, variables) for v in value]
    if isinstance(value, str):
        whole = _REF.fullmatch(value)
        if whole:
            return variables[whole.group(1)]
        return _REF.sub(lambda m: str(variables[m.group(1)]), value)
    return value


def target_variables(bundle: dict[str, Any], target: str) -> dict[str, Any]:
    values = {name: spec["default"] for name, spec in bundle["variables"].items()}
    values |= bundle["targets"][target].get("variables", {})
    return {k: str(v).replace("${workspace.file_path}", "/Workspace/Shared/.bundle/shop/files") if isinstance(v, str)
            else v for k, v in values.items()}


def references(value: Any) -> set[str]:
    return set(_REF.findall(yaml.safe_dump(value)))


def entry_points(wheel: Path) -> dict[str, str]:
    with zipfile.ZipFile(wheel) as zf:
        (name,) = [n for n in zf.namelist() if n.endswith(".dist-info/entry_points.txt")]
        parser = configparser.ConfigParser()
        parser.read_string(zf.read(name).decode())
    return dict(parser["console_scripts"])


@pytest.mark.parametrize("options", [(), ("--checkpoint-volume", "main.cdc.state", "--workers", "4"),
                                     ("--trigger", "processing-time"), ("--compute", "serverless")],
                         ids=["default", "volume", "continuous", "serverless"])
def test_every_job_loads_into_the_typed_bundle_and_sdk_models(wheel, tmp_path, options):
    bundle, jobs = build(wheel, tmp_path / "out", *options)
    assert set(jobs) == {"shop_capture", "shop_silver", "shop_maintain"}
    assert set(bundle["targets"]) == {"dev", "prod"} and bundle["targets"]["dev"]["default"] is True
    assert bundle["targets"]["dev"]["mode"] == "development" and bundle["targets"]["prod"]["mode"] == "production"
    declared = set(bundle["variables"])
    used = references(jobs) | references(bundle["targets"])
    assert used == declared, (used, declared)
    for key, job in jobs.items():
        assert Job.from_dict(job).as_dict() == job, key
        for target in ("dev", "prod"):
            resolved = substitute(job, target_variables(bundle, target))
            assert not references(resolved)
            assert JobSettings.from_dict(resolved).as_dict() == resolved, (key, target)


def test_tasks_run_the_wheels_entry_points_with_valid_arguments(wheel, tmp_path):
    bundle, jobs = build(wheel, tmp_path / "out")
    variables = target_variables(bundle, "prod")
    scripts = entry_points(wheel)
    (capture,) = jobs["shop_capture"]["tasks"]
    (silver,) = jobs["shop_silver"]["tasks"]
    (maintain,) = jobs["shop_maintain"]["tasks"]
    for task, target in ((capture, "pipelines.cli:task"), (silver, "jobs.silver_job:main"),
                         (maintain, "pipelines.cli:task")):
        wheel_task = task["python_wheel_task"]
        assert wheel_task["package_name"] == "cdc_lakehouse"
        assert scripts[wheel_task["entry_point"]] == target
    args = substitute(capture["python_wheel_task"]["parameters"], variables)
    parsed = _parser().parse_args(args)
    assert (parsed.command, parsed.config) == ("capture", "/Workspace/Shared/.bundle/shop/files/pipeline.yaml")
    parsed = parse_args(substitute(silver["python_wheel_task"]["parameters"], variables))
    assert parsed.stream and parsed.engine == "spark" and parsed.trigger == "available-now"
    assert parsed.checkpoints == "s3://shop-lake/cdc/silver/_checkpoints"
    assert capture["max_retries"] == -1 and jobs["shop_capture"]["max_concurrent_runs"] == 1
    assert jobs["shop_silver"]["schedule"]["quartz_cron_expression"] == "${var.silver_schedule}"
    parsed = _parser().parse_args(substitute(maintain["python_wheel_task"]["parameters"], variables))
    assert (parsed.command, parsed.config) == ("maintain", "/Workspace/Shared/.bundle/shop/files/pipeline.yaml")
    assert jobs["shop_maintain"]["schedule"]["quartz_cron_expression"] == "0 0 * * * ?"
    # libraries: the shipped wheel (path relative to the resource file) and the postgres extra's drivers
    libs = capture["libraries"]
    resources = tmp_path / "out" / "resources"
    assert (resources / libs[0]["whl"]).resolve() == (tmp_path / "out" / "dist" / wheel.name).resolve()
    assert {lib["pypi"]["package"].split(">")[0].split("[")[0] for lib in libs[1:]} == {"psycopg", "psycopg2-binary"}
    assert silver["libraries"] == libs[:1]


def test_secrets_stay_references(wheel, tmp_path):
    build(wheel, tmp_path / "out")
    for path in (tmp_path / "out").rglob("*"):
        if path.is_file() and path.suffix != ".whl":
            assert SECRET not in path.read_text(), path
    assert (tmp_path / "out" / "pipeline.yaml").read_text() == SAMPLE.read_text()
    # only values' ${VAR} without a default become secret environment variables (not comments)
    config = tmp_path / "pipeline.yaml"
    config.write_text("# set ${IN_A_COMMENT}\n" + SAMPLE.read_text().replace("user: cdc", 'user: "${PG_USER:-cdc}"'))
    _, jobs = build(wheel, tmp_path / "again", "--secret-scope", "shop", config=config)
    cluster = jobs["shop_capture"]["job_clusters"][0]["new_cluster"]
    assert cluster["spark_env_vars"] == {"PG_PASSWORD": "{{secrets/${var.secret_scope}/PG_PASSWORD}}"}
    assert "spark_env_vars" not in jobs["shop_silver"]["job_clusters"][0]["new_cluster"]
    assert "spark_env_vars" not in jobs["shop_maintain"]["job_clusters"][0]["new_cluster"]  # no database secret


def test_processing_time_is_a_continuous_job_without_task_retries(wheel, tmp_path):
    _, jobs = build(wheel, tmp_path / "out", "--trigger", "processing-time")
    silver = jobs["shop_silver"]
    assert silver["continuous"] == {"pause_status": "${var.pause_status}"} and "schedule" not in silver
    assert "max_retries" not in silver["tasks"][0]
    assert "processing-time" in silver["tasks"][0]["python_wheel_task"]["parameters"]


def test_checkpoints_in_a_unity_catalog_volume(wheel, tmp_path):
    bundle, _ = build(wheel, tmp_path / "out", "--checkpoint-volume", "main.cdc.state")
    assert bundle["variables"]["checkpoints"]["default"] == "/Volumes/main/cdc/state/shop/checkpoints"


def test_serverless_jobs_use_environments_and_the_platforms_session(wheel, tmp_path):
    bundle, jobs = build(wheel, tmp_path / "out", "--compute", "serverless", "--environment-version", "3")
    variables = target_variables(bundle, "prod")
    silver, maintain, capture = jobs["shop_silver"], jobs["shop_maintain"], jobs["shop_capture"]
    wheel_path = f"../dist/{wheel.name}"
    for job in (silver, maintain):  # no cluster: a serverless environment with the wheel
        assert "job_clusters" not in job
        assert job["environments"] == [{"environment_key": "default",
                                        "spec": {"environment_version": "${var.environment_version}",
                                                 "dependencies": [wheel_path]}}]
        (task,) = job["tasks"]
        assert task["environment_key"] == "default" and "libraries" not in task and "job_cluster_key" not in task
    assert bundle["variables"]["environment_version"]["default"] == "3"
    parsed = parse_args(substitute(silver["tasks"][0]["python_wheel_task"]["parameters"], variables))
    assert parsed.engine == "connect" and parsed.url is None and parsed.once and not parsed.stream
    assert silver["schedule"]["quartz_cron_expression"] == "${var.silver_schedule}"
    # the capture needs PG_PASSWORD, which serverless tasks cannot get from a secret scope: a job cluster
    assert "environments" not in capture
    cluster = capture["job_clusters"][0]["new_cluster"]
    assert cluster["spark_env_vars"] == {"PG_PASSWORD": "{{secrets/${var.secret_scope}/PG_PASSWORD}}"}
    assert "checkpoints" not in bundle["variables"] and "num_workers" not in bundle["variables"]


def test_serverless_without_secrets_has_no_cluster_at_all(wheel, tmp_path):
    config = tmp_path / "pipeline.yaml"
    config.write_text(SAMPLE.read_text().replace(', password: "${PG_PASSWORD}"', ""))
    bundle, jobs = build(wheel, tmp_path / "out", "--compute", "serverless", config=config)
    assert all("job_clusters" not in job and "environments" in job for job in jobs.values())
    (capture_env,) = jobs["shop_capture"]["environments"]
    deps = capture_env["spec"]["dependencies"]
    assert deps[0] == f"../dist/{wheel.name}"
    assert {d.split(">")[0].split("[")[0] for d in deps[1:]} == {"psycopg", "psycopg2-binary"}
    assert not {"spark_version", "node_type_id", "num_workers", "secret_scope"} & set(bundle["variables"])


@pytest.mark.parametrize(("options", "message"), [
    (("--compute", "serverless", "--trigger", "processing-time"), "processing-time (a continuous job) needs"),
    (("--compute", "serverless", "--checkpoint-volume", "main.cdc.state"), "keeps no stream checkpoints"),
    (("--checkpoint-volume", "main.cdc.state/x"), "is not a Unity Catalog volume name"),
    (("--workers", "0"), "needs at least one worker, not 0"),
    (("--checkpoint-volume", "main.cdc"), "is not a Unity Catalog volume name"),
])
def test_options_that_do_not_fit_exit_2_and_write_nothing(wheel, tmp_path, capsys, options, message):
    out = tmp_path / "out"
    assert main(["bundle", "databricks", "-c", str(SAMPLE), "-o", str(out), "--wheel", str(wheel), *options]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err, err
    assert not out.exists() and os.listdir(tmp_path) == []


@pytest.mark.parametrize(("expected", "options"),
                         [("expected", ()), ("expected-serverless", ("--compute", "serverless"))],
                         ids=["job-cluster", "serverless"])
def test_snapshot_of_the_sample_pipeline(wheel, tmp_path, expected, options):
    out = tmp_path / "out"
    build(wheel, out, *options)
    generated = {p.relative_to(out).as_posix(): p.read_text() for p in sorted(out.rglob("*.yml"))}
    generated["dist"] = "\n".join(sorted(p.name for p in (out / "dist").iterdir())) + "\n"
    expected_dir = SNAPSHOTS / expected
    if os.environ.get("UPDATE_SNAPSHOTS"):
        shutil.rmtree(expected_dir, ignore_errors=True)
        for name, text in generated.items():
            (expected_dir / name).parent.mkdir(parents=True, exist_ok=True)
            (expected_dir / name).write_text(text)
    expected_files = {p.relative_to(expected_dir).as_posix(): p.read_text()
                      for p in sorted(expected_dir.rglob("*")) if p.is_file()}
    assert generated == expected_files, "the bundle differs from the snapshot; see this file's docstring to regenerate"


@pytest.mark.parametrize("compute", ["job-cluster", "serverless"])
def test_the_silver_job_gets_the_bronze_catalog_declaration(wheel, tmp_path, compute):
    config = tmp_path / "pipeline.yaml"
    declared = "    bronze_catalog: main.shop_bronze\n    options:\n"
    config.write_text(SAMPLE.read_text().replace("    options:\n", declared))
    bundle, jobs = build(wheel, tmp_path / "out", "--compute", compute, config=config)
    (silver,) = jobs["shop_silver"]["tasks"]
    parsed = parse_args(substitute(silver["python_wheel_task"]["parameters"], target_variables(bundle, "prod")))
    assert parsed.config == "/Workspace/Shared/.bundle/shop/files/pipeline.yaml"  # the bundle's copy of the file
    shipped = load_validated(tmp_path / "out" / "pipeline.yaml", secrets=False, connectors=False).config
    assert {t: n.dotted for t, n in bronze_table_names(shipped).items()} == {
        "pg.public.customers": "main.shop_bronze.pg_public_customers",
        "pg.public.orders": "main.shop_bronze.pg_public_orders"}
