"""The engine factory: Sail in-process, remote Spark Connect, classic Spark configuration."""

from __future__ import annotations

import subprocess
import sys

import pytest
from pydantic import ValidationError

from pipelines.engine import DELTA_SPARK_PACKAGE, EngineSpec, classic_conf, create_session, engine_session, stop_session


def test_engine_spec_validation():
    assert EngineSpec().kind == "sail"
    with pytest.raises(ValidationError, match="needs url"):
        EngineSpec(kind="connect")
    with pytest.raises(ValidationError, match="only used with kind 'connect'"):
        EngineSpec(kind="sail", url="sc://x:1")
    with pytest.raises(ValidationError):
        EngineSpec(kind="flink")  # type: ignore[arg-type]
    with pytest.raises(ValidationError):
        EngineSpec(knd="sail")  # type: ignore[call-arg]


def test_classic_conf_adds_delta_and_keeps_user_settings():
    with_pip = classic_conf(EngineSpec(kind="spark", conf={"spark.sql.shuffle.partitions": "3"}), delta_pip=True)
    assert with_pip["spark.sql.extensions"] == "io.delta.sql.DeltaSparkSessionExtension"
    assert with_pip["spark.sql.catalog.spark_catalog"] == "org.apache.spark.sql.delta.catalog.DeltaCatalog"
    assert with_pip["spark.sql.shuffle.partitions"] == "3" and "spark.jars.packages" not in with_pip
    assert classic_conf(EngineSpec(kind="spark"), delta_pip=False)["spark.jars.packages"] == DELTA_SPARK_PACKAGE


@pytest.mark.spark
def test_sail_session_runs_delta_and_stops_with_its_server(tmp_path):
    spark = create_session(EngineSpec(conf={"spark.sql.shuffle.partitions": "2"}))
    try:
        path = str(tmp_path / "t")
        spark.range(3).write.format("delta").save(path)
        assert spark.read.format("delta").load(path).count() == 3
        assert spark.conf.get("spark.sql.session.timeZone") == "UTC"
    finally:
        stop_session(spark)
    with pytest.raises(Exception):  # noqa: B017 - the server is gone; the client error class varies
        spark.range(1).collect()


@pytest.mark.spark
def test_connect_kind_uses_a_remote_server_and_leaves_it_running():
    from pysail.spark import SparkConnectServer

    server = SparkConnectServer("127.0.0.1", 0)
    server.start(background=True)
    host, port = server.listening_address
    try:
        with engine_session(EngineSpec(kind="connect", url=f"sc://{host}:{port}")) as spark:
            assert spark.range(5).count() == 5
        with engine_session(EngineSpec(kind="connect", url=f"sc://{host}:{port}")) as again:
            assert again.range(2).count() == 2  # the server outlived the first session
    finally:
        server.stop()


def test_stop_session_ignores_sessions_it_did_not_create():
    class Foreign:
        stopped = False

        def stop(self) -> None:
            self.stopped = True

    foreign = Foreign()
    stop_session(foreign)  # type: ignore[arg-type]
    assert foreign.stopped is False


@pytest.mark.spark
def test_python_code_runs_in_this_interpreter_on_each_engine(spark):
    """Python UDFs run in the test's own interpreter (its virtualenv), not the first python3 on PATH."""
    import sys

    from pyspark.sql import functions as sf
    from pyspark.sql.types import StringType

    where = sf.udf(lambda _x: sys.executable, StringType())
    got = {r[0] for r in spark.range(2).select(where("id")).collect()}
    assert got == {sys.executable}


def test_a_classic_session_that_cannot_start_is_a_runtime_error_and_an_unknown_option_a_config_error(tmp_path):
    """No Java where ``JAVA_HOME`` points (pyspark's launcher fails before any JVM starts): the engine
    failed, not the file, so exit 1 with one ``error:`` line; a misspelt engine option stays exit 2."""
    from tests.support.silver_processes import child_env, pipeline_with_silver

    no_java = tmp_path / "no-java"
    no_java.mkdir()
    config = tmp_path / "pipeline.yaml"
    text = pipeline_with_silver(str(tmp_path / "lake"), "host=x port=5432 dbname=db user=u", slot="s")
    config.write_text(text)
    argv = [sys.executable, "-m", "pipelines.cli", "silver", "-c", str(config), "--once"]
    ran = subprocess.run(argv, env={**child_env(), "JAVA_HOME": str(no_java)}, capture_output=True, text=True,
                         timeout=120)
    errors = [line for line in ran.stderr.splitlines() if line.startswith("error:")]
    assert ran.returncode == 1, ran.stderr
    assert errors == ["error: cannot start a classic Spark session: [JAVA_GATEWAY_EXITED] Java gateway process "
                      "exited before sending its port number."], ran.stderr
    assert "Traceback" not in ran.stderr and "invalid configuration" not in ran.stderr

    config.write_text(text.replace("engine: {kind: spark,", "engine: {kind: spark, sever_port: 1,"))
    ran = subprocess.run(argv, env=child_env(), capture_output=True, text=True, timeout=120)
    assert ran.returncode == 2 and "sever_port" in ran.stderr and "Traceback" not in ran.stderr, ran.stderr
