"""Classic Spark's ABFS settings from the storage options delta-rs uses, and the root form Hadoop needs."""

from __future__ import annotations

from pipelines.azure_spark import classic_root_problem, hadoop_abfs_conf, hadoop_account, is_azure


def test_azure_roots_are_recognised_and_hadoop_needs_the_account_in_the_uri():
    assert all(is_azure(r) for r in ("az://c/p", "abfss://c@a.dfs.core.windows.net/p", "AZURE://c/p", "adl://c/p"))
    assert not is_azure("s3://b/p") and not is_azure("/tmp/lake")
    assert hadoop_account("abfss://lake@shopdata.dfs.core.windows.net/shop") == "shopdata"
    assert hadoop_account("az://lake/shop") is None
    problem = classic_root_problem("az://lake/shop")
    assert problem is not None and problem.path == "lakehouse.root"
    assert "abfss://lake@<account>.dfs.core.windows.net/shop" in problem.message
    assert classic_root_problem("abfss://lake@shopdata.dfs.core.windows.net/shop") is None
    assert classic_root_problem("s3://b/p") is None


def test_a_real_account_gets_only_its_key():
    conf = hadoop_abfs_conf("abfss://lake@shopdata.dfs.core.windows.net/shop",
                            {"AZURE_STORAGE_ACCOUNT_KEY": "a2V5", "timeout": "30s"})
    assert conf == {"spark.hadoop.fs.azure.account.key.shopdata.dfs.core.windows.net": "a2V5"}


def test_an_endpoint_is_reached_path_style_over_the_blob_service():
    conf = hadoop_abfs_conf("az://lake/shop", {"azure_storage_account_name": "acct", "account_key": "a2V5",
                                               "AZURE_STORAGE_ENDPOINT": "http://127.0.0.1:10001/acct"})
    assert conf == {
        "spark.hadoop.fs.azure.account.key.acct.dfs.core.windows.net": "a2V5",
        "spark.hadoop.fs.azure.abfs.endpoint": "127.0.0.1:10001",
        "spark.hadoop.fs.azure.always.use.https": "false",
        "spark.hadoop.fs.azure.account.hns.enabled": "false",
        "spark.hadoop.fs.azure.fns.account.service.type": "BLOB",
        "spark.hadoop.fs.azure.networking.library": "JDK_HTTP_URL_CONNECTION",
        "spark.hadoop.fs.azure.ssl.channel.mode": "Default_JSSE",
        "spark.hadoop.fs.azure.metrics.collection.enabled": "false",
    }
    emulator = hadoop_abfs_conf("az://lake/shop", {"AZURE_STORAGE_USE_EMULATOR": "true"})
    assert emulator["spark.hadoop.fs.azure.abfs.endpoint"] == "127.0.0.1:10000"


def test_silver_on_classic_spark_refuses_an_azure_root_without_the_account(tmp_path, capsys):
    from pipelines.cli import main
    from tests.support.pipeline_yaml import pipeline_text

    text = pipeline_text("az://lake/shop", "host=127.0.0.1 port=1 dbname=shop user=postgres")
    text += "engine: {kind: spark}\nsilver:\n  - {table: items, source: pg.public.items}\n"
    config = tmp_path / "pipeline.yaml"
    config.write_text(text)
    assert main(["silver", "-c", str(config), "--once"]) == 2
    err = capsys.readouterr().err
    assert "lakehouse.root" in err and "abfss://lake@<account>.dfs.core.windows.net/shop" in err, err
    assert "Traceback" not in err
