"""Bronze: raw Debezium change records in Delta tables, written exactly once.

`bronze.schema` is the table contract other layers may import; `bronze.writer` writes it.
"""
