"""``cdc-lakehouse verify``: proves silver tables equal their source tables while the pipeline
runs (consistent source reads at a known position, key-range checksums, narrowing to keys).
See `pipelines.verify.run` and docs/verify.md."""
