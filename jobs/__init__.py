"""Thin spark-submit / Databricks entrypoints; they call only `pipelines`."""
