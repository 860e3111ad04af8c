"""Benchmarks of cdc-lakehouse against its peers (dev-only; not part of the installed package)."""
