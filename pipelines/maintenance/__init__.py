"""``cdc-lakehouse maintain``: compaction, VACUUM and bronze retention (docs/operations.md).

`plan` decides per table what to do and why (pure); `needs` reads what the silver tables and
streams still need from bronze; `run` carries the plan out with delta-rs. This package's
``__init__`` imports nothing, so the config can import `options` without delta-rs.
"""
