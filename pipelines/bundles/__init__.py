"""Deployment bundles written by ``cdc-lakehouse bundle``: everything needed to run a pipeline
where Spark runs, built from the pipeline file without connecting to anything.

* `spark_submit`: a folder with the project wheel, the pipeline file, thin entrypoints and a
  ready ``spark-submit`` command line per Spark job (plus the capture command, plain Python);
* `databricks`: a Databricks Asset Bundle (``databricks.yml``, job resources, the wheel);
* `wheel`: the project wheel (built from the source tree, or one given);
* `folder`: writing a bundle folder all at once (nothing half-written on failure).

No module here imports Spark, a database driver, or reads a secret.
"""
