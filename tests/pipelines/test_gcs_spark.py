"""Classic Spark's GCS connector settings from delta-rs's ``GOOGLE_*`` storage options."""

from __future__ import annotations

from pipelines.gcs_spark import hadoop_gcs_conf, is_gcs


def test_hadoop_gcs_conf_gives_the_connector_the_key_file_and_the_endpoint():
    conf = hadoop_gcs_conf({"google_service_account": "/secrets/sa.json", "GOOGLE_BASE_URL": "http://gcs.local:4443/"})
    assert conf["spark.hadoop.fs.gs.impl"] == "com.google.cloud.hadoop.fs.gcs.GoogleHadoopFileSystem"
    assert conf["spark.hadoop.fs.gs.auth.type"] == "SERVICE_ACCOUNT_JSON_KEYFILE"
    assert conf["spark.hadoop.fs.gs.auth.service.account.json.keyfile"] == "/secrets/sa.json"
    assert conf["spark.hadoop.fs.gs.storage.root.url"] == "http://gcs.local:4443"
    assert conf["spark.hadoop.fs.gs.block.size"] == "67108864"  # Hadoop 3.5's "64m" breaks the 3.0 connector


def test_without_a_key_file_the_connector_keeps_its_default_credentials():
    conf = hadoop_gcs_conf({"GOOGLE_SERVICE_ACCOUNT_KEY": "{...}"})  # the connector reads keys from files only
    assert not any("auth" in k or "root.url" in k for k in conf)
    assert is_gcs("gs://lake/shop") and not is_gcs("s3://lake/shop")
